// Internal helpers of the numerics library: bit casts and the dispatch between code paths.
#pragma once

#include <jal/isa/numerics.hpp>

#include <cstdint>
#include <cstring>

namespace jal::numerics {

inline uint32_t to_bits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float from_bits(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// The canonical NaN every tile-math result uses (docs/numerics.md, "NaN").
inline constexpr uint32_t kCanonicalNaN = 0x7fc00000u;

// 256-entry decode table of an MXFP8 element type (E4M3 or E5M2).
const float* fp8_table(jal_dtype dt);

// x86 cvttss2si semantics: truncation to int32; NaN and out-of-range give INT32_MIN.
// ggml's float-to-small-integer conversions compile to this instruction.
inline int32_t cvtt_i32(float f)
{
    if (!(f > -2147483904.0f && f < 2147483648.0f)) return INT32_MIN;
    return int32_t(f);
}

}  // namespace jal::numerics
