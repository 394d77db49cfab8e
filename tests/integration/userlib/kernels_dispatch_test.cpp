// Kernels end to end: builder -> code object -> Program in device memory -> Launcher ->
// jal_queue_dispatch on a real jal-emu, results checked on the host.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/error.hpp>
#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>

#include "common/expect_error.hpp"
#include "kernels_fixture.hpp"

namespace {

using jal::kernels::Args;
using jal::kernels::BatchReport;
using jal::kernels::Builder;
using jal::kernels::DispatchOptions;
using jal::kernels::Launcher;
using jal::kernels::LauncherOptions;
using jal::kernels::Program;
using jal::kernels::X;

class KernelsDispatchTest : public jal::test::KernelsTest {
protected:
    void SetUp() override
    {
        KernelsTest::SetUp();
        launcher = std::make_unique<Launcher>(dev(), *context, *queue);
    }
    void TearDown() override
    {
        launcher.reset();
        KernelsTest::TearDown();
    }

    // Each slice stores {slice * mul + add + 1000 * nslices, logical slice} at out + 16 * slice.
    jal::kernels::CodeObject slice_kernel()
    {
        Builder b("slice_values");
        X dst = b.arg("out", JAL_ARG_ADDRESS);
        X mul = b.arg("mul");
        X add = b.arg("add");
        X me = b.slice_index(), n = b.slice_count();
        X v = b.x(), t = b.x();
        b.mul(v, me, mul);
        b.add(v, v, add);
        b.muli(t, n, 1000);
        b.add(v, v, t);
        b.muli(t, me, 16);
        b.add(t, dst, t);
        b.st(v, t, 0);
        b.movsr(v, JAL_SR_LOGICAL_SLICE);
        b.st(v, t, 8);
        b.end();
        return b.finish();
    }

    std::unique_ptr<Launcher> launcher;
};

TEST_F(KernelsDispatchTest, EverySliceComputesFromItsIndexAndArguments)
{
    const uint64_t usable = launcher->usable_slice_mask();
    const unsigned n = static_cast<unsigned>(std::popcount(usable));
    ASSERT_EQ(n, dev().identify().slices_enabled);
    ASSERT_GT(n, 1u);

    Program prog(dev(), *context, *queue, slice_kernel());
    EXPECT_EQ(prog.name(), "slice_values");
    EXPECT_EQ(prog.args_size(), 24u);
    jal_dispatch_report r = launcher->run(prog, Args().addr(out->va()).u64(7).u64(3));
    EXPECT_EQ(r.status, uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(r.fault_slice, ~0u);
    EXPECT_GT(r.instructions, 0u);
    EXPECT_GT(r.modelled_ns, 0u);

    auto v = read_out(2 * n);
    for (unsigned s = 0; s < n; s++) {
        EXPECT_EQ(v[2 * s], s * 7 + 3 + 1000 * n) << "slice " << s;
        EXPECT_EQ(v[2 * s + 1], s) << "slice " << s << ": its logical id";
    }
}

TEST_F(KernelsDispatchTest, SliceMaskNumbersTheChosenSlicesInLogicalOrder)
{
    Program prog(dev(), *context, *queue, slice_kernel());
    DispatchOptions o;
    o.slice_mask = (1u << 1) | (1u << 3);
    launcher->run(prog, Args().addr(out->va()).u64(1).u64(0), o);
    auto v = read_out(4);
    EXPECT_EQ(v[0], 0u + 2000);
    EXPECT_EQ(v[1], 1u);
    EXPECT_EQ(v[2], 1u + 2000);
    EXPECT_EQ(v[3], 3u);
}

TEST_F(KernelsDispatchTest, SubmittedDispatchesRunInQueueOrder)
{
    // acc = acc * 10 + digit: the final value spells the order of the dispatches.
    Program prog(dev(), *context, *queue, append_digit_kernel());
    DispatchOptions one;
    one.slice_mask = 1;
    for (uint64_t d = 1; d <= 9; d++) launcher->submit(prog, Args().addr(out->va()).u64(d), one);
    auto reports = launcher->finish();
    ASSERT_EQ(reports.size(), 9u);
    for (const auto& r : reports) EXPECT_EQ(r.status, uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(read_out(1)[0], 123456789u);
}

TEST_F(KernelsDispatchTest, ManyDispatchesReuseReportSlotsAndArgumentBuffers)
{
    // More dispatches than the Launcher has report slots (1024): submit() drains and
    // reuses them without losing a report or an argument.
    Builder b("accumulate");
    X dst = b.arg("out", JAL_ARG_ADDRESS);
    X inc = b.arg("inc");
    X acc = b.x();
    b.ld(acc, dst, 0);
    b.add(acc, acc, inc);
    b.st(acc, dst, 0);
    Program prog(dev(), *context, *queue, b.finish());
    DispatchOptions one;
    one.slice_mask = 1;
    const uint64_t n = 1500;
    for (uint64_t i = 1; i <= n; i++) launcher->submit(prog, Args().addr(out->va()).u64(i), one);
    auto reports = launcher->finish();
    ASSERT_EQ(reports.size(), n);
    for (const auto& r : reports) EXPECT_EQ(r.status, uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(read_out(1)[0], n * (n + 1) / 2);
}

TEST_F(KernelsDispatchTest, TimingOnlyDispatchWritesNothing)
{
    Program prog(dev(), *context, *queue, slice_kernel());
    DispatchOptions o;
    o.timing_only = true;
    jal_dispatch_report r = launcher->run(prog, Args().addr(out->va()).u64(1).u64(1), o);
    EXPECT_EQ(r.status, uint32_t{JAL_STATUS_OK});
    EXPECT_GT(r.modelled_ns, 0u);
    EXPECT_GT(r.instructions, 0u);
    auto v = read_out(4);
    EXPECT_EQ(v, std::vector<uint64_t>(4, 0));
}

TEST_F(KernelsDispatchTest, FaultThrowsWithTheDisassembledInstruction)
{
    Builder b("faulty");
    X v = b.arg("value");
    X bad = b.x();
    b.li(bad, 0x10);  // not mapped in any context
    b.st(v, bad, 8);
    Program prog(dev(), *context, *queue, b.finish());
    DispatchOptions one;
    one.slice_mask = 1;
    try {
        launcher->run(prog, Args().u64(42), one);
        FAIL() << "no exception";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_PAGE_FAULT);
        std::string m = e.what();
        EXPECT_NE(m.find("kernel faulty: page fault in slice 0 at pc 3 (opcode 0x1b st): "
                         "st x2, [x3+8] (address 0x18)"),
                  std::string::npos)
            << m;
    }
    // The queue goes on: the next dispatch runs.
    Program ok(dev(), *context, *queue, slice_kernel());
    EXPECT_EQ(launcher->run(ok, Args().addr(out->va()).u64(0).u64(5), one).status,
              uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(read_out(1)[0], 5u + 1000);
}

TEST_F(KernelsDispatchTest, TrapInOneSliceNamesThatSlice)
{
    Builder b("trap_in_two");
    X me = b.slice_index();
    X two = b.x();
    b.li(two, 2);
    auto skip = b.label();
    b.bne(me, two, skip);
    b.trap(JAL_STATUS_OUT_OF_RANGE);
    b.bind(skip);
    b.end();
    Program prog(dev(), *context, *queue, b.finish());
    DispatchOptions o;
    o.slice_mask = 0xf;
    try {
        launcher->run(prog, Args(), o);
        FAIL() << "no exception";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_OUT_OF_RANGE);
        std::string m = e.what();
        EXPECT_NE(m.find("in slice 2 at pc 3 (opcode 0x26 trap): trap 8 (out of range)"),
                  std::string::npos)
            << m;
    }
}

TEST_F(KernelsDispatchTest, CorruptCodeObjectIsRefusedBeforeAnySliceRuns)
{
    jal::kernels::CodeObject co = slice_kernel();
    co.bytes[64] ^= 1;  // a code byte: the CRC no longer matches
    Program prog(dev(), *context, *queue, co);
    try {
        launcher->run(prog, Args().addr(out->va()).u64(1).u64(1));
        FAIL() << "no exception";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_INVALID_FIELD);
        EXPECT_NE(
            std::string(e.what()).find("kernel slice_values: invalid field (before any slice ran"),
            std::string::npos)
            << e.what();
    }
    EXPECT_EQ(read_out(1)[0], 0u) << "nothing ran";
}

TEST_F(KernelsDispatchTest, HostSideMistakesThrowBeforeSubmitting)
{
    Program prog(dev(), *context, *queue, slice_kernel());
    try {
        launcher->submit(prog, Args().addr(out->va()));
        FAIL() << "no exception";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_INVALID_LENGTH);
        EXPECT_NE(std::string(e.what()).find("8 bytes of arguments given, the kernel reads 24"),
                  std::string::npos)
            << e.what();
    }
    DispatchOptions o;
    o.slice_mask = ~launcher->usable_slice_mask() & (uint64_t{1} << 63);
    if (o.slice_mask) {
        try {
            launcher->submit(prog, Args().addr(out->va()).u64(0).u64(0), o);
            FAIL() << "no exception";
        } catch (const jal::Error& e) {
            EXPECT_EQ(e.status(), JAL_STATUS_INVALID_FIELD);
        }
    }
    EXPECT_TRUE(launcher->finish().empty());
}

TEST_F(KernelsDispatchTest, CApiChecksTheDescriptor)
{
    Program prog(dev(), *context, *queue, slice_kernel());
    jal_dispatch_desc d{};
    d.size = sizeof d;
    d.code_object = prog.address();
    d.slice_mask = 1;
    jal_dispatch_desc bad = d;
    bad.flags = 2;
    EXPECT_EQ(jal_queue_dispatch(queue->get(), &bad, nullptr), uint32_t{JAL_STATUS_INVALID_FIELD});
    EXPECT_NE(std::string(jal_last_error_message()).find("flags"), std::string::npos);
    bad = d;
    bad.reserved = 1;
    EXPECT_EQ(jal_queue_dispatch(queue->get(), &bad, nullptr), uint32_t{JAL_STATUS_INVALID_FIELD});
    bad = d;
    bad.size = 8;
    EXPECT_EQ(jal_queue_dispatch(queue->get(), &bad, nullptr), uint32_t{JAL_STATUS_INVALID_FIELD});
    bad = d;
    bad.slice_mask = 0;
    EXPECT_EQ(jal_queue_dispatch(queue->get(), &bad, nullptr), uint32_t{JAL_STATUS_INVALID_FIELD});
    EXPECT_EQ(jal_queue_dispatch(queue->get(), nullptr, nullptr),
              uint32_t{JAL_STATUS_INVALID_FIELD});

    // A well-formed one through the C API, with a report in host memory.
    jal::runtime::HostBuffer args(dev(), 4096), report(dev(), 4096);
    jal::runtime::Memory dev_args(*context, 64, JAL_PLACE_SLICE, 1);
    uint64_t a[3] = {out->va(), 2, 1};
    std::memcpy(args.data(), a, sizeof a);
    jal::runtime::Signal copied(dev(), 1), done(dev(), 1);
    queue->copy_to_device(dev_args.va(), args, 0, sizeof a, &copied);
    ASSERT_EQ(copied.wait_zero().status, JAL_STATUS_OK);
    d.args = dev_args.va();
    d.report = report.bus_addr();
    ASSERT_EQ(jal_queue_dispatch(queue->get(), &d, done.get()), uint32_t{JAL_STATUS_OK})
        << jal_last_error_message();
    EXPECT_EQ(done.wait_zero().status, JAL_STATUS_OK);
    jal_dispatch_report r;
    std::memcpy(&r, report.data(), sizeof r);
    EXPECT_EQ(r.status, uint32_t{JAL_STATUS_OK});
    EXPECT_GT(r.instructions, 0u);
    EXPECT_EQ(read_out(1)[0], 1u + 1000);
}

TEST_F(KernelsDispatchTest, BatchUploadsRunsInOrderAndDownloads)
{
    Program prog(dev(), *context, *queue, append_digit_kernel());
    const uint64_t seed = 7;
    launcher->upload(out->va(), &seed, sizeof seed);
    for (uint64_t d = 1; d <= 5; d++)
        launcher->add(prog, {out->va(), d}, {.slice_mask = 1, .label = "digit"});
    uint64_t result = 0;
    launcher->download(&result, out->va(), sizeof result);
    EXPECT_EQ(result, 0u) << "nothing runs before run_batch()";
    const BatchReport r = launcher->run_batch();
    EXPECT_EQ(result, 712345u);
    ASSERT_EQ(r.dispatches.size(), 5u);
    uint64_t sum = 0;
    for (const BatchReport::Dispatch& d : r.dispatches) {
        EXPECT_EQ(d.label, "digit");
        EXPECT_EQ(d.lane, -1);
        EXPECT_EQ(d.report.status, uint32_t{JAL_STATUS_OK});
        EXPECT_GT(d.report.modelled_ns, 0u);
        sum += d.report.modelled_ns;
    }
    EXPECT_EQ(r.modelled_ns, sum) << "one queue: the dispatches' times add up";
    // The batch is cleared: the next one starts empty.
    EXPECT_TRUE(launcher->run_batch().dispatches.empty());
}

TEST_F(KernelsDispatchTest, LanesRunSideBySideAndARegionCountsItsSlowestLane)
{
    Launcher lanes(dev(), *context, *queue, LauncherOptions{.lanes = 2});
    ASSERT_EQ(lanes.lanes(), 2u);
    Program prog(dev(), *context, *queue, append_digit_kernel());
    const uint64_t a = out->va(), b = out->va() + 64, c = out->va() + 128;
    lanes.add(prog, {a, 1}, {.slice_mask = 1, .label = "before"});
    lanes.fork();
    lanes.add(prog, {a, 2}, {.slice_mask = 1, .label = "lane 0", .lane = 0});
    for (uint64_t d = 1; d <= 3; d++)
        lanes.add(prog, {b, d}, {.slice_mask = 2, .label = "lane 1", .lane = 1});
    lanes.join();
    lanes.add(prog, {c, 9}, {.slice_mask = 1, .label = "after"});
    const BatchReport r = lanes.run_batch();
    ASSERT_EQ(r.dispatches.size(), 6u);
    uint64_t main_ns = 0, lane_ns[2] = {0, 0};
    for (const BatchReport::Dispatch& d : r.dispatches) {
        EXPECT_EQ(d.report.status, uint32_t{JAL_STATUS_OK}) << d.label;
        if (d.lane >= 0)
            lane_ns[static_cast<size_t>(d.lane)] += d.report.modelled_ns;
        else
            main_ns += d.report.modelled_ns;
    }
    EXPECT_EQ(r.dispatches[1].lane, 0);
    EXPECT_EQ(r.dispatches[2].lane, 1);
    EXPECT_EQ(r.modelled_ns, main_ns + std::max(lane_ns[0], lane_ns[1]));
    auto v = read_out(17);
    EXPECT_EQ(v[0], 12u) << "lane 0 ran after the work before fork()";
    EXPECT_EQ(v[8], 123u) << "lane 1 in its own order";
    EXPECT_EQ(v[16], 9u);
}

TEST_F(KernelsDispatchTest, FaultInABatchNamesKernelLabelAndDispatch)
{
    Builder b("faulty");
    X v = b.arg("value");
    X bad = b.x();
    b.li(bad, 0x10);  // not mapped in any context
    b.st(v, bad, 8);
    Program faulty(dev(), *context, *queue, b.finish());
    Program ok(dev(), *context, *queue, append_digit_kernel());
    launcher->add(ok, {out->va(), 4}, {.slice_mask = 1, .label = "first"});
    launcher->add(faulty, {42}, {.slice_mask = 1, .label = "store"});
    try {
        launcher->run_batch();
        FAIL() << "no exception";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_PAGE_FAULT);
        std::string m = e.what();
        EXPECT_NE(m.find("kernel faulty (store, dispatch 1 of the batch): page fault in slice 0 "
                         "at pc 3 (opcode 0x1b st): st x2, [x3+8] (address 0x18)"),
                  std::string::npos)
            << m;
    }
    // The batch was dropped and the queue goes on.
    launcher->add(ok, {out->va(), 5}, {.slice_mask = 1});
    EXPECT_EQ(launcher->run_batch().dispatches.size(), 1u);
    EXPECT_EQ(read_out(1)[0], 45u);
}

// A batch learns of a failed copy from the copy's own signal and of a refused dispatch
// from its report, without asking the queues: both throw, saying which, and the next
// batch runs.
TEST_F(KernelsDispatchTest, FailedCopyInABatchThrowsAndTheQueueGoesOn)
{
    Program ok(dev(), *context, *queue, append_digit_kernel());
    const uint64_t seed = 3;
    launcher->upload(0x10, &seed, sizeof seed);  // not mapped in any context
    launcher->add(ok, {out->va(), 4}, {.slice_mask = 1});
    jal::test::expect_error([&] { launcher->run_batch(); }, JAL_STATUS_PAGE_FAULT,
                            {"kernels: a copy of the batch failed (page fault)"});
    uint64_t result = 0;
    launcher->add(ok, {out->va(), 5}, {.slice_mask = 1});
    launcher->download(&result, out->va(), sizeof result);
    EXPECT_EQ(launcher->run_batch().dispatches.size(), 1u);
    EXPECT_EQ(result % 10, 5u);
}

TEST_F(KernelsDispatchTest, RefusedDispatchInABatchNamesKernelAndDispatch)
{
    jal::kernels::CodeObject co = slice_kernel();
    co.bytes[64] ^= 1;  // a code byte: the CRC no longer matches
    Program corrupt(dev(), *context, *queue, co);
    Program ok(dev(), *context, *queue, append_digit_kernel());
    launcher->add(ok, {out->va(), 4}, {.slice_mask = 1, .label = "first"});
    launcher->add(corrupt, {out->va(), 1, 1}, {.label = "corrupt"});
    jal::test::expect_error([&] { launcher->run_batch(); }, JAL_STATUS_INVALID_FIELD,
                            {"kernel slice_values (corrupt, dispatch 1 of the batch): invalid "
                             "field (before any slice ran"});
    launcher->add(ok, {out->va(), 5}, {.slice_mask = 1});
    EXPECT_EQ(launcher->run_batch().dispatches.size(), 1u);
    EXPECT_EQ(read_out(1)[0], 45u);
}

TEST_F(KernelsDispatchTest, BatchChecksArgumentsAndLanesWhenAdded)
{
    Program prog(dev(), *context, *queue, append_digit_kernel());
    EXPECT_THROW(launcher->add(prog, {out->va()}, {.slice_mask = 1}), jal::Error);
    try {
        launcher->add(prog, {out->va(), 1}, {.slice_mask = 1, .lane = 0});
        FAIL() << "no exception";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_INVALID_FIELD);
        EXPECT_NE(std::string(e.what()).find("lane 0 of 0"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(launcher->run_batch().dispatches.empty());
}

}  // namespace
