#include "launcher.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include <jal/hw/queue.h>

namespace jal::model::detail {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t align_up(size_t v)
{
    return (v + kAlign - 1) & ~(kAlign - 1);
}

// Room for this many dispatches per run without growing (each needs a 64-byte report).
constexpr size_t kInitialReports = 1024;

}  // namespace

Launcher::Launcher(const runtime::Device& device, const runtime::Context& context,
                   uint64_t slice_mask, bool timing_only)
    : device_(device), context_(context), mask_(slice_mask),
      // Large enough for a whole decode step of many sequences: the producer never waits
      // for room while the device is still behind.
      queue_(context, 16384), done_(device, 0, true), timing_only_(timing_only)
{
    reports_ = std::make_unique<runtime::HostBuffer>(device_,
                                                     kInitialReports * sizeof(jal_dispatch_report));
}

uint64_t Launcher::kernel(const std::string& name,
                          const std::function<kernels::CodeObject()>& build)
{
    auto it = code_.find(name);
    if (it != code_.end()) return it->second->va();
    kernels::CodeObject co = build();
    // Every dispatch slice fetches the program: interleave it so no slice is the hot spot.
    auto mem = std::make_unique<runtime::Memory>(context_, std::max<size_t>(co.bytes.size(), 4096),
                                                 JAL_PLACE_INTERLEAVED, mask_, 0);
    runtime::HostBuffer host(device_, co.bytes.size());
    std::memcpy(host.data(), co.bytes.data(), co.bytes.size());
    runtime::Signal sig(device_, 1, true);
    queue_.copy_to_device(mem->va(), host, 0, co.bytes.size(), &sig);
    auto r = sig.wait_zero(std::chrono::seconds(60));
    if (!r.satisfied || r.status != JAL_STATUS_OK)
        throw Error(r.satisfied ? r.status : JAL_STATUS_TIMEOUT,
                    fmt::format("model runtime: uploading kernel {} failed", name));
    uint64_t va = mem->va();
    code_.emplace(name, std::move(mem));
    return va;
}

void Launcher::set_lanes(uint32_t n)
{
    while (lanes_.size() < n) lanes_.push_back(std::make_unique<runtime::Queue>(context_, 4096));
}

void Launcher::fork()
{
    pending_.push_back({0, 0, 0, "fork", -1, Kind::fork});
}

void Launcher::join()
{
    pending_.push_back({0, 0, 0, "join", -1, Kind::join});
}

runtime::Signal& Launcher::pool_signal(size_t i)
{
    while (pool_.size() <= i) pool_.push_back(std::make_unique<runtime::Signal>(device_, 0, false));
    return *pool_[i];
}

void Launcher::clear()
{
    pending_.clear(), arg_words_.clear(), uploads_.clear(), downloads_.clear();
    upload_bytes_.clear(), download_bytes_ = 0;
}

void Launcher::add(uint64_t code, uint64_t slice_mask, std::vector<uint64_t> args, const char* what,
                   int lane)
{
    // Argument blocks start 64-byte aligned so each dispatch reads whole lines.
    size_t offset = arg_words_.size() * 8;
    arg_words_.insert(arg_words_.end(), args.begin(), args.end());
    while (arg_words_.size() % (kAlign / 8)) arg_words_.push_back(0);
    pending_.push_back({code, slice_mask, offset, what, lane, Kind::dispatch});
}

void Launcher::upload(uint64_t dst_va, const void* src, size_t bytes)
{
    size_t off = align_up(upload_bytes_.size());
    upload_bytes_.resize(off + bytes);
    std::memcpy(upload_bytes_.data() + off, src, bytes);
    uploads_.push_back({dst_va, nullptr, off, bytes});
}

void Launcher::download(void* dst, uint64_t src_va, size_t bytes)
{
    downloads_.push_back({src_va, dst, download_bytes_, bytes});
    download_bytes_ = align_up(download_bytes_ + bytes);
}

void Launcher::grow_staging(size_t bytes)
{
    if (!staging_ || staging_->size() < bytes)
        staging_ = std::make_unique<runtime::HostBuffer>(device_, std::max(bytes, size_t{1} << 20));
}

ChipTotals Launcher::run()
{
    const size_t args_bytes = align_up(arg_words_.size() * 8);
    const size_t up_base = args_bytes;
    const size_t down_base = align_up(up_base + upload_bytes_.size());
    grow_staging(down_base + download_bytes_);
    if (!args_mem_ || args_mem_->size() < args_bytes) {
        args_mem_.reset();
        // Read by every slice of every dispatch: one interleaved region.
        args_mem_ = std::make_unique<runtime::Memory>(
            context_, std::max<size_t>(args_bytes * 2, 1 << 20), JAL_PLACE_INTERLEAVED, mask_, 0);
    }
    if (reports_->size() < pending_.size() * sizeof(jal_dispatch_report))
        reports_ = std::make_unique<runtime::HostBuffer>(device_, pending_.size() * 2 *
                                                                      sizeof(jal_dispatch_report));

    // An empty vector's data() may be null, which memcpy must not see even for 0 bytes.
    if (!arg_words_.empty())
        std::memcpy(staging_->data(), arg_words_.data(), arg_words_.size() * 8);
    if (!upload_bytes_.empty())
        std::memcpy(staging_->data() + up_base, upload_bytes_.data(), upload_bytes_.size());
    std::memset(reports_->data(), 0, pending_.size() * sizeof(jal_dispatch_report));

    if (args_bytes) queue_.copy_to_device(args_mem_->va(), *staging_, 0, args_bytes);
    for (const Transfer& t : uploads_)
        queue_.copy_to_device(t.va, *staging_, up_base + t.staging_offset, t.bytes);
    size_t next_signal = 0;
    for (size_t i = 0; i < pending_.size(); i++) {
        const Pending& p = pending_[i];
        if (p.kind == Kind::fork) {
            // The main queue's work so far, then every lane may start.
            runtime::Signal& f = pool_signal(next_signal++);
            f.store(1);
            queue_.nop(&f);
            const runtime::Signal* dep[] = {&f};
            for (auto& lane : lanes_) lane->barrier_and(dep);
            continue;
        }
        if (p.kind == Kind::join) {
            std::vector<const runtime::Signal*> joins;
            for (auto& lane : lanes_) {
                runtime::Signal& j = pool_signal(next_signal++);
                j.store(1);
                lane->nop(&j);
                joins.push_back(&j);
            }
            for (size_t at = 0; at < joins.size(); at += JAL_BARRIER_DEPS_MAX)
                queue_.barrier_and(std::span(joins).subspan(
                    at, std::min<size_t>(JAL_BARRIER_DEPS_MAX, joins.size() - at)));
            continue;
        }
        runtime::Queue& q = p.lane >= 0 ? *lanes_.at(static_cast<size_t>(p.lane)) : queue_;
        jal_dispatch_desc d{};
        d.flags = timing_only_ ? JAL_DISPATCH_F_TIMING_ONLY : 0;
        d.code_object = p.code;
        d.slice_mask = p.mask;
        d.args = args_mem_->va() + p.args_offset;
        d.report = reports_->bus_addr() + i * sizeof(jal_dispatch_report);
        q.dispatch(d);
    }
    for (const Transfer& t : downloads_)
        queue_.copy_to_host(*staging_, down_base + t.staging_offset, t.va, t.bytes);
    // The queue runs its packets in order, so one completion after the last says all are done.
    done_.store(1);
    queue_.nop(&done_);
    auto r = done_.wait_zero(std::chrono::minutes(30));
    if (!r.satisfied)
        throw Error(JAL_STATUS_TIMEOUT,
                    "model runtime: the chip did not finish the graph within 30 minutes");

    ChipTotals totals;
    auto* reports = reinterpret_cast<const jal_dispatch_report*>(reports_->data());
    std::vector<uint64_t> lane_ns(lanes_.size(), 0);
    for (size_t i = 0; i < pending_.size(); i++) {
        if (pending_[i].kind == Kind::fork) {
            std::fill(lane_ns.begin(), lane_ns.end(), 0);
            continue;
        }
        if (pending_[i].kind == Kind::join) {
            // The lanes ran side by side: the region took as long as its slowest lane.
            totals.modelled_ns +=
                lane_ns.empty() ? 0 : *std::max_element(lane_ns.begin(), lane_ns.end());
            continue;
        }
        const jal_dispatch_report& rep = reports[i];
        if (rep.status != JAL_STATUS_OK) {
            std::string what = pending_[i].what;
            auto st = static_cast<jal_status>(rep.status);
            clear();
            if (queue_.status().errors) queue_.reset();
            for (auto& lane : lanes_)
                if (lane->status().errors) lane->reset();
            throw Error(
                st, fmt::format(
                        "model runtime: dispatch {} ({}) failed: {} at slice {} pc {} opcode {} "
                        "address {:#x}",
                        i, what, jal_status_name(st), rep.fault_slice, rep.fault_pc,
                        rep.fault_opcode, rep.fault_address));
        }
        ChipTotals one;
        one.dispatches = 1;
        one.modelled_ns = rep.modelled_ns;
        one.energy_nj = rep.energy_nj;
        one.flops = rep.flops;
        one.hbm_bytes = rep.hbm_bytes;
        if (pending_[i].lane >= 0) {
            lane_ns[static_cast<size_t>(pending_[i].lane)] += rep.modelled_ns;
            ChipTotals rest = one;
            rest.modelled_ns = 0;  // counted by the join
            totals += rest;
        } else {
            totals += one;
        }
        by_kernel_[pending_[i].what] += one;
    }
    auto qs = queue_.status();
    for (auto& lane : lanes_)
        if (auto ls = lane->status(); ls.errors) {
            lane->reset();
            qs.errors += ls.errors, qs.last_error = ls.last_error;
        }
    if (qs.errors) {
        clear();
        queue_.reset();
        throw Error(static_cast<jal_status>(qs.last_error),
                    fmt::format("model runtime: a copy of the graph failed ({})",
                                jal_status_name(static_cast<jal_status>(qs.last_error))));
    }
    for (const Transfer& t : downloads_)
        std::memcpy(t.host_dst, staging_->data() + down_base + t.staging_offset, t.bytes);

    clear();
    return totals;
}

}  // namespace jal::model::detail
