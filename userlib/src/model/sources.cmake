# GGUF and the tokenizer: JAL_MODEL_SOURCES, linked into libjal (userlib/CMakeLists.txt) and,
# on their own, into the fuzz targets (tests/fuzz). They need fmt and PCRE2.
set(JAL_MODEL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gguf_types.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gguf_parse.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gguf_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gguf_writer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/config_checks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/gpt_oss_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/synthetic_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/synthetic_gpt_oss.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/deepseek_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/deepseek_tensors.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gguf/synthetic_deepseek.cpp
  # The tokenizer (byte-level BPE from the GGUF, tiktoken's o200k pre-tokenizer through
  # PCRE2) and the harmony chat format.
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
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
