// Finding a data eye in one lane's per-tap pass bits (bit t = the pattern passed at tap t).
// Taps just outside a real eye pass pseudo-randomly, so a window only starts at two
// consecutive passes; of several windows the widest wins (litedram / tt gddr.c style).
#pragma once

#include <cstdint>

namespace jalfw::hbm {

struct Window {
    std::uint8_t start = 0;
    std::uint8_t width = 0;  // 0: no window
    std::uint8_t centre() const { return static_cast<std::uint8_t>(start + (width ? (width - 1) / 2 : 0)); }
    // Taps from the centre to the nearer edge of the window.
    std::uint8_t margin() const { return static_cast<std::uint8_t>(width ? (width - 1) / 2 : 0); }
};

inline constexpr std::uint32_t kTaps = 64;

constexpr Window find_window(std::uint64_t pass)
{
    Window best;
    std::uint32_t t = 0;
    while (t < kTaps) {
        const bool here = (pass >> t) & 1;
        const bool next = t + 1 < kTaps && ((pass >> (t + 1)) & 1);
        if (!(here && next)) {
            ++t;
            continue;
        }
        const std::uint32_t start = t;
        while (t < kTaps && ((pass >> t) & 1)) ++t;
        const std::uint32_t width = t - start;
        if (width > best.width) best = Window{static_cast<std::uint8_t>(start), static_cast<std::uint8_t>(width)};
    }
    return best;
}

}  // namespace jalfw::hbm
