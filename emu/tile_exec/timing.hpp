// The timing model of one slice: knows time, never data. The executor reports every
// instruction it executes (timing_event.hpp); this side keeps the scalar unit's issue
// time, each engine's free-at time, the recent engine ops' L1 ranges (hazards), the
// semaphores' pending signal times, and the energy spent. Deterministic: it sees the same
// instruction stream whatever the host does.
#pragma once

#include "emu/tile_exec/device_memory.hpp"
#include "emu/tile_exec/signal_queue.hpp"
#include "emu/tile_exec/tile.hpp"
#include "emu/tile_exec/timing_rates.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace jal::emu::exec {

enum class Engine : std::uint8_t { dma, matrix, vector, network, count_ };

// An op for one of the asynchronous engines, as the executor reports it.
struct EngineOp {
    Engine engine = Engine::dma;
    std::array<L1Range, 3> reads{};  // tiles read (empty ranges unused)
    L1Range writes{};                // tile written
    int semaphore = -1;              // signalled (+1) at completion
    // DMA: bytes by owner relative to this slice; store: L1 -> HBM.
    Traffic traffic{};
    // matrix: flops at the slower input format's rate (a jal_dtype)
    std::uint64_t flops = 0;
    std::uint32_t mma_dtype = 0;
    // vector: elements processed per cost class
    std::uint64_t elems = 0, trans_elems = 0, convert_elems = 0, sort_elems = 0;
    // network: bytes sent
    std::uint64_t net_bytes = 0;
};

struct TimingCounters {
    std::uint64_t flops = 0, hbm_bytes = 0, net_bytes = 0;
    double energy_pj = 0;      // at nominal voltage; the dispatch scales compute by V²
    double hbm_energy_pj = 0;  // the part that does not scale with the core voltage
};

// One span of a slice's timeline (jal-emu --trace-ops): an engine op from its start to its
// completion, or a stall of the scalar unit (a WAIT, a scalar cache miss, a TREAD/TWRITE
// waiting for an engine op), with the instruction that caused it.
struct TimingSpan {
    double start = 0, end = 0;
    std::uint32_t pc = 0;
    std::uint8_t opcode = 0;
    std::uint8_t track = 0;  // 0: the scalar unit's stalls; 1 + Engine
};

class SliceTiming {
public:
    explicit SliceTiming(std::uint32_t clock_mhz);

    double now() const { return t_; }
    double cycle_ns() const { return cycle_; }
    std::uint64_t cycles() const { return static_cast<std::uint64_t>(t_ / cycle_); }

    // Every instruction: one issue cycle of the scalar unit (inline: it is on the
    // interpreter's path for every instruction).
    void issue()
    {
        t_ += cycle_;
        ctr_.energy_pj += rates::kPjPerInstruction;
    }
    // A run of instructions that use the model for their issue cycle only (Executor's plain
    // scalar ops) keeps the time and energy in the caller's registers, adding to them as
    // issue() does, in the same order, and hands them back at the end of the run.
    struct IssueState {
        double t, pj;
    };
    // One instruction's issue on state kept outside the model, as issue() adds it.
    void issue(IssueState& s) const
    {
        s.t += cycle_;
        s.pj += rates::kPjPerInstruction;
    }
    IssueState issue_state() const { return {t_, ctr_.energy_pj}; }
    void set_issue_state(const IssueState& s)
    {
        t_ = s.t;
        ctr_.energy_pj = s.pj;
    }
    // The instruction being issued (what the spans below name), and where they go (null:
    // nowhere, the default).
    void at(std::uint32_t pc, std::uint8_t opcode)
    {
        pc_ = pc;
        opcode_ = opcode;
    }
    void log_to(std::vector<TimingSpan>* spans) { spans_ = spans; }
    // LD/LW: the scalar data cache, or a miss to HBM (local or remote).
    void scalar_load(std::uint64_t va, bool remote);
    void scalar_store(std::uint64_t va, std::uint64_t bytes, bool remote);
    // PREFETCH: a missing line starts filling (its latency, its bytes) without a stall; a
    // load of it before the fill lands waits for the rest.
    void scalar_prefetch(std::uint64_t va, bool remote);
    // LD/LW of a peer chip's page (interface 1.8): the scalar unit waits for the link's
    // round trip, the link model's charge (never cached: another chip may write it).
    void peer_load(double link_ns) { t_ += link_ns; }
    // TREAD/TWRITE: the scalar unit waits for engine ops that write (or, for a write,
    // touch) the range.
    void scalar_tile_access(L1Range r, bool write);
    // Issues an engine op; returns its completion time. For SEND that is when the tile
    // has left (arrival at the receiver adds the network latency: arrival()).
    double engine_op(const EngineOp& op);
    double arrival(double send_end) const;
    // The network engine's time for `bytes` (an engine op's busy time for that many).
    double network_ns(std::uint64_t bytes) const
    {
        return static_cast<double>(bytes) / rates::kNetBytesPerCycle * cycle_;
    }
    // RECV: completes at max(its start, the tile's arrival).
    void recv(const EngineOp& op, double arrival);
    // SIGNAL: q += n now. WAIT: stall until n signals have completed, consume them.
    void signal(unsigned q, std::uint64_t n);
    void wait(unsigned q, std::uint64_t n);
    // BARRIER: the slice arrives at now(); every slice leaves at release().
    double barrier_release(double last_arrival) const;
    void resume_at(double t);
    // STAGE: no signal of an earlier op is pending any more (the new stage's WAITs count
    // only its own ops); the ops themselves go on, fenced: fence_wait() waits for them.
    void fence_and_clear_semaphores();
    // Paying a barrier (ACQUIRE, or STAGE/END with a debt): the scalar unit waits until
    // every op issued before the last STAGE has completed (its stores have landed).
    void fence_wait();

    // When the slice's last op completes (END).
    double end() const;
    const TimingCounters& counters() const { return ctr_; }

private:
    struct Pending {
        std::array<L1Range, 3> reads;
        L1Range writes;
        double end;
    };
    // The later of floor and the end of every pending op the new one conflicts with (RAW,
    // WAR, WAW on L1 ranges).
    double hazard_floor(const EngineOp& op, double floor) const;
    void span(std::uint8_t track, double start, double end)
    {
        if (spans_ && end > start) spans_->push_back({start, end, pc_, opcode_, track});
    }
    void retire_and_make_room();
    void record(const EngineOp& op, double end);
    void add_signal(int q, double when, std::uint64_t n);

    double cycle_;  // ns per cycle at this clock
    double scale_;  // clock / nominal
    double t_ = 0;  // scalar issue time, ns since the dispatch started
    std::array<double, static_cast<size_t>(Engine::count_)> free_{};
    double last_end_ = 0;
    double fence_ = 0;  // completion of the last op issued before the last STAGE
    // Engine ops that may not have completed, in order of completion time from
    // pending_[head_] (those before head_ have retired): the hazard scan starts from the
    // latest and stops at the first conflict.
    std::vector<Pending> pending_;
    std::size_t head_ = 0;
    // Per semaphore: signals not yet consumed, (completion time, count), sorted by time.
    std::array<SignalQueue, JAL_ISA_SEMAPHORES> sems_;
    std::array<std::uint64_t, 64> cache_tags_{};  // line address + 1; 0 = empty
    std::array<double, 64> cache_ready_{};        // when a prefetched line's fill lands
    TimingCounters ctr_;
    std::vector<TimingSpan>* spans_ = nullptr;
    std::uint32_t pc_ = 0;
    std::uint8_t opcode_ = 0;
};

}  // namespace jal::emu::exec
