// Launcher: argument upload, report slots and completion signals around
// jal_queue_dispatch. Argument buffers are bump-allocated in a device arena (mirrored in
// pinned host memory the H2D copies read); when the arena or the report slots run out,
// submit() first waits for what is in flight, so both can be reused.
#include <jal/kernels/dispatch.hpp>

#include <cstring>

#include <fmt/format.h>

namespace jal::kernels {
namespace {

constexpr size_t kArenaBytes = size_t{2} << 20;    // one device page of argument buffers
constexpr size_t kReportBytes = size_t{64} << 10;  // 1024 report slots
constexpr size_t kArgsAlign = 64;
constexpr uint32_t kNotWritten = ~0u;  // report.status until the device writes it

uint64_t usable_mask_of(const jal::runtime::Device& dev)
{
    const uint32_t n = dev.identify().slices_enabled;
    return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

}  // namespace

struct Launcher::Pending {
    const Program* program;
    size_t report_slot;
    std::unique_ptr<jal::runtime::Signal> done;
};

Launcher::Launcher(const jal::runtime::Device& dev, jal::runtime::Context& ctx,
                   jal::runtime::Queue& q)
    : dev_(dev), queue_(q), usable_mask_(usable_mask_of(dev)),
      arena_(ctx, kArenaBytes, JAL_PLACE_SLICE, 1), staging_(dev, kArenaBytes),
      reports_(dev, kReportBytes)
{}

Launcher::~Launcher()
{
    try {
        drain();
    } catch (...) {
        // the destructor cannot report; finish() is how failures are seen
    }
}

void Launcher::submit(const Program& p, const Args& a, const DispatchOptions& o)
{
    if (a.size() != p.args_size())
        throw Error(JAL_STATUS_INVALID_LENGTH,
                    fmt::format("kernel {}: {} bytes of arguments given, the kernel reads {}",
                                p.name(), a.size(), p.args_size()));
    const uint64_t mask = o.slice_mask ? o.slice_mask : usable_mask_;
    if (mask & ~usable_mask_)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("kernel {}: slice mask {:#x} names slices outside the usable {:#x}",
                                p.name(), mask, usable_mask_));

    const size_t args_bytes = (a.size() + kArgsAlign - 1) / kArgsAlign * kArgsAlign;
    if (arena_top_ + args_bytes > kArenaBytes ||
        report_slots_ == kReportBytes / sizeof(jal_dispatch_report))
        drain();

    jal_dispatch_desc d{};
    if (a.size()) {
        std::memcpy(staging_.data() + arena_top_, a.bytes().data(), a.size());
        queue_.copy_to_device(arena_.va() + arena_top_, staging_, arena_top_, a.size());
        d.args = arena_.va() + arena_top_;
        arena_top_ += args_bytes;
    }

    auto pending = std::make_unique<Pending>();
    pending->program = &p;
    pending->report_slot = report_slots_++;
    pending->done = std::make_unique<jal::runtime::Signal>(dev_, 1);
    const size_t report_offset = pending->report_slot * sizeof(jal_dispatch_report);
    jal_dispatch_report blank{};
    blank.status = kNotWritten;
    blank.fault_slice = ~0u;
    std::memcpy(reports_.data() + report_offset, &blank, sizeof blank);

    d.flags = o.timing_only ? JAL_DISPATCH_F_TIMING_ONLY : 0;
    d.code_object = p.address();
    d.slice_mask = mask;
    d.budget_kinsn = o.budget_kinsn;
    d.report = reports_.bus_addr() + report_offset;
    queue_.dispatch(d, pending->done.get());
    pending_.push_back(std::move(pending));
}

void Launcher::collect(Pending& p)
{
    const jal::runtime::WaitResult w = p.done->wait_zero();
    jal_dispatch_report r;
    std::memcpy(&r, reports_.data() + p.report_slot * sizeof r, sizeof r);
    if (r.status == kNotWritten) {  // refused before the device wrote a report
        r = jal_dispatch_report{};
        r.status = w.status;
        r.fault_slice = ~0u;
    }
    if (r.status == JAL_STATUS_OK && w.status != JAL_STATUS_OK) r.status = w.status;
    if (r.status != JAL_STATUS_OK && !first_error_)
        first_error_ = std::make_unique<Error>(
            static_cast<jal_status>(r.status),
            dispatch_failure_message(p.program->name(), p.program->code(), r));
    done_.push_back(r);
}

void Launcher::drain()
{
    while (!pending_.empty()) {
        collect(*pending_.front());
        pending_.pop_front();
    }
    arena_top_ = 0;
    report_slots_ = 0;
}

std::vector<jal_dispatch_report> Launcher::finish()
{
    drain();
    std::vector<jal_dispatch_report> out = std::move(done_);
    done_.clear();
    if (first_error_) {
        Error e = *first_error_;
        first_error_.reset();
        throw e;
    }
    return out;
}

jal_dispatch_report Launcher::run(const Program& p, const Args& a, const DispatchOptions& o)
{
    submit(p, a, o);
    return finish().back();
}

}  // namespace jal::kernels
