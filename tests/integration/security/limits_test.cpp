// One client cannot take every context or user queue of the chip: each host function may
// hold --max-contexts-per-client (16) contexts and --max-queues-per-client (64) queues
// (docs/security.md, "Per-client limits").
#include <gtest/gtest.h>

#include <jal/jal.hpp>

#include <memory>
#include <vector>

#include "fixture/emu_process.hpp"

namespace {

using namespace jal::runtime;

// Creates contexts until the device refuses one; returns how many it gave, and the status.
std::size_t take_contexts(const Device& dev, std::vector<std::unique_ptr<Context>>& held,
                          jal_status& refused)
{
    refused = JAL_STATUS_OK;
    for (int i = 0; i < 64; ++i) {
        try {
            held.push_back(std::make_unique<Context>(dev));
        } catch (const jal::Error& e) {
            refused = e.status();
            break;
        }
    }
    return held.size();
}

TEST(LimitsTest, OneClientCannotTakeEveryContext)
{
    jal::test::EmuProcess emu;
    Device greedy(0, emu.socket_dir());
    std::vector<std::unique_ptr<Context>> held;
    jal_status refused;
    EXPECT_EQ(take_contexts(greedy, held, refused), 16u);
    EXPECT_EQ(refused, JAL_STATUS_BUSY);
    // Another client still gets its share.
    Device other(0, emu.socket_dir());
    std::vector<std::unique_ptr<Context>> theirs;
    EXPECT_EQ(take_contexts(other, theirs, refused), 16u);
    // Giving one back makes room for one more.
    held.pop_back();
    EXPECT_NO_THROW(held.push_back(std::make_unique<Context>(greedy)));
    theirs.clear();
    held.clear();
    EXPECT_EQ(emu.stop(), "");
}

TEST(LimitsTest, QueuesPerClientAreConfigurable)
{
    jal::test::EmuOptions options;
    options.extra_args = {"--max-queues-per-client", "2", "--max-contexts-per-client", "1"};
    jal::test::EmuProcess emu(options);
    Device dev(0, emu.socket_dir());
    Context ctx(dev);
    EXPECT_THROW(Context second(dev), jal::Error);
    Queue q1(ctx, 64), q2(ctx, 64);
    try {
        Queue q3(ctx, 64);
        ADD_FAILURE() << "a third queue was created";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_BUSY) << e.what();
    }
    EXPECT_EQ(emu.stop(), "");
}

}  // namespace
