# The model runtime: weights on the chip, prefill/decode graphs, sampling, batching (target_sources(jal PRIVATE ...)).
target_sources(jal PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/placement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_split.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gemm_split.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model_runtime.cpp
  ${CMAKE_CURRENT_LIST_DIR}/upload.cpp
  ${CMAKE_CURRENT_LIST_DIR}/runtime_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/deepseek_runtime.cpp
  ${CMAKE_CURRENT_LIST_DIR}/deepseek_weights.cpp
  ${CMAKE_CURRENT_LIST_DIR}/deepseek_graph.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sampler.cpp
  ${CMAKE_CURRENT_LIST_DIR}/shapes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model_c_api.cpp
)
