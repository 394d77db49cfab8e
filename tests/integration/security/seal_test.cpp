// Memory shared through the socket must not change size under the other side's mapping:
// a truncated memfd turns the next access into SIGBUS (docs/security.md, "Sealed memory").
#include <gtest/gtest.h>

#include <jal/emu/protocol.h>
#include <jal/hw/pci.h>
#include <jal/hw/queue.h>
#include <jal/hw/status.h>

#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixture/emu_process.hpp"
#include "raw_client.hpp"

namespace {

using jal::test::RawClient;

class SealTest : public jal::test::EmuTest {};

int make_memfd(std::size_t size, unsigned seals)
{
    const int fd = memfd_create("seal-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    if (seals) {
        EXPECT_EQ(fcntl(fd, F_ADD_SEALS, seals), 0);
    }
    return fd;
}

long mem_map(RawClient& c, std::uint64_t bus, std::uint64_t size, int fd)
{
    jal_msg_mem_map m{};
    m.hdr = {JAL_MSG_MEM_MAP, 0, sizeof m, 100};
    m.bus_addr = bus;
    m.size = size;
    return c.request(&m, sizeof m, fd);
}

// The emulator's doorbell page cannot be truncated by the client it is handed to; before,
// ftruncate(0) followed by a BAR2 write killed the emulator with SIGBUS.
TEST_F(SealTest, DoorbellMemfdCannotBeTruncated)
{
    RawClient c(emu().socket_path());
    ASSERT_EQ(c.hello(), JAL_STATUS_OK);
    jal_msg_hdr get{JAL_MSG_GET_DOORBELLS, 0, sizeof(jal_msg_hdr), 2};
    ASSERT_TRUE(c.send(&get, sizeof get));
    auto r = c.receive();
    ASSERT_TRUE(r);
    ASSERT_EQ(r->reply.status, JAL_STATUS_OK);
    ASSERT_EQ(r->fds.size(), 2u);
    const int memfd = r->fds[0];
    const int seals = fcntl(memfd, F_GET_SEALS);
    EXPECT_TRUE(seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW) &&
                (seals & F_SEAL_SEAL))
        << "seals " << seals;
    EXPECT_EQ(ftruncate(memfd, 0), -1);
    EXPECT_EQ(errno, EPERM);

    // The MMIO doorbell path stores into that page.
    jal_msg_reg w{};
    w.hdr = {JAL_MSG_REG_WRITE, JAL_MSG_F_ACK, sizeof w, 3};
    w.bar = JAL_BAR_DOORBELL;
    w.offset = JAL_DOORBELL_WRITE_INDEX;
    w.width = 8;
    w.value = 1;
    EXPECT_EQ(c.request(&w, sizeof w), JAL_STATUS_OK);
    EXPECT_TRUE(emu().running()) << emu().output();
    for (int fd : r->fds) close(fd);
}

// Host memory the client could shrink is refused; sealed memory is mapped as before.
TEST_F(SealTest, HostMemoryMustBeSealedAgainstShrinking)
{
    RawClient c(emu().socket_path());
    ASSERT_EQ(c.hello(), JAL_STATUS_OK);
    const std::size_t size = 1 << 16;

    const int unsealed = make_memfd(size, 0);
    EXPECT_EQ(mem_map(c, 0x100000, size, unsealed), JAL_STATUS_PERMISSION);
    // Had it been mapped, this would turn the device's next access into SIGBUS.
    EXPECT_EQ(ftruncate(unsealed, 0), 0);

    const int grow_only = make_memfd(size, F_SEAL_GROW);
    EXPECT_EQ(mem_map(c, 0x200000, size, grow_only), JAL_STATUS_PERMISSION);

    const int sealed = make_memfd(size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    EXPECT_EQ(mem_map(c, 0x300000, size, sealed), JAL_STATUS_OK);
    EXPECT_EQ(ftruncate(sealed, 0), -1);

    EXPECT_TRUE(emu().running()) << emu().output();
    close(unsealed);
    close(grow_only);
    close(sealed);
}

// libjal seals the host memory it shares, so the stack keeps working end to end.
TEST_F(SealTest, LibjalSharesSealedMemory)
{
    jal::ChipFunction dev = open_ready();
    EXPECT_EQ(dev.identify().slices_enabled, 64u);
}

}  // namespace
