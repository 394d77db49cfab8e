// SET_IRQ descriptors: only eventfds, and signalling one never blocks the chip
// (docs/security.md, "Interrupts").
#include <gtest/gtest.h>

#include <jal/emu/protocol.h>
#include <jal/hw/admin.h>
#include <jal/hw/pci.h>
#include <jal/hw/regs.h>
#include <jal/hw/status.h>

#include <atomic>
#include <fcntl.h>
#include <functional>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "backend/direct/direct_connection.hpp"
#include "fixture/emu_process.hpp"
#include "raw_client.hpp"

namespace {

using namespace std::chrono_literals;
using jal::test::RawClient;

class IrqTest : public jal::test::EmuTest {};

long set_irq(RawClient& c, std::uint32_t vector, int fd)
{
    jal_msg_set_irq m{};
    m.hdr = {JAL_MSG_SET_IRQ, 0, sizeof m, 50};
    m.vector = vector;
    return c.request(&m, sizeof m, fd);
}

TEST_F(IrqTest, OnlyEventfdsAreAccepted)
{
    RawClient c(emu().socket_path());
    ASSERT_EQ(c.hello(), JAL_STATUS_OK);
    int pipe_fds[2];
    ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
    EXPECT_EQ(set_irq(c, 0, pipe_fds[1]), JAL_STATUS_INVALID_FIELD);
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    EXPECT_EQ(set_irq(c, 1, sv[0]), JAL_STATUS_INVALID_FIELD);
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    EXPECT_EQ(set_irq(c, 2, null), JAL_STATUS_INVALID_FIELD);
    const int memfd = memfd_create("not-an-eventfd", MFD_CLOEXEC);
    EXPECT_EQ(set_irq(c, 3, memfd), JAL_STATUS_INVALID_FIELD);
    const int efd = eventfd(0, EFD_CLOEXEC);
    EXPECT_EQ(set_irq(c, 4, efd), JAL_STATUS_OK);
    EXPECT_EQ(set_irq(c, 4, -1), JAL_STATUS_OK);  // unbind
    for (int fd : {pipe_fds[0], pipe_fds[1], sv[0], sv[1], null, memfd, efd}) close(fd);
}

// --- the attacker: a separate process that binds the admin vector to an eventfd whose
// counter cannot take another 1, then makes the firmware complete two admin commands ---

bool await(const std::function<bool()>& done, std::chrono::seconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(1ms);
    }
    return done();
}

int saturated_eventfd_attack(const std::string& socket_path)
{
    using jal::direct::DirectConnection;
    DirectConnection c(jal::direct::SeqpacketSocket::connect(socket_path), 5000ms);
    c.hello("irq-attacker");
    constexpr std::uint64_t kBus = 0x10000000, kSize = 1 << 16;
    const int memfd = memfd_create("attacker", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (ftruncate(memfd, kSize) != 0 || fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) return 10;
    auto* mem =
        static_cast<std::byte*>(mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0));
    c.mem_map(kBus, kSize, memfd);

    const int efd = eventfd(0, EFD_CLOEXEC);  // blocking
    const std::uint64_t almost_full = 0xfffffffffffffffeull;
    if (write(efd, &almost_full, sizeof almost_full) != 8) return 11;
    c.set_irq(JAL_MSIX_VECTOR_ADMIN, efd);
    fcntl(efd, F_SETFL, 0);  // undo the emulator's O_NONBLOCK on the shared description

    auto w = [&](std::uint32_t reg, std::uint32_t v) {
        c.reg_write(JAL_BAR_REGS, reg, 4, v, true);
    };
    w(JAL_REG_ADMIN_SQ_BASE_LO, static_cast<std::uint32_t>(kBus));
    w(JAL_REG_ADMIN_SQ_BASE_HI, static_cast<std::uint32_t>(kBus >> 32));
    w(JAL_REG_ADMIN_CQ_BASE_LO, static_cast<std::uint32_t>(kBus + 0x1000));
    w(JAL_REG_ADMIN_CQ_BASE_HI, static_cast<std::uint32_t>((kBus + 0x1000) >> 32));
    w(JAL_REG_ADMIN_QSIZE, 8u | 8u << 16);
    w(JAL_REG_ADMIN_CTRL, JAL_ADMIN_CTRL_ENABLE);
    const bool ready = await(
        [&] { return c.reg_read(JAL_BAR_REGS, JAL_REG_ADMIN_STATUS, 4) & JAL_ADMIN_STATUS_READY; },
        20s);
    if (!ready) return 12;

    auto* sq = reinterpret_cast<jal_admin_sqe*>(mem);
    auto* cq = reinterpret_cast<volatile jal_admin_cqe*>(mem + 0x1000);
    for (std::uint16_t i = 0; i < 2; ++i) {
        jal_admin_sqe e{};
        e.opcode = JAL_ADMIN_IDENTIFY;
        e.cid = i;
        e.data_addr = kBus + 0x2000;
        e.data_len = sizeof(jal_identify);
        sq[i] = e;
        w(JAL_REG_ADMIN_SQ_TAIL, i + 1u);
        // The first completion's MSI is the one that used to block the firmware for good,
        // so the second command was never completed.
        if (!await([&] { return (cq[i].flags & JAL_ADMIN_CQE_PHASE) != 0; }, 20s)) return 13 + i;
    }
    return 0;  // exit: the connection, the function and the eventfd go away
}

TEST_F(IrqTest, SaturatedEventfdDoesNotHangTheChip)
{
    {
        jal::ChipFunction booted = open_ready();
    }  // the admin queue needs the firmware
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int rc = 20;
        try {
            rc = saturated_eventfd_attack(emu().socket_path());
        } catch (...) {}
        _exit(rc);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "attacker status " << status << "\n"
        << emu().output();

    // Every other client is still served, and SIGTERM still stops the emulator (TearDown).
    RawClient other(emu().socket_path());
    EXPECT_EQ(other.hello("after-the-attack"), JAL_STATUS_OK);
    jal::ChipFunction dev = open_ready();
    EXPECT_EQ(dev.identify().slices_enabled, 64u);
}

}  // namespace
