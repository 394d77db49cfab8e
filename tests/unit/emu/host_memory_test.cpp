#include "emu/chip/host_memory.hpp"
#include "jal/hw/status.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

using jal::emu::HostMemory;

namespace {
struct Memfd {
    int fd;
    std::byte* p;
    std::size_t size;
    explicit Memfd(std::size_t n)
        : fd(memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING)), size(n)
    {
        EXPECT_EQ(ftruncate(fd, static_cast<off_t>(n)), 0);
        EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
        p = static_cast<std::byte*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    }
    ~Memfd()
    {
        munmap(p, size);
        close(fd);
    }
};
}  // namespace

TEST(HostMemory, CopiesThroughSharedPages)
{
    Memfd m(1 << 16);
    HostMemory hm;
    ASSERT_EQ(hm.map(0x100000, 1 << 16, m.fd, 0), JAL_STATUS_OK);
    const char msg[] = "hello device";
    ASSERT_EQ(hm.write(0x100010, msg, sizeof msg), JAL_STATUS_OK);
    EXPECT_EQ(std::memcmp(m.p + 0x10, msg, sizeof msg), 0);
    char back[sizeof msg] = {};
    ASSERT_EQ(hm.read(0x100010, back, sizeof back), JAL_STATUS_OK);
    EXPECT_STREQ(back, msg);
}

TEST(HostMemory, AddressesOutsideRegionsFault)
{
    Memfd m(8192);
    HostMemory hm;
    ASSERT_EQ(hm.map(0x10000, 8192, m.fd, 0), JAL_STATUS_OK);
    char b[16];
    EXPECT_EQ(hm.read(0xfff0, b, 16), JAL_STATUS_DMA_FAULT);          // starts before
    EXPECT_EQ(hm.read(0x10000 + 8190, b, 16), JAL_STATUS_DMA_FAULT);  // runs past the end
    EXPECT_EQ(hm.read(~0ull - 4, b, 16), JAL_STATUS_DMA_FAULT);       // wraps
    EXPECT_EQ(hm.read(0x10000, b, 0), JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(hm.write(0x900000, b, 16), JAL_STATUS_DMA_FAULT);
}

TEST(HostMemory, RejectsMisalignedOverlappingAndShortRegions)
{
    Memfd m(16384);
    HostMemory hm;
    EXPECT_EQ(hm.map(0x10001, 4096, m.fd, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(hm.map(0x10000, 100, m.fd, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(hm.map(0x10000, 1 << 20, m.fd, 0), JAL_STATUS_INVALID_LENGTH)
        << "memfd is only 16 KiB";
    ASSERT_EQ(hm.map(0x10000, 8192, m.fd, 0), JAL_STATUS_OK);
    EXPECT_EQ(hm.map(0x11000, 4096, m.fd, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(hm.map(0xf000, 8192, m.fd, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(hm.map(0x12000, 4096, m.fd, 8192), JAL_STATUS_OK) << "adjacent is fine";
    EXPECT_EQ(hm.region_count(), 2u);
    EXPECT_EQ(hm.unmap(0x10000, 4096), JAL_STATUS_INVALID_FIELD) << "size must match";
    EXPECT_EQ(hm.unmap(0x10000, 8192), JAL_STATUS_OK);
    char b[4];
    EXPECT_EQ(hm.read(0x10000, b, 4), JAL_STATUS_DMA_FAULT);
}

TEST(HostMemory, RefusesMemoryItsOwnerCouldShrink)
{
    // An unsealed memfd could be truncated under the mapping: the next DMA would SIGBUS.
    const int fd = memfd_create("unsealed", MFD_CLOEXEC);
    ASSERT_EQ(ftruncate(fd, 1 << 16), 0);
    HostMemory hm;
    EXPECT_EQ(hm.map(0x100000, 1 << 16, fd, 0), JAL_STATUS_PERMISSION);
    EXPECT_EQ(hm.region_count(), 0u);
    close(fd);
}
