// jalctl ps and the memory figures of info, against a real jal-emu with a client (this test
// process) holding a context, a queue and memory on known slices.
#include <gtest/gtest.h>

#include <unistd.h>

#include <jal/jal.hpp>
#include <nlohmann/json.hpp>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

using jal::test::CommandResult;
using nlohmann::json;

constexpr uint64_t kPage = JAL_PAGE_SIZE;
const std::string kBootWait = std::to_string(jal::test::kBootTimeout.count());

class JalctlPsTest : public jal::test::EmuTest {
protected:
    json jalctl_json(std::vector<std::string> args)
    {
        args.insert(args.begin(), jal::test::bin_path("jalctl"));
        args.push_back("--json");
        CommandResult r = jal::test::run_command(args, {emu().env()});
        EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
        try {
            return json::parse(r.out);
        } catch (const json::parse_error& e) {
            ADD_FAILURE() << "not one JSON document: " << e.what() << "\n" << r.out;
            return json();
        }
    }

    static const json* client_with_pid(const json& ps, pid_t pid)
    {
        for (const json& c : ps["clients"])
            if (c["pid"] == pid) return &c;
        return nullptr;
    }
};

TEST_F(JalctlPsTest, AnIdleChipHasOnlyJalctlAndAllMemoryFree)
{
    json ps = jalctl_json({"ps", "--wait", kBootWait});
    ASSERT_EQ(ps["clients"].size(), 1u) << ps.dump();
    EXPECT_EQ(ps["clients"][0]["self"], true);
    EXPECT_EQ(ps["contexts"], 0);
    EXPECT_EQ(ps["memory"]["used_bytes"], 0);
    EXPECT_EQ(ps["memory"]["total_bytes"], 216ull << 30);
    EXPECT_TRUE(ps["slices"].empty());
    EXPECT_EQ(jalctl_json({"ps", "--all-slices"})["slices"].size(), 64u);
}

TEST_F(JalctlPsTest, ShowsAClientsContextsQueuesAndMemoryBySlice)
{
    (void)open_ready();
    jal::runtime::Device dev(0, emu().socket_dir());
    jal::runtime::Context ctx(dev);
    jal::runtime::Memory on5(ctx, 3 * kPage, JAL_PLACE_SLICE, 1ull << 5);
    jal::runtime::Memory spread(ctx, 4 * kPage, JAL_PLACE_INTERLEAVED, 0b11);
    jal::runtime::Queue queue(ctx, 64);

    json ps = jalctl_json({"ps"});
    const json* me = client_with_pid(ps, ::getpid());
    ASSERT_NE(me, nullptr) << ps.dump(2);
    EXPECT_EQ((*me)["self"], false);
    EXPECT_EQ((*me)["contexts"], 1);
    EXPECT_EQ((*me)["queues"], 1);
    EXPECT_EQ((*me)["allocations"], 2);
    EXPECT_EQ((*me)["memory_bytes"], 7 * kPage);
    EXPECT_EQ((*me)["slices"], (json{{{"slice", 0}, {"bytes", 2 * kPage}},
                                     {{"slice", 1}, {"bytes", 2 * kPage}},
                                     {{"slice", 5}, {"bytes", 3 * kPage}}}));
    EXPECT_EQ(ps["contexts"], 1);
    EXPECT_EQ(ps["queues"], 1);
    EXPECT_EQ(ps["memory"]["used_bytes"], 7 * kPage);
    ASSERT_EQ(ps["slices"].size(), 3u);
    EXPECT_EQ(ps["slices"][2]["slice"], 5);
    EXPECT_EQ(ps["slices"][2]["used_bytes"], 3 * kPage);

    json info = jalctl_json({"info"});
    EXPECT_EQ(info["memory"]["used_bytes"], 7 * kPage);
    EXPECT_EQ(info["memory"]["free_bytes"], (216ull << 30) - 7 * kPage);
}

TEST_F(JalctlPsTest, FreedMemoryLeavesTheClientsSlices)
{
    (void)open_ready();
    jal::runtime::Device dev(0, emu().socket_dir());
    jal::runtime::Context ctx(dev);
    auto mem = std::make_unique<jal::runtime::Memory>(ctx, 2 * kPage, JAL_PLACE_REPLICATED, 0b101);
    json held = jalctl_json({"ps"});
    const json* me = client_with_pid(held, ::getpid());
    ASSERT_NE(me, nullptr);
    EXPECT_EQ((*me)["memory_bytes"], 4 * kPage);  // two replicas of two pages
    mem.reset();
    json freed = jalctl_json({"ps"});
    me = client_with_pid(freed, ::getpid());
    ASSERT_NE(me, nullptr);
    EXPECT_EQ((*me)["memory_bytes"], 0);
    EXPECT_TRUE((*me)["slices"].empty());
    EXPECT_EQ(freed["memory"]["used_bytes"], 0);
}

}  // namespace
