// Starts a tray: `chips` chips in one jal-emu with the native firmware, returned once every
// chip has its `links` scale-up links (planes) up. Peer memory and the collectives between
// the chips need the links trained; see links_up.hpp for how long that may take.
#pragma once

#include <cstddef>
#include <memory>

#include <fixture/emu_process.hpp>

#include "links_up.hpp"

namespace jal::test {

inline std::unique_ptr<EmuProcess> start_tray(unsigned chips, std::size_t links = 12)
{
    EmuOptions o;
    o.chips = chips;
    o.extra_args = {"--fw", "native"};
    auto emu = std::make_unique<EmuProcess>(o);
    for (unsigned i = 0; i < chips; ++i) chip_links_up(*emu, i, links);
    return emu;
}

}  // namespace jal::test
