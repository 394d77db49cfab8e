// jal_load_file through a real jal-emu: the bytes land intact, with O_DIRECT where the
// filesystem allows it and without where it does not, progress is reported, and it can
// be cancelled.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using namespace jal::runtime;
namespace fs = std::filesystem;

constexpr uint64_t kPage = JAL_PAGE_SIZE;

class LoadTest : public jal::test::RuntimeTest {
protected:
    fs::path write_file(const fs::path& dir, size_t bytes, uint64_t seed)
    {
        fs::path p =
            dir / ("jal-load-test-" + std::to_string(::getpid()) + "-" + std::to_string(seed));
        data = jal::test::random_bytes(bytes, seed);
        std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(data.data()), bytes);
        files.push_back(p);
        return p;
    }
    void TearDown() override
    {
        for (auto& f : files) fs::remove(f);
        RuntimeTest::TearDown();
    }
    void check_on_device(Queue& q, const Memory& m)
    {
        HostBuffer back(dev(), data.size());
        Signal s(dev(), 1);
        q.copy_to_host(back, 0, m.va(), data.size(), &s);
        ASSERT_TRUE(s.wait_zero(60s).satisfied);
        ASSERT_EQ(s.packet_status(), JAL_STATUS_OK);
        EXPECT_EQ(jal::test::first_difference(back.data(), data.data(), data.size()), -1);
    }

    std::vector<std::byte> data;
    std::vector<fs::path> files;
};

TEST_F(LoadTest, LoadsAFileByteForByteWithProgress)
{
    Context ctx(dev());
    Queue q(ctx);
    const size_t bytes = (37u << 20) + 123;  // not a multiple of the chunk or of a block
    Memory m(ctx, bytes, JAL_PLACE_INTERLEAVED, 0xf);
    fs::path file = write_file(fs::temp_directory_path(), bytes, 11);
    std::vector<uint64_t> reports;
    auto r = q.load_file(file, m.va(), m.size(), [&](uint64_t done, uint64_t total) {
        EXPECT_EQ(total, bytes);
        reports.push_back(done);
        return true;
    });
    EXPECT_EQ(r.bytes, bytes);
    ASSERT_FALSE(reports.empty());
    EXPECT_EQ(reports.back(), bytes);
    for (size_t i = 1; i < reports.size(); i++) EXPECT_GT(reports[i], reports[i - 1]);
    check_on_device(q, m);
}

// tmpfs refuses O_DIRECT on older kernels (and takes it since 6.6): either way the bytes land.
TEST_F(LoadTest, LoadsFromTmpfsAndWithBufferedReads)
{
    if (!fs::exists("/dev/shm")) GTEST_SKIP() << "no tmpfs at /dev/shm";
    Context ctx(dev());
    Queue q(ctx);
    const size_t bytes = (5u << 20) + 7;
    Memory m(ctx, bytes, JAL_PLACE_SLICE, 1);
    fs::path file = write_file("/dev/shm", bytes, 12);
    auto r = q.load_file(file, m.va(), m.size());
    EXPECT_EQ(r.bytes, bytes);
    check_on_device(q, m);
    // And without trying O_DIRECT at all.
    auto again = q.load_file(file, m.va(), m.size(), {}, JAL_LOAD_NO_DIRECT);
    EXPECT_FALSE(again.direct_io);
    check_on_device(q, m);
}

TEST_F(LoadTest, RefusesAFileLargerThanTheDestination)
{
    Context ctx(dev());
    Queue q(ctx);
    Memory m(ctx, kPage, JAL_PLACE_SLICE, 1);
    fs::path file = write_file(fs::temp_directory_path(), kPage + 1, 13);
    try {
        q.load_file(file, m.va(), m.size());
        FAIL() << "loaded more than fits";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_INVALID_LENGTH);
    }
}

TEST_F(LoadTest, TheProgressCallbackCanCancel)
{
    Context ctx(dev());
    Queue q(ctx);
    const size_t bytes = 20u << 20;
    Memory m(ctx, bytes, JAL_PLACE_SLICE, 1);
    fs::path file = write_file(fs::temp_directory_path(), bytes, 14);
    try {
        q.load_file(file, m.va(), m.size(), [](uint64_t, uint64_t) { return false; });
        FAIL() << "not cancelled";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_ABORTED);
    }
    // The queue is fine afterwards.
    Signal s(dev(), 1);
    q.nop(&s);
    EXPECT_TRUE(s.wait_zero(60s).satisfied);
}

TEST_F(LoadTest, AMissingFileIsAnError)
{
    Context ctx(dev());
    Queue q(ctx);
    Memory m(ctx, kPage, JAL_PLACE_SLICE, 1);
    EXPECT_THROW(q.load_file("/nonexistent/jal-file", m.va(), m.size()), jal::Error);
}

}  // namespace
