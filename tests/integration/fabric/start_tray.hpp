// Starts a tray: `chips` chips in one jal-emu with the native firmware, returned once every
// chip has its `links` scale-up links (planes) up. Peer memory and the collectives between
// the chips need the links trained; see links_up.hpp for how long that may take.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <fixture/emu_process.hpp>

#include "../firmware/console_client.hpp"
#include "links_up.hpp"

namespace jal::test {

inline std::unique_ptr<EmuProcess> start_tray(unsigned chips, std::size_t links = 12)
{
    EmuOptions o;
    o.chips = chips;
    o.extra_args = {"--fw", "native"};
    auto emu = std::make_unique<EmuProcess>(o);
    for (unsigned i = 0; i < chips; ++i) {
        fwtest::ConsoleClient console(emu->socket_dir() + "/jal" + std::to_string(i) + ".console");
        links_up(console, links);
    }
    return emu;
}

}  // namespace jal::test
