// Exponents for MX block scales.
#pragma once

#include <cstdint>

namespace jal::numerics {

// floor(log2(a)) exactly, for finite a > 0 (subnormals included).
int floor_log2(float a);

// floorf(log2f(a)) as ggml's quantize_row_mxfp4_ref computes it, for a > 0 (inf gives inf),
// assuming a correctly rounded log2f: just below a power of two log2f rounds up to the
// next integer, so the floor is one more than the exact one (docs/numerics.md).
float ggml_floor_log2f(float a);

}  // namespace jal::numerics
