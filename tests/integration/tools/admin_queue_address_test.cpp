// An admin queue placed where the client has no memory, through a real jal-emu: the
// firmware reports the error on that function's ADMIN_STATUS, and the device keeps
// serving every other client. Uses libjal's raw transport client to program the queue
// registers by hand (jal::ChipFunction would never set up such a queue).
#include <gtest/gtest.h>

#include <jal/chip_function.hpp>
#include <jal/hw/pci.h>
#include <jal/hw/regs.h>
#include <jal/hw/status.h>

#include <thread>

#include "backend/direct/direct_connection.hpp"
#include "fixture/emu_process.hpp"

namespace {

using namespace std::chrono_literals;

class AdminQueueAddressTest : public jal::test::EmuTest {
protected:
    void write(jal::direct::DirectConnection& c, uint32_t reg, uint32_t v)
    {
        c.reg_write(JAL_BAR_REGS, reg, 4, v, /*ack=*/true);
    }

    // Polls ADMIN_STATUS until it has any of `bits` (bounded).
    uint32_t await_status(jal::direct::DirectConnection& c, uint32_t bits)
    {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        uint32_t s = 0;
        while (std::chrono::steady_clock::now() < deadline) {
            s = static_cast<uint32_t>(c.reg_read(JAL_BAR_REGS, JAL_REG_ADMIN_STATUS, 4));
            if (s & bits) return s;
            std::this_thread::yield();  // each read is a round trip to the emulator
        }
        return s;
    }

    void program(jal::direct::DirectConnection& c, uint64_t sq, uint64_t cq)
    {
        write(c, JAL_REG_ADMIN_CTRL, 0);
        write(c, JAL_REG_ADMIN_SQ_BASE_LO, static_cast<uint32_t>(sq));
        write(c, JAL_REG_ADMIN_SQ_BASE_HI, static_cast<uint32_t>(sq >> 32));
        write(c, JAL_REG_ADMIN_CQ_BASE_LO, static_cast<uint32_t>(cq));
        write(c, JAL_REG_ADMIN_CQ_BASE_HI, static_cast<uint32_t>(cq >> 32));
        write(c, JAL_REG_ADMIN_QSIZE, 8u | 8u << 16);
        write(c, JAL_REG_ADMIN_CTRL, JAL_ADMIN_CTRL_ENABLE);
    }
};

TEST_F(AdminQueueAddressTest, QueueOutsideClientMemoryFailsThatFunctionOnly)
{
    jal::ChipFunction good = open_ready();

    jal::direct::DirectConnection raw(jal::direct::SeqpacketSocket::connect(emu().socket_path(0)),
                                      5000ms);
    raw.hello("bad-admin-queue");

    // A misaligned ring is refused when the queue is enabled.
    program(raw, 0x10020, 0x20000);
    EXPECT_EQ(await_status(raw, JAL_ADMIN_STATUS_READY | JAL_ADMIN_STATUS_ERROR),
              JAL_ADMIN_STATUS_ERROR | (uint32_t{JAL_STATUS_INVALID_FIELD} << 16));

    // Aligned rings in memory the client never shared: enabled, but the first doorbell
    // makes the firmware's fetch fault.
    program(raw, 0xdead'0000'0000ull, 0xbeef'0000'0000ull);
    ASSERT_EQ(await_status(raw, JAL_ADMIN_STATUS_READY | JAL_ADMIN_STATUS_ERROR),
              JAL_ADMIN_STATUS_READY);
    write(raw, JAL_REG_ADMIN_SQ_TAIL, 1);
    EXPECT_EQ(await_status(raw, JAL_ADMIN_STATUS_ERROR),
              JAL_ADMIN_STATUS_ERROR | (uint32_t{JAL_STATUS_DMA_FAULT} << 16));

    // Every other client is served as before, and so is a new one.
    EXPECT_EQ(good.identify().slices_enabled, 64u);
    jal::ChipFunction fresh = open_ready();
    EXPECT_EQ(fresh.identify().hbm_channels_ok, 192u);
}

}  // namespace
