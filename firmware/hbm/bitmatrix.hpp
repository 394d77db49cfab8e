// Bit tricks for HBM training on a 32-bit core: 64-bit counts built from 32-bit ones (no
// libgcc calls), and a 32 x 32 bit-matrix transpose, which turns a sweep's per-tap result
// words (bit = lane) into per-lane pass masks (bit = tap) in about a thousand
// instructions, instead of visiting every passing (tap, lane) pair.
#pragma once

#include <bit>
#include <cstdint>

namespace jal::fw::hbm {

constexpr std::uint32_t ctz64(std::uint64_t x)
{
    const auto lo = static_cast<std::uint32_t>(x);
    return lo ? static_cast<std::uint32_t>(std::countr_zero(lo))
              : 32 + static_cast<std::uint32_t>(
                         std::countr_zero(static_cast<std::uint32_t>(x >> 32)));
}
// Trailing ones; 64 for all ones.
constexpr std::uint32_t cto64(std::uint64_t x)
{
    return ctz64(~x);
}

namespace detail {
// One step of the transpose on a pair of rows: the high j bits of each masked group of
// `lo` trade places with the low j bits of `hi`.
[[gnu::always_inline]] constexpr void swap_bits(std::uint32_t& lo, std::uint32_t& hi,
                                                std::uint32_t j, std::uint32_t m)
{
    const std::uint32_t t = ((lo >> j) ^ hi) & m;
    hi ^= t;
    lo ^= t << j;
}
}  // namespace detail

// In place: afterwards bit c of a[r] is what bit r of a[c] was (least significant bit =
// column 0). Hacker's Delight 7-3: five steps (j = 16, 8, 4, 2, 1) each swapping blocks
// between rows k and k + j. Steps 16 and 8 only mix rows {k, k+8, k+16, k+24}, steps 4, 2
// and 1 only rows k..k+7, so each group is done in registers: every row is loaded and
// stored twice rather than five times (stores are what an emulated core pays most for).
constexpr void transpose32(std::uint32_t* a)
{
    using detail::swap_bits;
    for (std::uint32_t k = 0; k < 8; ++k) {
        std::uint32_t r0 = a[k], r1 = a[k + 8], r2 = a[k + 16], r3 = a[k + 24];
        swap_bits(r0, r2, 16, 0x0000ffffu);
        swap_bits(r1, r3, 16, 0x0000ffffu);
        swap_bits(r0, r1, 8, 0x00ff00ffu);
        swap_bits(r2, r3, 8, 0x00ff00ffu);
        a[k] = r0, a[k + 8] = r1, a[k + 16] = r2, a[k + 24] = r3;
    }
    for (std::uint32_t k = 0; k < 32; k += 8) {
        std::uint32_t r0 = a[k], r1 = a[k + 1], r2 = a[k + 2], r3 = a[k + 3];
        std::uint32_t r4 = a[k + 4], r5 = a[k + 5], r6 = a[k + 6], r7 = a[k + 7];
        swap_bits(r0, r4, 4, 0x0f0f0f0fu);
        swap_bits(r1, r5, 4, 0x0f0f0f0fu);
        swap_bits(r2, r6, 4, 0x0f0f0f0fu);
        swap_bits(r3, r7, 4, 0x0f0f0f0fu);
        swap_bits(r0, r2, 2, 0x33333333u);
        swap_bits(r1, r3, 2, 0x33333333u);
        swap_bits(r4, r6, 2, 0x33333333u);
        swap_bits(r5, r7, 2, 0x33333333u);
        swap_bits(r0, r1, 1, 0x55555555u);
        swap_bits(r2, r3, 1, 0x55555555u);
        swap_bits(r4, r5, 1, 0x55555555u);
        swap_bits(r6, r7, 1, 0x55555555u);
        a[k] = r0, a[k + 1] = r1, a[k + 2] = r2, a[k + 3] = r3;
        a[k + 4] = r4, a[k + 5] = r5, a[k + 6] = r6, a[k + 7] = r7;
    }
}

}  // namespace jal::fw::hbm
