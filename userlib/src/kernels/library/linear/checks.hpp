// Configuration checks the linear generators share: a configuration the code cannot serve
// is an error naming the kernel before any instruction is emitted.
#pragma once

#include <cstdint>
#include <string>

namespace jal::kernels::linear::detail {

// Throws jal::Error(INVALID_FIELD) "<kernel>: <why>" unless ok.
void require(bool ok, const std::string& kernel, const char* why);

// Rows a streaming kernel moves at once: as many of `rows` as keep its buffers, per_row
// bytes a row, within 2 MiB (at least one). A row over 3 MiB is refused.
uint32_t block_rows(const std::string& kernel, uint64_t per_row, uint32_t rows);

}  // namespace jal::kernels::linear::detail
