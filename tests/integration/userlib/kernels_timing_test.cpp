// Device timestamps of dispatches (JAL_SIGNAL_TIMESTAMPS, jal_signal_times,
// jal_signal_elapsed_ns) and the profiler callback (jal_device_set_profiler), API 1.3.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "kernels_fixture.hpp"

namespace {

using jal::kernels::Args;
using jal::kernels::Launcher;
using jal::kernels::Program;

class KernelsTimingTest : public jal::test::KernelsTest {
protected:
    // One dispatch of `prog` on logical slice `slice` through the C API, completing `done`;
    // returns its report.
    jal_dispatch_report dispatch(const Program& prog, uint64_t slice_mask, jal_signal_t done)
    {
        jal::runtime::Memory args(*context, 64, JAL_PLACE_SLICE, 1);
        jal::runtime::HostBuffer staging(dev(), 4096), report(dev(), 4096);
        const uint64_t a[2] = {out->va(), 3};
        std::memcpy(staging.data(), a, sizeof a);
        jal::runtime::Signal copied(dev(), 1);
        queue->copy_to_device(args.va(), staging, 0, sizeof a, &copied);
        EXPECT_EQ(copied.wait_zero().status, JAL_STATUS_OK);
        jal_dispatch_desc d{};
        d.size = sizeof d;
        d.code_object = prog.address();
        d.slice_mask = slice_mask;
        d.args = args.va();
        d.report = report.bus_addr();
        EXPECT_EQ(jal_queue_dispatch(queue->get(), &d, done), uint32_t{JAL_STATUS_OK})
            << jal_last_error_message();
        int64_t value = 1;
        EXPECT_EQ(jal_signal_wait(done, JAL_SIGNAL_EQ, 0, 30'000'000'000ull, JAL_WAIT_POLL, &value,
                                  nullptr),
                  uint32_t{JAL_STATUS_OK});
        jal_dispatch_report r;
        std::memcpy(&r, report.data(), sizeof r);
        return r;
    }
    jal_signal_t timed_signal()
    {
        jal_signal_t s = nullptr;
        EXPECT_EQ(jal_signal_create(dev().get(), 1, JAL_SIGNAL_TIMESTAMPS, &s),
                  uint32_t{JAL_STATUS_OK});
        signals.push_back(s);
        return s;
    }
    void TearDown() override
    {
        for (jal_signal_t s : signals) jal_signal_destroy(s);
        KernelsTest::TearDown();
    }
    std::vector<jal_signal_t> signals;
};

TEST_F(KernelsTimingTest, TimestampedSignalsRecordWhenTheDispatchRanOnTheDevice)
{
    Program prog(dev(), *context, *queue, append_digit_kernel());
    jal_signal_t first = timed_signal(), second = timed_signal();
    jal_signal_times_t t{};
    t.struct_size = sizeof t;
    EXPECT_EQ(jal_signal_get_times(first, &t), uint32_t{JAL_STATUS_NOT_READY});

    const jal_dispatch_report r1 = dispatch(prog, 1, first);
    const jal_dispatch_report r2 = dispatch(prog, 1, second);
    ASSERT_EQ(r1.status, uint32_t{JAL_STATUS_OK});
    ASSERT_GT(r1.modelled_ns, 0u);
    jal_signal_times_t t1{}, t2{};
    t1.struct_size = t2.struct_size = sizeof t1;
    ASSERT_EQ(jal_signal_get_times(first, &t1), uint32_t{JAL_STATUS_OK})
        << jal_last_error_message();
    ASSERT_EQ(jal_signal_get_times(second, &t2), uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(t1.status, uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(t1.slices, 1u);
    EXPECT_EQ(t1.end_ns - t1.start_ns, r1.modelled_ns);
    EXPECT_EQ(t2.end_ns - t2.start_ns, r2.modelled_ns);
    // The same slice: the second starts once the first has ended.
    EXPECT_GE(t2.start_ns, t1.end_ns);

    uint64_t ns = 0;
    ASSERT_EQ(jal_signal_elapsed_ns(first, second, &ns), uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(ns, t2.end_ns - t1.start_ns);
    ASSERT_EQ(jal_signal_elapsed_ns(first, first, &ns), uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(ns, r1.modelled_ns);
    // A third dispatch starts after the first has ended: "from the third to the first" is
    // refused.
    jal_signal_t third = timed_signal();
    dispatch(prog, 1, third);
    EXPECT_EQ(jal_signal_elapsed_ns(third, first, &ns), uint32_t{JAL_STATUS_INVALID_FIELD});
    EXPECT_NE(std::string(jal_last_error_message()).find("before"), std::string::npos);

    // A signal without the flag has no times.
    jal::runtime::Signal plain(dev(), 1);
    EXPECT_EQ(jal_signal_get_times(plain.get(), &t), uint32_t{JAL_STATUS_INVALID_FIELD});
    EXPECT_NE(std::string(jal_last_error_message()).find("JAL_SIGNAL_TIMESTAMPS"),
              std::string::npos);
}

TEST_F(KernelsTimingTest, ADescOfTheOlderSizeStillDispatches)
{
    Program prog(dev(), *context, *queue, append_digit_kernel());
    jal_dispatch_desc d{};
    d.size = offsetof(jal_dispatch_desc, times);  // API 1.2's struct
    d.code_object = prog.address();
    d.slice_mask = 1;
    jal::runtime::Signal done(dev(), 1);
    ASSERT_EQ(jal_queue_dispatch(queue->get(), &d, done.get()), uint32_t{JAL_STATUS_OK});
    // It runs (and faults: no argument buffer), completing the signal.
    EXPECT_TRUE(done.wait_zero().satisfied);
    d.size = sizeof d;
    d.times = 4;
    EXPECT_EQ(jal_queue_dispatch(queue->get(), &d, nullptr), uint32_t{JAL_STATUS_INVALID_FIELD});
    EXPECT_NE(std::string(jal_last_error_message()).find("times"), std::string::npos);
}

// What the profiler callback saw, for the test to wait on.
struct Seen {
    std::mutex m;
    std::condition_variable cv;
    std::vector<jal_dispatch_profile_t> records;
    jal_device_t device = nullptr;
    jal_status_t nested = JAL_STATUS_OK;

    static void callback(const jal_dispatch_profile_t* r, void* user)
    {
        auto* self = static_cast<Seen*>(user);
        // Changing the profiler from its own callback would deadlock: refused.
        jal_status_t nested = jal_device_set_profiler(self->device, nullptr, nullptr);
        std::lock_guard lock(self->m);
        self->nested = nested;
        self->records.push_back(*r);
        self->cv.notify_all();
    }
    bool wait_for(size_t n)
    {
        std::unique_lock lock(m);
        return cv.wait_for(lock, std::chrono::seconds(30), [&] { return records.size() >= n; });
    }
};

TEST_F(KernelsTimingTest, TheProfilerSeesEveryDispatchWithItsTimes)
{
    Seen seen;
    seen.device = dev().get();
    ASSERT_EQ(jal_device_set_profiler(dev().get(), &Seen::callback, &seen),
              uint32_t{JAL_STATUS_OK});
    Program prog(dev(), *context, *queue, append_digit_kernel());
    Launcher launcher(dev(), *context, *queue);
    std::vector<jal_dispatch_report> reports;
    for (uint64_t digit = 1; digit <= 3; ++digit)
        reports.push_back(launcher.run(prog, Args().addr(out->va()).u64(digit), {.slice_mask = 1}));
    ASSERT_TRUE(seen.wait_for(3));

    uint32_t qid = 0;
    ASSERT_EQ(jal_queue_id(queue->get(), &qid), uint32_t{JAL_STATUS_OK});
    std::lock_guard lock(seen.m);
    ASSERT_EQ(seen.records.size(), 3u);
    EXPECT_EQ(seen.nested, uint32_t{JAL_STATUS_INVALID_FIELD});
    for (size_t i = 0; i < 3; ++i) {
        const jal_dispatch_profile_t& r = seen.records[i];
        EXPECT_EQ(r.struct_size, sizeof r);
        EXPECT_EQ(r.queue_id, qid);
        EXPECT_EQ(r.code_object, prog.address());
        EXPECT_EQ(r.slice_mask, 1u);
        EXPECT_EQ(r.status, uint32_t{JAL_STATUS_OK});
        EXPECT_EQ(r.end_ns - r.start_ns, reports[i].modelled_ns);
        EXPECT_LE(r.host_submit_ns, r.host_complete_ns);
        if (i > 0) {
            EXPECT_GT(r.packet_index, seen.records[i - 1].packet_index);  // submission order
            EXPECT_GE(r.start_ns, seen.records[i - 1].end_ns);
        }
    }
}

TEST_F(KernelsTimingTest, AfterTheProfilerIsClearedNoMoreCallsCome)
{
    Seen seen;
    seen.device = dev().get();
    ASSERT_EQ(jal_device_set_profiler(dev().get(), &Seen::callback, &seen),
              uint32_t{JAL_STATUS_OK});
    Program prog(dev(), *context, *queue, append_digit_kernel());
    Launcher launcher(dev(), *context, *queue);
    launcher.run(prog, Args().addr(out->va()).u64(1), {.slice_mask = 1});
    ASSERT_TRUE(seen.wait_for(1));
    // Returns once the callback has returned for the last time.
    ASSERT_EQ(jal_device_set_profiler(dev().get(), nullptr, nullptr), uint32_t{JAL_STATUS_OK});
    launcher.run(prog, Args().addr(out->va()).u64(2), {.slice_mask = 1});
    std::lock_guard lock(seen.m);
    EXPECT_EQ(seen.records.size(), 1u);
}

}  // namespace
