// tensor_checks.hpp: what the host calls check about TensorRefs before they fill in a
// kernel's arguments, so a wrong shape is an error naming the kernel and the tensor rather
// than a page fault or silently wrong rows on the chip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <jal/kernels/dispatch.hpp>

#include <jal/kernels/library/tensor.hpp>

namespace jal::kernels::transformer_detail {

// Bytes from one row to the next (row_stride, or the packed row size when it is 0).
uint64_t stride_of(const TensorRef& t);

// Throws jal::Error(INVALID_FIELD) unless t has this dtype, `cols` columns (when cols is
// not 0), at least `rows` rows, a non-zero address, and a stride no smaller than a row.
void check_tensor(const TensorRef& t, jal_dtype dtype, uint32_t cols, uint32_t rows,
                  const std::string& kernel, const char* name);

// The argument buffer of a list of argument words (every transformer argument is a u64
// or an address: configuration values are built into the code).
Args args_of(const std::vector<uint64_t>& words);

}  // namespace jal::kernels::transformer_detail
