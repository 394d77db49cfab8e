// Launcher: argument upload, report slots and completion signals around
// jal_queue_dispatch, for single dispatches and for batches.
//
// Single dispatches: argument buffers are bump-allocated in a device arena (mirrored in
// pinned host memory the H2D copies read); when the arena or the report slots run out,
// submit() first waits for what is in flight, so both can be reused.
//
// Batches: the argument buffers are packed into one block (each 64-byte aligned), staged
// with the uploads in one host buffer and copied in one H2D copy before the dispatches;
// the downloads follow them, and one signal after the last says all are done (a queue runs
// its packets in order; fork and join order the lanes against it).
#include <jal/kernels/dispatch.hpp>

#include "launcher_batch.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include <jal/hw/queue.h>

namespace jal::kernels {
namespace {

constexpr size_t kArenaBytes = size_t{2} << 20;    // one device page of argument buffers
constexpr size_t kReportBytes = size_t{64} << 10;  // 1024 report slots
constexpr size_t kArgsAlign = 64;
constexpr uint32_t kNotWritten = ~0u;  // report.status until the device writes it
// Batches: room for this many dispatches before the report buffer grows.
constexpr size_t kInitialBatchReports = 1024;
constexpr uint32_t kLaneQueueSize = 4096;

constexpr size_t align_up(size_t v)
{
    return (v + kArgsAlign - 1) / kArgsAlign * kArgsAlign;
}

uint64_t usable_mask_of(const jal::runtime::Device& dev)
{
    const uint32_t n = dev.identify().slices_enabled;
    return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

jal_dispatch_report blank_report()
{
    jal_dispatch_report blank{};
    blank.status = kNotWritten;
    blank.fault_slice = ~0u;
    return blank;
}

// Whether the device wrote the report in this slot (it was blank_report() before).
bool report_written(const std::byte* slot)
{
    jal_dispatch_report r;
    std::memcpy(&r, slot, sizeof r);
    return r.status != kNotWritten;
}

// The report the device wrote, or (refused before it wrote one) one carrying the
// completion's status.
jal_dispatch_report read_report(const std::byte* slot, jal_status completion)
{
    jal_dispatch_report r;
    std::memcpy(&r, slot, sizeof r);
    if (r.status == kNotWritten) {
        r = jal_dispatch_report{};
        r.status = completion;
        r.fault_slice = ~0u;
    }
    if (r.status == JAL_STATUS_OK && completion != JAL_STATUS_OK) r.status = completion;
    return r;
}

}  // namespace

struct Launcher::Pending {
    const Program* program;
    std::string label;
    size_t report_slot;
    std::unique_ptr<jal::runtime::Signal> done;
};

Launcher::Launcher(const jal::runtime::Device& dev, jal::runtime::Context& ctx,
                   jal::runtime::Queue& q, const LauncherOptions& o)
    : dev_(dev), ctx_(ctx), queue_(q), options_(o), usable_mask_(usable_mask_of(dev)),
      batch_(std::make_unique<Batch>())
{
    set_lanes(o.lanes);
}

Launcher::~Launcher()
{
    try {
        drain();
    } catch (...) {
        // the destructor cannot report; finish() is how failures are seen
    }
}

void Launcher::check(const Program& p, const Args& a, const DispatchOptions& o) const
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
    if (o.lane < -1 || o.lane >= static_cast<int>(lanes_.size()))
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("kernel {}: lane {} of {}", p.name(), o.lane, lanes_.size()));
}

// The one place a dispatch packet is built.
void Launcher::dispatch(jal::runtime::Queue& q, const Program& p, const DispatchOptions& o,
                        uint64_t args_va, uint64_t report_bus, jal::runtime::Signal* done)
{
    jal_dispatch_desc d{};
    d.flags = o.timing_only ? JAL_DISPATCH_F_TIMING_ONLY : 0;
    d.code_object = p.address();
    d.slice_mask = o.slice_mask ? o.slice_mask : usable_mask_;
    d.budget_kinsn = o.budget_kinsn;
    d.args = args_va;
    d.report = report_bus;
    q.dispatch(d, done);
}

std::string Launcher::failure_message(const Program& p, std::string_view label,
                                      const jal_dispatch_report& r) const
{
    if (label.empty()) return dispatch_failure_message(p.name(), p.code(), r);
    return dispatch_failure_message(fmt::format("{} ({})", p.name(), label), p.code(), r);
}

void Launcher::submit(const Program& p, const Args& a, const DispatchOptions& o)
{
    check(p, a, o);
    if (o.lane >= 0)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("kernel {}: lanes are for batches (add)", p.name()));
    if (!arena_) {
        arena_ = std::make_unique<jal::runtime::Memory>(ctx_, kArenaBytes, options_.args.placement,
                                                        options_.args.slice_mask);
        staging_ = std::make_unique<jal::runtime::HostBuffer>(dev_, kArenaBytes);
        reports_ = std::make_unique<jal::runtime::HostBuffer>(dev_, kReportBytes);
    }

    const size_t args_bytes = align_up(a.size());
    if (arena_top_ + args_bytes > kArenaBytes ||
        report_slots_ == kReportBytes / sizeof(jal_dispatch_report))
        drain();

    uint64_t args_va = 0;
    if (a.size()) {
        std::memcpy(staging_->data() + arena_top_, a.bytes().data(), a.size());
        queue_.copy_to_device(arena_->va() + arena_top_, *staging_, arena_top_, a.size());
        args_va = arena_->va() + arena_top_;
        arena_top_ += args_bytes;
    }

    auto pending = std::make_unique<Pending>();
    pending->program = &p;
    pending->label = o.label;
    pending->report_slot = report_slots_++;
    pending->done = std::make_unique<jal::runtime::Signal>(dev_, 1);
    const size_t report_offset = pending->report_slot * sizeof(jal_dispatch_report);
    const jal_dispatch_report blank = blank_report();
    std::memcpy(reports_->data() + report_offset, &blank, sizeof blank);
    dispatch(queue_, p, o, args_va, reports_->bus_addr() + report_offset, pending->done.get());
    pending_.push_back(std::move(pending));
}

void Launcher::collect(Pending& p)
{
    const jal::runtime::WaitResult w = p.done->wait_zero();
    const jal_dispatch_report r =
        read_report(reports_->data() + p.report_slot * sizeof(jal_dispatch_report), w.status);
    if (r.status != JAL_STATUS_OK && !first_error_)
        first_error_ = std::make_unique<Error>(static_cast<jal_status>(r.status),
                                               failure_message(*p.program, p.label, r));
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

void Launcher::set_lanes(uint32_t n)
{
    while (lanes_.size() < n)
        lanes_.push_back(std::make_unique<jal::runtime::Queue>(ctx_, kLaneQueueSize));
}

void Launcher::add(const Program& p, const Args& a, const DispatchOptions& o)
{
    check(p, a, o);
    Batch& b = *batch_;
    Batch::Item item;
    item.program = &p;
    item.options = o;
    item.options.label = {};
    item.label = o.label;
    item.args_offset = b.args.size();
    item.args_size = a.size();
    b.args.insert(b.args.end(), a.bytes().begin(), a.bytes().end());
    b.args.resize(align_up(b.args.size()), 0);  // each buffer starts on a whole line
    b.items.push_back(std::move(item));
}

void Launcher::fork()
{
    Batch::Item item;
    item.kind = Batch::Kind::fork;
    batch_->items.push_back(std::move(item));
}

void Launcher::join()
{
    Batch::Item item;
    item.kind = Batch::Kind::join;
    batch_->items.push_back(std::move(item));
}

void Launcher::cut(std::string_view label)
{
    if (!options_.stages) return;
    Batch::Item item;
    item.kind = Batch::Kind::cut;
    item.label = label;
    batch_->items.push_back(std::move(item));
}

void Launcher::upload(uint64_t dst_va, const void* src, size_t bytes)
{
    Batch& b = *batch_;
    const size_t off = align_up(b.upload_bytes.size());
    b.upload_bytes.resize(off + bytes);
    if (bytes) std::memcpy(b.upload_bytes.data() + off, src, bytes);
    b.uploads.push_back({dst_va, nullptr, off, bytes});
}

void Launcher::download(void* dst, uint64_t src_va, size_t bytes)
{
    Batch& b = *batch_;
    b.downloads.push_back({src_va, dst, b.download_bytes, bytes});
    b.download_bytes = align_up(b.download_bytes + bytes);
}

// Sizes the staging buffer, the device argument block and the report slots for the batch
// (growing, never shrinking) and fills what the device reads.
void Launcher::prepare_batch_memory()
{
    Batch& b = *batch_;
    const size_t args_bytes = b.args.size();
    b.up_base = args_bytes;
    b.down_base = align_up(b.up_base + b.upload_bytes.size());
    const size_t staging_bytes = b.down_base + b.download_bytes;
    if (!b.staging || b.staging->size() < staging_bytes)
        b.staging = std::make_unique<jal::runtime::HostBuffer>(
            dev_, std::max(staging_bytes, size_t{1} << 20));
    if (!b.args_mem || b.args_mem->size() < args_bytes) {
        b.args_mem.reset();
        b.args_mem = std::make_unique<jal::runtime::Memory>(
            ctx_, std::max<size_t>(args_bytes * 2, 1 << 20), options_.args.placement,
            options_.args.slice_mask, 0);
    }
    const size_t report_bytes = b.items.size() * sizeof(jal_dispatch_report);
    if (!b.reports || b.reports->size() < report_bytes)
        b.reports = std::make_unique<jal::runtime::HostBuffer>(
            dev_, std::max(report_bytes * 2, kInitialBatchReports * sizeof(jal_dispatch_report)));
    if (!b.done) b.done = std::make_unique<jal::runtime::Signal>(dev_, 0, true);

    // An empty vector's data() may be null, which memcpy must not see even for 0 bytes.
    if (!b.args.empty()) std::memcpy(b.staging->data(), b.args.data(), b.args.size());
    if (!b.upload_bytes.empty())
        std::memcpy(b.staging->data() + b.up_base, b.upload_bytes.data(), b.upload_bytes.size());
    const jal_dispatch_report blank = blank_report();
    for (size_t i = 0; i < b.items.size(); i++)
        std::memcpy(b.reports->data() + i * sizeof blank, &blank, sizeof blank);
}

// Queues the batch: argument block and uploads, the items (fork and join as signals and
// barriers between the queue and the lanes), the downloads, then the completion.
void Launcher::submit_batch()
{
    Batch& b = *batch_;
    b.copies = 0;
    if (!b.args.empty())
        queue_.copy_to_device(b.args_mem->va(), *b.staging, 0, b.args.size(), &b.copy_signal(dev_));
    for (const Batch::Transfer& t : b.uploads)
        queue_.copy_to_device(t.va, *b.staging, b.up_base + t.staging_offset, t.bytes,
                              &b.copy_signal(dev_));
    size_t next_signal = 0;
    for (size_t i = 0; i < b.items.size(); i++) {
        const Batch::Item& it = b.items[i];
        if (it.kind == Batch::Kind::cut) continue;
        if (it.kind == Batch::Kind::fork) {
            // The queue's work so far, then every lane may start.
            jal::runtime::Signal& f = b.pool_signal(dev_, next_signal++);
            f.store(1);
            queue_.nop(&f);
            const jal::runtime::Signal* dep[] = {&f};
            for (auto& lane : lanes_) lane->barrier_and(dep);
        } else if (it.kind == Batch::Kind::join) {
            std::vector<const jal::runtime::Signal*> joins;
            for (auto& lane : lanes_) {
                jal::runtime::Signal& j = b.pool_signal(dev_, next_signal++);
                j.store(1);
                lane->nop(&j);
                joins.push_back(&j);
            }
            for (size_t at = 0; at < joins.size(); at += JAL_BARRIER_DEPS_MAX)
                queue_.barrier_and(std::span(joins).subspan(
                    at, std::min<size_t>(JAL_BARRIER_DEPS_MAX, joins.size() - at)));
        } else {
            jal::runtime::Queue& q =
                it.options.lane >= 0 ? *lanes_[static_cast<size_t>(it.options.lane)] : queue_;
            dispatch(q, *it.program, it.options,
                     it.args_size ? b.args_mem->va() + it.args_offset : 0,
                     b.reports->bus_addr() + i * sizeof(jal_dispatch_report), nullptr);
        }
    }
    for (const Batch::Transfer& t : b.downloads)
        queue_.copy_to_host(*b.staging, b.down_base + t.staging_offset, t.va, t.bytes,
                            &b.copy_signal(dev_));
    b.done->store(1);
    queue_.nop(b.done.get());
}

// A batch's dispatch whose report is still blank when the batch has completed (the device
// writes one for every dispatch it takes, refused or run, and a queue runs its packets in
// order): its queue's last error says what happened; OK if that queue has none.
jal_status Launcher::refusal(int lane)
{
    jal::runtime::Queue& q = lane >= 0 ? *lanes_[static_cast<size_t>(lane)] : queue_;
    const jal_queue_status qs = q.status();
    return qs.errors ? static_cast<jal_status>(qs.last_error) : JAL_STATUS_OK;
}

void Launcher::fail_batch(jal_status st, const std::string& message)
{
    batch_->clear();
    if (queue_.status().errors) queue_.reset();
    for (auto& lane : lanes_)
        if (lane->status().errors) lane->reset();
    throw Error(st, message);
}

BatchReport Launcher::run_batch()
{
    start_batch();
    return finish_batch();
}

void Launcher::prepare_batch()
{
    if (options_.stages) stage_batch();
    batch_->clear();
}

void Launcher::start_batch()
{
    if (options_.stages) stage_batch();
    prepare_batch_memory();
    submit_batch();
}

BatchReport Launcher::finish_batch(jal_wait_mode mode)
{
    Batch& b = *batch_;
    const jal::runtime::WaitResult w = b.done->wait_zero(std::chrono::minutes(30), mode);
    if (!w.satisfied)
        throw Error(JAL_STATUS_TIMEOUT, "kernels: a batch did not finish within 30 minutes");

    BatchReport out;
    std::vector<uint64_t> lane_ns(lanes_.size(), 0);
    for (size_t i = 0; i < b.items.size(); i++) {
        const Batch::Item& it = b.items[i];
        if (it.kind == Batch::Kind::cut) continue;
        if (it.kind == Batch::Kind::fork) {
            std::fill(lane_ns.begin(), lane_ns.end(), 0);
            continue;
        }
        if (it.kind == Batch::Kind::join) {
            out.modelled_ns +=
                lane_ns.empty() ? 0 : *std::max_element(lane_ns.begin(), lane_ns.end());
            continue;
        }
        const std::byte* slot = b.reports->data() + i * sizeof(jal_dispatch_report);
        jal_dispatch_report r = read_report(slot, w.status);
        if (!report_written(slot)) r.status = refusal(it.options.lane);
        if (r.status != JAL_STATUS_OK)
            fail_batch(static_cast<jal_status>(r.status),
                       failure_message(*it.program,
                                       fmt::format("{}{}dispatch {} of the batch", it.label,
                                                   it.label.empty() ? "" : ", ", i),
                                       r));
        if (it.options.lane >= 0)
            lane_ns[static_cast<size_t>(it.options.lane)] += r.modelled_ns;
        else
            out.modelled_ns += r.modelled_ns;
        out.dispatches.push_back({it.label, it.options.lane, r});
    }
    // Each copy's signal has its status: no round trip to the queues when all went well.
    for (size_t c = 0; c < b.copies; c++) {
        const jal::runtime::Signal& s = *b.copy_pool[c];
        const jal_status st = s.value() == 0 ? s.packet_status() : JAL_STATUS_NOT_READY;
        if (st != JAL_STATUS_OK)
            fail_batch(
                st, fmt::format("kernels: a copy of the batch failed ({})", jal_status_name(st)));
    }
    for (const Batch::Transfer& t : b.downloads)
        std::memcpy(t.host_dst, b.staging->data() + b.down_base + t.staging_offset, t.bytes);
    b.clear();
    return out;
}

}  // namespace jal::kernels
