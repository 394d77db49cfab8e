// Finding a data eye in one lane's per-tap pass bits (bit t = the pattern passed at tap t).
// Taps just outside a real eye pass pseudo-randomly, so a window only starts at two
// consecutive passes; of several windows the widest wins, the lowest of equals
// (litedram / tt gddr.c style).
#pragma once

#include <cstdint>

#include "firmware/hbm/bitmatrix.hpp"

namespace jal::fw::hbm {

struct Window {
    std::uint8_t start = 0;
    std::uint8_t width = 0;  // 0: no window
    std::uint8_t centre() const
    {
        return static_cast<std::uint8_t>(start + (width ? (width - 1) / 2 : 0));
    }
    // Taps from the centre to the nearer edge of the window.
    std::uint8_t margin() const { return static_cast<std::uint8_t>(width ? (width - 1) / 2 : 0); }
};

inline constexpr std::uint32_t kTaps = 64;

// Runs of passing taps, walked with bit tricks rather than tap by tap (this runs for every
// lane of every sweep; on the management core it is the hot loop of HBM training):
// `pairs` marks taps t with t and t + 1 passing, so `pairs | pairs << 1` keeps exactly the
// taps that belong to a run of two or more; each remaining run is a window. The lowest run
// starts at ctz(x), its length is the trailing ones of x >> start, and x & (x + lowest bit)
// clears it (the carry ripples through the run).
constexpr Window find_window(std::uint64_t pass)
{
    const std::uint64_t pairs = pass & (pass >> 1);
    std::uint64_t x = pass & (pairs | pairs << 1);
    Window best;
    while (x) {
        const std::uint32_t start = ctz64(x);
        const std::uint32_t width = cto64(x >> start);
        if (width > best.width)
            best = Window{static_cast<std::uint8_t>(start), static_cast<std::uint8_t>(width)};
        x &= x + (x & (~x + 1));
    }
    return best;
}

}  // namespace jal::fw::hbm
