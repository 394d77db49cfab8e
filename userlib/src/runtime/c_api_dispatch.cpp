// The C API's kernel dispatch and what times it (API 1.3): timestamped signals, elapsed
// device time, the profiler callback.
#include <jal/jal.h>

#include <chrono>

#include "c_api_support.hpp"

using namespace jal::runtime::capi;
using jal::runtime::detail::ProfiledDispatch;
using jal::runtime::detail::TimesRecord;

namespace {

int64_t monotonic_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Checks a desc of API 1.2's size or later; the fields past the caller's size are zero.
jal_status_t check_desc(const jal_dispatch_desc* desc, jal_dispatch_desc& out)
{
    constexpr size_t v12 = offsetof(jal_dispatch_desc, times);
    REQUIRE(desc->size >= v12, "desc->size is smaller than struct jal_dispatch_desc");
    out = {};
    std::memcpy(&out, desc, std::min<size_t>(desc->size, sizeof out));
    REQUIRE((out.flags & ~uint32_t{JAL_DISPATCH_F_TIMING_ONLY}) == 0,
            "desc->flags has unknown bits");
    REQUIRE(out.reserved == 0, "desc->reserved must be zero");
    REQUIRE(out.code_object != 0, "desc->code_object is 0");
    REQUIRE(out.slice_mask != 0, "desc->slice_mask is empty");
    REQUIRE(out.times % 8 == 0, "desc->times is not 8-byte aligned");
    return JAL_STATUS_OK;
}

void submit_dispatch(jal::runtime::detail::UserQueue& queue, const jal_dispatch_desc& d,
                     jal::runtime::detail::Signal* completion)
{
    jal_packet_dispatch p{};
    p.budget_kinsn = d.budget_kinsn;
    p.code_object = d.code_object;
    p.slice_mask = d.slice_mask;
    p.args = d.args;
    p.report = d.report;
    p.times = d.times;
    auto& device = queue.context().device();
    const bool timed_signal = completion && completion->timestamps();
    const bool profiled = d.times == 0 && device.profiler().active();
    std::shared_ptr<TimesRecord> record;
    if (d.times == 0 && (timed_signal || profiled)) {
        record = device.guarded([&] { return device.times().allocate(); });
        p.times = record->bus_addr;
    }
    const int64_t submitted = monotonic_ns();
    const uint64_t index = queue.dispatch(static_cast<uint16_t>(d.flags), p, completion, profiled);
    if (timed_signal) completion->set_last_times(d.times ? nullptr : record);
    if (profiled)
        device.profiler().track(
            ProfiledDispatch{record, queue.id(), index, d.code_object, d.slice_mask, submitted});
}

jal_status_t finished_times(jal_signal_t signal, jal_dispatch_times& out)
{
    REQUIRE(signal, "signal is NULL");
    REQUIRE(signal->signal->timestamps(), "the signal was not created with JAL_SIGNAL_TIMESTAMPS");
    std::shared_ptr<TimesRecord> record = signal->signal->last_times();
    if (!record) return fail(JAL_STATUS_NOT_READY, "no dispatch has named the signal yet");
    if (!record->done())
        return fail(JAL_STATUS_NOT_READY, "the signal's dispatch has not completed yet");
    out = record->read();
    return JAL_STATUS_OK;
}

}  // namespace

extern "C" {

jal_status_t jal_queue_dispatch(jal_queue_t queue, const struct jal_dispatch_desc* desc,
                                jal_signal_t completion)
{
    jal::runtime::detail::HostSpan span_("jal_queue_dispatch");
    if (queue) span_.arg("queue", queue->queue->id());
    if (desc) span_.arg("slice_mask", desc->slice_mask);
    REQUIRE(queue && desc, "queue or desc is NULL");
    jal_dispatch_desc d;
    if (jal_status_t st = check_desc(desc, d); st != JAL_STATUS_OK) return st;
    return call([&] { submit_dispatch(*queue->queue, d, sig(completion)); });
}

jal_status_t jal_signal_get_times(jal_signal_t signal, jal_signal_times_t* out)
{
    REQUIRE(struct_ok(out), "out is NULL or out->struct_size is 0");
    jal_dispatch_times t;
    if (jal_status_t st = finished_times(signal, t); st != JAL_STATUS_OK) return st;
    jal_signal_times_t v{};
    v.status = t.status;
    v.start_ns = t.start_ns;
    v.end_ns = t.end_ns;
    v.slices = t.slices;
    copy_out(out, v);
    return JAL_STATUS_OK;
}

jal_status_t jal_signal_elapsed_ns(jal_signal_t start, jal_signal_t end, uint64_t* ns)
{
    REQUIRE(ns, "ns is NULL");
    jal_dispatch_times a, b;
    if (jal_status_t st = finished_times(start, a); st != JAL_STATUS_OK) return st;
    if (jal_status_t st = finished_times(end, b); st != JAL_STATUS_OK) return st;
    if (b.end_ns < a.start_ns)
        return fail(JAL_STATUS_INVALID_FIELD, "the end signal's dispatch ended (" +
                                                  std::to_string(b.end_ns) +
                                                  " ns) before the start signal's began (" +
                                                  std::to_string(a.start_ns) + " ns)");
    *ns = b.end_ns - a.start_ns;
    return JAL_STATUS_OK;
}

jal_status_t jal_device_set_profiler(jal_device_t device, jal_profiler_fn fn, void* user)
{
    jal::runtime::detail::HostSpan span_("jal_device_set_profiler");
    REQUIRE(device, "device is NULL");
    return call([&] {
        jal::runtime::detail::Profiler::Callback cb;
        if (fn)
            cb = [fn, user](const ProfiledDispatch& d, const jal_dispatch_times& t,
                            int64_t complete_ns) {
                jal_dispatch_profile_t r{};
                r.struct_size = sizeof r;
                r.queue_id = d.queue_id;
                r.packet_index = d.packet_index;
                r.code_object = d.code_object;
                r.slice_mask = d.slice_mask;
                r.status = t.status;
                r.slices = t.slices;
                r.start_ns = t.start_ns;
                r.end_ns = t.end_ns;
                r.host_submit_ns = static_cast<uint64_t>(d.host_submit_ns);
                r.host_complete_ns = static_cast<uint64_t>(complete_ns);
                fn(&r, user);
            };
        device->core->profiler().set(std::move(cb));
    });
}

}  // extern "C"
