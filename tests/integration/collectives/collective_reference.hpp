// The host reference the chips' collectives are checked against, written independently of
// the library: elements as F32, BF16 or F16 bits; the sum of a reduction in F32 in rank
// order, rounded once to the element type (the order docs/multichip.md documents).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <jal/hw/isa.h>

namespace jal::test {

inline uint32_t bytes_of(jal_dtype dt)
{
    return dt == JAL_DT_F32 ? 4 : 2;
}

// Round to nearest even, as IEEE 754 asks of a narrowing conversion (no NaNs here).
inline uint16_t to_bf16(float f)
{
    const uint32_t u = std::bit_cast<uint32_t>(f);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float from_bf16(uint16_t h)
{
    return std::bit_cast<float>(uint32_t{h} << 16);
}

inline uint16_t to_f16(float f)
{
    return std::bit_cast<uint16_t>(static_cast<_Float16>(f));
}

inline float from_f16(uint16_t h)
{
    return static_cast<float>(std::bit_cast<_Float16>(h));
}

// Element i of a buffer of dt as F32, and F32 stored as dt.
inline float load(const std::vector<std::byte>& b, jal_dtype dt, size_t i)
{
    if (dt == JAL_DT_F32) {
        float f;
        std::memcpy(&f, b.data() + 4 * i, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, b.data() + 2 * i, 2);
    return dt == JAL_DT_BF16 ? from_bf16(h) : from_f16(h);
}

inline void store(std::vector<std::byte>& b, jal_dtype dt, size_t i, float f)
{
    if (dt == JAL_DT_F32) {
        std::memcpy(b.data() + 4 * i, &f, 4);
        return;
    }
    const uint16_t h = dt == JAL_DT_BF16 ? to_bf16(f) : to_f16(f);
    std::memcpy(b.data() + 2 * i, &h, 2);
}

// `count` random elements of dt in [-1, 1).
inline std::vector<std::byte> random_elements(jal_dtype dt, size_t count, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<std::byte> b(count * bytes_of(dt));
    for (size_t i = 0; i < count; ++i) store(b, dt, i, u(rng));
    return b;
}

// out[i] = in[0][off0 + i] + in[1][off1 + i] + ... (F32, rank order), stored as dt.
inline std::vector<std::byte> reference_sum(const std::vector<std::vector<std::byte>>& in,
                                            jal_dtype dt, size_t first, size_t count)
{
    std::vector<std::byte> out(count * bytes_of(dt));
    for (size_t i = 0; i < count; ++i) {
        float acc = load(in[0], dt, first + i);
        for (size_t r = 1; r < in.size(); ++r) acc += load(in[r], dt, first + i);
        store(out, dt, i, acc);
    }
    return out;
}

}  // namespace jal::test
