// Reproducible test data for the fabric tests' consoles: `bytes` random bytes from `seed`,
// as the hex the console's poke and peek commands take and give.
#pragma once

#include <cstddef>
#include <random>
#include <string>

namespace jal::test {

inline std::string random_hex(std::size_t bytes, unsigned seed)
{
    std::mt19937 rng(seed);
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < 2 * bytes; ++i) s.push_back(digits[rng() % 16]);
    return s;
}

}  // namespace jal::test
