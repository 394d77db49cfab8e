# transformer/ kernels (target_sources(jal PRIVATE ...)): RMSNorm, softmax with sinks,
# RoPE/YaRN, SwiGLU (GPT-OSS), elementwise, KV append, attention, MoE routing and combine.
target_sources(jal PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/row_blocks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tensor_checks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rms_norm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/softmax.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rope_tables.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rope_neox.cpp
  ${CMAKE_CURRENT_LIST_DIR}/swiglu_oai.cpp
  ${CMAKE_CURRENT_LIST_DIR}/elementwise.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kv_append.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kv_append_emit.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kv_cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attention_codegen.cpp
  ${CMAKE_CURRENT_LIST_DIR}/moe_routing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/moe_group_routing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/moe_combine.cpp
)
