// 64-bit slice masks live in LO/HI register pairs (slices 0-31 / 32-63).
#pragma once

#include <bit>
#include <cstdint>

#include "firmware/hal/hal.hpp"

namespace jal::fw::util {

inline std::uint64_t read_mask64(std::uint32_t lo_reg, std::uint32_t hi_reg)
{
    const std::uint32_t lo = hal::read32(lo_reg);
    const std::uint32_t hi = hal::read32(hi_reg);
    return std::uint64_t{hi} << 32 | lo;
}

inline void write_mask64(std::uint32_t lo_reg, std::uint32_t hi_reg, std::uint64_t mask)
{
    hal::write32(lo_reg, static_cast<std::uint32_t>(mask));
    hal::write32(hi_reg, static_cast<std::uint32_t>(mask >> 32));
}

inline std::uint32_t popcount64(std::uint64_t m)
{
    return static_cast<std::uint32_t>(std::popcount(m));
}

}  // namespace jal::fw::util
