# linear/ kernels (target_sources(jal PRIVATE ...)): GEMV/GEMM, expert GEMM, embedding,
# argmax, all-reduce, activation quantization (userlib/include/jal/kernels/library/linear.hpp).
target_sources(jal PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/args.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/emit.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tiles.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gemm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/quantize.cpp
  ${CMAKE_CURRENT_LIST_DIR}/embedding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/argmax.cpp
  ${CMAKE_CURRENT_LIST_DIR}/all_reduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reduce_sum.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_gemm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_gemm_sort.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_gemm_chunk.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_gemm_pipe.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_gemm_rows.cpp
)
