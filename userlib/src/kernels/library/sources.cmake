# The kernel library: linear/ (GEMM, GEMV, expert GEMM, embedding, argmax, all-reduce) and
# transformer/ (RMSNorm, softmax, RoPE, SwiGLU, attention, MoE routing), each with its own list.
include(${CMAKE_CURRENT_LIST_DIR}/linear/sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/transformer/sources.cmake)
