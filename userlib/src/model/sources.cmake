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
