// Waits, through a chip's bring-up console, until `count` of its links (those `counted`
// selects) are up (or, through its telemetry, until it counts `count` links up): the firmware trains them at boot and retrains a down one every second,
// so they come up once the far end (another process, or the switch) answers. Shared by the
// fabric integration tests.
//
// Until then the console may answer without a "links" list: while the chip's clock thread
// is still booting or joining its domain (slow under ASan on a loaded machine) it replies
// that the management core did not reach an idle point. That is "not up yet", not an error.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <jal/chip_function.hpp>

#include "../firmware/console_client.hpp"

namespace jal::test {

inline nlohmann::json links_up(
    fwtest::ConsoleClient& console, std::size_t count,
    const std::function<bool(const nlohmann::json&)>& counted = [](const nlohmann::json&) {
        return true;
    })
{
    const auto give_up = std::chrono::steady_clock::now() + kBootTimeout;
    for (;;) {
        const nlohmann::json reply = console.ask("links");
        const nlohmann::json links = reply.value("links", nlohmann::json::array());
        std::size_t up = 0;
        for (const nlohmann::json& l : links) up += l["state"] == "up" && counted(l);
        if (up == count) return links;
        if (std::chrono::steady_clock::now() > give_up) {
            ADD_FAILURE() << "links never came up: " << reply.dump();
            return links;
        }
    }
}

// The same through chip `chip`'s console in `emu`: until `count` of its links are up.
inline nlohmann::json chip_links_up(const EmuProcess& emu, unsigned chip, std::size_t count)
{
    fwtest::ConsoleClient console(emu.socket_dir() + "/jal" + std::to_string(chip) + ".console");
    return links_up(console, count);
}

// Opens chip `chip` of an emulator (its open options `options`) and checks its telemetry
// counts `count` links trained, connected and up, and no link errors (the firmware samples
// the links every 1 ms tick: waits for it to count them).
inline void expect_telemetry_links_up(uint32_t chip, const jal::OpenOptions& options,
                                      uint32_t count)
{
    jal::ChipFunction dev = jal::ChipFunction::open(chip, options);
    ASSERT_EQ(dev.wait_ready(kBootTimeout).state, jal::DeviceState::ready);
    jal_telemetry t = dev.telemetry();
    const auto give_up = std::chrono::steady_clock::now() + kBootTimeout;
    while (t.links_up != count && std::chrono::steady_clock::now() < give_up) t = dev.telemetry();
    EXPECT_EQ(t.links_up, count);
    EXPECT_EQ(t.links_connected, count);
    EXPECT_EQ(t.link_errors, 0u);
}

}  // namespace jal::test
