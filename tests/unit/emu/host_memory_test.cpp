#include "emu/chip/host_memory.hpp"
#include "jal/hw/status.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

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

// Behind a vIOMMU the QEMU device shares guest memory one IOMMU page at a time, each its
// own region: pages that follow each other on the bus must form one range for a DMA,
// wherever they lie in the file.
TEST(HostMemory, RegionsThatFollowOnTheBusFormOneRange)
{
    Memfd m(4 * 4096);
    HostMemory hm;
    ASSERT_EQ(hm.map(0x200000, 4096, m.fd, 3 * 4096), JAL_STATUS_OK);
    ASSERT_EQ(hm.map(0x201000, 4096, m.fd, 0), JAL_STATUS_OK);
    ASSERT_EQ(hm.map(0x202000, 4096, m.fd, 2 * 4096), JAL_STATUS_OK);
    std::vector<unsigned char> data(8192);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 7 + 1);
    ASSERT_EQ(hm.write(0x200800, data.data(), data.size()), JAL_STATUS_OK);
    EXPECT_EQ(std::memcmp(m.p + 3 * 4096 + 0x800, data.data(), 0x800), 0);
    EXPECT_EQ(std::memcmp(m.p, data.data() + 0x800, 4096), 0);
    EXPECT_EQ(std::memcmp(m.p + 2 * 4096, data.data() + 0x1800, 0x800), 0);
    std::vector<unsigned char> back(data.size());
    ASSERT_EQ(hm.read(0x200800, back.data(), back.size()), JAL_STATUS_OK);
    EXPECT_EQ(back, data);
    EXPECT_NE(HostMemory::Pin(hm).at(0x200000, 3 * 4096), nullptr);

    // A gap on the bus ends the range; so does a region going away.
    ASSERT_EQ(hm.map(0x204000, 4096, m.fd, 4096), JAL_STATUS_OK);
    EXPECT_EQ(hm.read(0x202800, back.data(), 0x1000), JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(HostMemory::Pin(hm).at(0x202000, 3 * 4096), nullptr);
    ASSERT_EQ(hm.unmap(0x201000, 4096), JAL_STATUS_OK);
    EXPECT_EQ(hm.read(0x200800, back.data(), back.size()), JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(hm.read(0x201000, back.data(), 1), JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(hm.read(0x200000, back.data(), 4096), JAL_STATUS_OK) << "its neighbours stay";
    EXPECT_EQ(hm.read(0x202000, back.data(), 4096), JAL_STATUS_OK);
    ASSERT_EQ(hm.map(0x201000, 4096, m.fd, 0), JAL_STATUS_OK) << "and it can come back";
    EXPECT_EQ(hm.read(0x200800, back.data(), back.size()), JAL_STATUS_OK);
    EXPECT_EQ(back, data);
}

TEST(HostMemory, ThousandsOfPageRegions)
{
    constexpr std::size_t kPages = 2048;
    Memfd m(kPages * 4096);
    HostMemory hm;
    const std::uint64_t base = 0xfff00000ull - kPages * 4096;  // where an IOMMU allocates
    for (std::size_t i = 0; i < kPages; ++i)
        ASSERT_EQ(hm.map(base + i * 4096, 4096, m.fd, (kPages - 1 - i) * 4096), JAL_STATUS_OK) << i;
    EXPECT_EQ(hm.region_count(), kPages);
    std::vector<std::uint32_t> words(kPages * 1024);
    for (std::size_t i = 0; i < words.size(); ++i) words[i] = static_cast<std::uint32_t>(i);
    ASSERT_EQ(hm.write(base, words.data(), words.size() * 4), JAL_STATUS_OK);
    for (std::size_t page = 0; page < kPages; page += 511) {
        std::uint32_t w;
        std::memcpy(&w, m.p + (kPages - 1 - page) * 4096 + 8, 4);
        EXPECT_EQ(w, page * 1024 + 2) << "bus page " << page;
    }
    for (std::size_t i = 0; i < kPages; ++i)
        ASSERT_EQ(hm.unmap(base + i * 4096, 4096), JAL_STATUS_OK);
    EXPECT_EQ(hm.region_count(), 0u);
    EXPECT_EQ(hm.read(base, words.data(), 4), JAL_STATUS_DMA_FAULT);
}

TEST(HostMemory, RegionsAboveTheWindowWorkOnTheirOwn)
{
    Memfd m(4 * 4096);
    HostMemory hm;
    const std::uint64_t high = HostMemory::kWindowBytes + 0x10000;
    ASSERT_EQ(hm.map(high, 8192, m.fd, 0), JAL_STATUS_OK);
    ASSERT_EQ(hm.map(HostMemory::kWindowBytes - 4096, 8192, m.fd, 8192), JAL_STATUS_OK)
        << "straddles the window's end";
    const char msg[] = "far away";
    ASSERT_EQ(hm.write(high + 4000, msg, sizeof msg), JAL_STATUS_OK);
    EXPECT_EQ(std::memcmp(m.p + 4000, msg, sizeof msg), 0);
    ASSERT_EQ(hm.write(HostMemory::kWindowBytes - 4, msg, sizeof msg), JAL_STATUS_OK);
    EXPECT_EQ(std::memcmp(m.p + 8192 + 4092, msg, sizeof msg), 0);
    EXPECT_EQ(hm.unmap(high, 8192), JAL_STATUS_OK);
    char b;
    EXPECT_EQ(hm.read(high, &b, 1), JAL_STATUS_DMA_FAULT);
    hm.clear();
    EXPECT_EQ(hm.region_count(), 0u);
    ASSERT_EQ(hm.map(0x1000, 4096, m.fd, 0), JAL_STATUS_OK) << "usable after clear()";
    EXPECT_EQ(hm.write(0x1000, msg, sizeof msg), JAL_STATUS_OK);
}
