// tensor.hpp: how the kernel library names a matrix in device memory.
//
// Tensors are row-major 2-D views: `rows` rows of `cols` elements of `dtype`, `row_stride`
// bytes apart (0: packed). Weights use ggml's layout, N rows of K (each output's weights
// contiguous), so GGUF tensors are used where they lie. Where a tensor lives (which
// slice's HBM) is the allocation's placement; kernels document which rows each slice
// reads so callers can place them locally.
#pragma once

#include <cstdint>

#include <jal/hw/isa.h>

namespace jal::kernels {

struct TensorRef {
    uint64_t va = 0;  // device virtual address of row 0
    uint32_t rows = 0;
    uint32_t cols = 0;        // elements (a multiple of 32 for MX and Q8_0)
    uint64_t row_stride = 0;  // bytes between rows; 0 = packed
    jal_dtype dtype = JAL_DT_F32;
};

}  // namespace jal::kernels
