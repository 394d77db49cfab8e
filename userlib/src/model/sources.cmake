# GGUF and the model runtime (target_sources(jal PRIVATE ...)).
target_sources(jal PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gguf_types.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gguf_parse.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gguf_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gguf_writer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gpt_oss_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/synthetic_gpt_oss.cpp
)
# The GGUF messages are formatted with fmt.
target_link_libraries(jal PRIVATE fmt::fmt)

# The tokenizer (byte-level BPE from the GGUF, tiktoken's o200k pre-tokenizer through PCRE2)
# and the harmony chat format.
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
target_sources(jal PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/utf8.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/byte_unicode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/pretokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/bpe.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/special_tokens.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/gguf_tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/text_stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/harmony.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/harmony_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer/o200k_vocab.cpp
)
target_link_libraries(jal PRIVATE PkgConfig::PCRE2)
