// Deterministic pseudo-random values from (seed, indices): the hidden properties of the
// modelled silicon (eye positions, self-test times) depend only on the seed.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace jal::emu {

inline std::uint64_t splitmix64(std::uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

inline std::uint64_t seeded(std::uint64_t seed, std::initializer_list<std::uint64_t> keys)
{
    std::uint64_t h = splitmix64(seed);
    for (std::uint64_t k : keys) h = splitmix64(h ^ k);
    return h;
}

// A value in [lo, hi] drawn from (seed, keys).
inline std::uint32_t seeded_range(std::uint64_t seed, std::initializer_list<std::uint64_t> keys,
                                  std::uint32_t lo, std::uint32_t hi)
{
    return lo + static_cast<std::uint32_t>(seeded(seed, keys) % (hi - lo + 1));
}

}  // namespace jal::emu
