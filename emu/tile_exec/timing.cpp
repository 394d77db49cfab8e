#include "emu/tile_exec/timing.hpp"

#include "emu/tile_exec/timing_rates.hpp"
#include "jal/hw/isa.h"

#include <algorithm>

namespace jal::emu::exec {

// The cache geometry programs are told about (include/jal/hw/isa.h) is the modelled one.
static_assert(rates::kScalarCacheLines == JAL_ISA_SCALAR_CACHE_LINES &&
              rates::kScalarLineBytes == JAL_ISA_SCALAR_LINE_BYTES);

using namespace rates;

namespace {
double mma_rate(std::uint32_t dt)  // FLOP per ns at the nominal clock
{
    switch (dt) {
    case JAL_DT_MXFP4:
        return kMmaMxfp4 * 1e-9;
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
    case JAL_DT_Q8_0:
        return kMmaMxfp8 * 1e-9;
    case JAL_DT_BF16:
    case JAL_DT_F16:
        return kMmaBf16 * 1e-9;
    default:
        return kMmaF32 * 1e-9;
    }
}
double mma_pj(std::uint32_t dt)
{
    switch (dt) {
    case JAL_DT_MXFP4:
        return kPjPerFlopMxfp4;
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
    case JAL_DT_Q8_0:
        return kPjPerFlopMxfp8;
    case JAL_DT_BF16:
    case JAL_DT_F16:
        return kPjPerFlopBf16;
    default:
        return kPjPerFlopF32;
    }
}
}  // namespace

SliceTiming::SliceTiming(std::uint32_t clock_mhz)
    : cycle_(1000.0 / clock_mhz), scale_(clock_mhz / kNominalMhz)
{
    pending_.reserve(2 * kOpsInFlight);
}

void SliceTiming::scalar_load(std::uint64_t va, bool remote)
{
    const std::uint64_t line = va / kScalarLineBytes;
    std::uint64_t& tag = cache_tags_[line % kScalarCacheLines];
    if (tag == line + 1) {  // a prefetched line still on its way: the rest of its fill
        const double before = t_;
        t_ = std::max(t_, cache_ready_[line % kScalarCacheLines]);
        if (t_ > before) span(0, before, t_);
        t_ += kScalarLoadHitCycles * cycle_;
        return;
    }
    tag = line + 1;
    cache_ready_[line % kScalarCacheLines] = 0;
    const double before = t_;
    t_ += remote ? kRemoteHbmLatencyNs : kLocalHbmLatencyNs;
    span(0, before, t_);
    ctr_.hbm_bytes += kScalarLineBytes;
    ctr_.hbm_energy_pj += kScalarLineBytes * (remote ? kPjPerRemoteByte : kPjPerHbmByte);
}

void SliceTiming::scalar_prefetch(std::uint64_t va, bool remote)
{
    const std::uint64_t line = va / kScalarLineBytes;
    std::uint64_t& tag = cache_tags_[line % kScalarCacheLines];
    if (tag == line + 1) return;  // there, or on its way
    tag = line + 1;
    cache_ready_[line % kScalarCacheLines] =
        t_ + (remote ? kRemoteHbmLatencyNs : kLocalHbmLatencyNs);
    ctr_.hbm_bytes += kScalarLineBytes;
    ctr_.hbm_energy_pj += kScalarLineBytes * (remote ? kPjPerRemoteByte : kPjPerHbmByte);
}

void SliceTiming::scalar_store(std::uint64_t va, std::uint64_t bytes, bool remote)
{
    // Write-through, no allocate, posted: no stall; a cached line keeps the new value.
    (void)va;
    ctr_.hbm_bytes += bytes;
    ctr_.hbm_energy_pj += bytes * (remote ? kPjPerRemoteByte : kPjPerHbmByte);
}

void SliceTiming::scalar_tile_access(L1Range r, bool write)
{
    // The same hazards as an engine op that reads (RAW) or writes (WAW, WAR) the range,
    // hazard_floor's scan for one range (a TREAD a few elements: no EngineOp built).
    double ready = t_;
    for (std::size_t i = pending_.size(); i-- > head_;) {
        const Pending& p = pending_[i];
        if (p.end <= t_) break;
        bool hit = p.writes.overlaps(r);
        if (write)
            for (const L1Range& pr : p.reads) hit = hit || pr.overlaps(r);
        if (hit) {
            ready = p.end;
            break;
        }
    }
    span(0, t_, ready);
    t_ = ready;
}

double SliceTiming::hazard_floor(const EngineOp& op, double floor) const
{
    // From the latest completion down: the first op in conflict completes last of all those
    // in conflict, and once one completes by floor, none before it can raise floor.
    for (std::size_t i = pending_.size(); i-- > head_;) {
        const Pending& p = pending_[i];
        if (p.end <= floor) break;
        bool hit = !op.writes.empty() && p.writes.overlaps(op.writes);        // WAW
        for (const L1Range& r : op.reads) hit = hit || p.writes.overlaps(r);  // RAW
        if (!op.writes.empty())
            for (const L1Range& r : p.reads) hit = hit || r.overlaps(op.writes);  // WAR
        if (hit) return p.end;
    }
    return floor;
}

// Ops that completed before the scalar unit's issue time can no longer delay anything
// (every later op starts after issue); when the in-flight queue is still full, the scalar
// unit stalls until its oldest op completes.
void SliceTiming::retire_and_make_room()
{
    const auto retire = [&] {
        while (head_ < pending_.size() && pending_[head_].end <= t_) ++head_;
    };
    retire();
    while (pending_.size() - head_ >= kOpsInFlight) {
        t_ = std::max(t_, pending_[head_].end);  // the op that completes first
        retire();
    }
    if (head_ >= kOpsInFlight) {  // drop the retired ones now and then, not at every op
        pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
    }
}

void SliceTiming::record(const EngineOp& op, double end)
{
    if (!op.writes.empty() || !op.reads[0].empty() || !op.reads[1].empty() ||
        !op.reads[2].empty()) {
        // In completion order; an op issued later usually completes later, so from the back.
        auto at = pending_.end();
        while (at != pending_.begin() + static_cast<std::ptrdiff_t>(head_) &&
               std::prev(at)->end > end)
            --at;
        pending_.insert(at, {op.reads, op.writes, end});
    }
    last_end_ = std::max(last_end_, end);
    if (op.semaphore >= 0) add_signal(op.semaphore, end, 1);
}

double SliceTiming::engine_op(const EngineOp& op)
{
    retire_and_make_room();
    const auto e = static_cast<std::size_t>(op.engine);
    const double start = hazard_floor(op, std::max(t_, free_[e]));
    double busy = 0, latency = 0;
    switch (op.engine) {
    case Engine::dma:
        busy = kDmaOpCycles * cycle_ + op.traffic.local / kLocalHbmBytesPerNs +
               op.traffic.remote / kRemoteHbmBytesPerNs +
               static_cast<double>(op.traffic.peer_ns);  // the link model's charge
        latency = op.traffic.remote ? kRemoteHbmLatencyNs : kLocalHbmLatencyNs;
        ctr_.hbm_bytes += op.traffic.local + op.traffic.remote;
        ctr_.hbm_energy_pj +=
            op.traffic.local * kPjPerHbmByte + op.traffic.remote * kPjPerRemoteByte;
        break;
    case Engine::matrix:
        busy = op.flops / (mma_rate(op.mma_dtype) * scale_);
        latency = kMmaLatencyCycles * cycle_;
        ctr_.flops += op.flops;
        ctr_.energy_pj += op.flops * mma_pj(op.mma_dtype);
        break;
    case Engine::vector:
        busy = (op.elems / kVecElemsPerCycle + op.trans_elems / kVecTransPerCycle +
                op.convert_elems / kVecConvertPerCycle + op.sort_elems / kVecSortPerCycle) *
               cycle_;
        latency = kVecLatencyCycles * cycle_;
        ctr_.flops += op.flops;
        ctr_.energy_pj += (op.elems + op.convert_elems + op.sort_elems) * kPjPerVectorElem +
                          op.trans_elems * kPjPerTranscendental;
        break;
    case Engine::network:
        busy = op.net_bytes / kNetBytesPerCycle * cycle_;
        ctr_.net_bytes += op.net_bytes;
        ctr_.energy_pj += op.net_bytes * kPjPerNetByte;
        break;
    case Engine::count_:
        break;
    }
    free_[e] = start + busy;
    const double end = start + busy + latency;
    record(op, end);
    span(static_cast<std::uint8_t>(1 + e), start, end);
    return end;
}

double SliceTiming::arrival(double send_end) const
{
    return send_end + kNetLatencyCycles * cycle_;
}

void SliceTiming::recv(const EngineOp& op, double arrival)
{
    retire_and_make_room();
    const double start = hazard_floor(op, t_);
    record(op, std::max(start, arrival));
    span(1 + static_cast<std::uint8_t>(Engine::network), start, std::max(start, arrival));
}

void SliceTiming::add_signal(int q, double when, std::uint64_t n)
{
    auto& s = sems_[static_cast<std::size_t>(q)];
    auto it = std::upper_bound(s.begin(), s.end(), when,
                               [](double w, const auto& e) { return w < e.first; });
    if (it != s.begin() && std::prev(it)->first == when)
        std::prev(it)->second += n;
    else
        s.insert(it, {when, n});
}

void SliceTiming::signal(unsigned q, std::uint64_t n)
{
    if (n) add_signal(static_cast<int>(q), t_, n);
}

void SliceTiming::wait(unsigned q, std::uint64_t n)
{
    // The counter reaches n when the n-th earliest pending signal completes; those n are
    // consumed, the later ones stay.
    auto& s = sems_[q];
    const double before = t_;
    while (n && !s.empty()) {
        auto& [when, count] = s.front();
        t_ = std::max(t_, when);
        const std::uint64_t take = std::min(n, count);
        n -= take;
        count -= take;
        if (count == 0) s.pop_front();
    }
    span(0, before, t_);
}

double SliceTiming::barrier_release(double last_arrival) const
{
    return last_arrival + kBarrierCycles * cycle_;
}

void SliceTiming::resume_at(double t)
{
    span(0, t_, t);
    t_ = std::max(t_, t);
}

void SliceTiming::fence_and_clear_semaphores()
{
    fence_ = std::max(fence_, last_end_);
    for (auto& q : sems_) q.clear();
}

void SliceTiming::fence_wait()
{
    span(0, t_, fence_);
    t_ = std::max(t_, fence_);
}

double SliceTiming::end() const
{
    return std::max(t_, last_end_);
}

}  // namespace jal::emu::exec
