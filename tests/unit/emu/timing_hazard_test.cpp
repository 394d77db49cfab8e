// The timing model's hazard rule and in-flight limit (emu/tile_exec/timing.cpp), against a
// plain reference written from the rule itself: an engine op starts no earlier than the
// scalar issue time, its engine's free time and the completion of every recorded op it
// conflicts with on L1 (read after write, write after write, write after read); an op
// completed by the issue time is forgotten; with 64 ops in flight the scalar unit waits for
// the first to complete. SliceTiming keeps its ops in completion order and stops its scan at
// the first conflict: random op streams, with out-of-order completions (DMA latency against
// matrix and vector ops, late message arrivals) and full queues, must time identically.
#include "emu/tile_exec/timing.hpp"
#include "emu/tile_exec/timing_rates.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <vector>

namespace {

using namespace jal::emu::exec;
namespace r = jal::emu::exec::rates;

constexpr std::uint32_t kMhz = 2000;
constexpr double kCycle = 1000.0 / kMhz;

bool conflicts(const std::array<L1Range, 3>& p_reads, const L1Range& p_writes, const EngineOp& op)
{
    const bool writes = !op.writes.empty();
    if (writes && p_writes.overlaps(op.writes)) return true;  // WAW
    for (const L1Range& rd : op.reads)
        if (p_writes.overlaps(rd)) return true;  // RAW
    if (writes)
        for (const L1Range& rd : p_reads)
            if (rd.overlaps(op.writes)) return true;  // WAR
    return false;
}

// Every recorded op in a list in issue order, scanned whole.
struct Reference {
    struct Op {
        std::array<L1Range, 3> reads;
        L1Range writes;
        double end;
    };
    double t = 0;
    std::array<double, 4> free{};
    std::vector<Op> ops;

    double floor(const EngineOp& op, double f) const
    {
        for (const Op& p : ops)
            if (conflicts(p.reads, p.writes, op)) f = std::max(f, p.end);
        return f;
    }
    void retire()
    {
        std::erase_if(ops, [&](const Op& p) { return p.end <= t; });
        while (ops.size() >= r::kOpsInFlight) {
            double first = ops[0].end;
            for (const Op& p : ops) first = std::min(first, p.end);
            t = std::max(t, first);
            std::erase_if(ops, [&](const Op& p) { return p.end <= t; });
        }
    }
    void record(const EngineOp& op, double end)
    {
        const bool any = !op.writes.empty() || !op.reads[0].empty() || !op.reads[1].empty() ||
                         !op.reads[2].empty();
        if (any) ops.push_back({op.reads, op.writes, end});
    }
    // DMA with local bytes only, or a matrix or vector op with no work: latency alone.
    double engine_op(const EngineOp& op)
    {
        retire();
        const auto e = static_cast<std::size_t>(op.engine);
        const double start = floor(op, std::max(t, free[e]));
        double busy = 0, latency = 0;
        if (op.engine == Engine::dma) {
            busy = r::kDmaOpCycles * kCycle + op.traffic.local / r::kLocalHbmBytesPerNs;
            latency = r::kLocalHbmLatencyNs;
        } else {
            latency = (op.engine == Engine::matrix ? r::kMmaLatencyCycles : r::kVecLatencyCycles) *
                      kCycle;
        }
        free[e] = start + busy;
        record(op, start + busy + latency);
        return start + busy + latency;
    }
    void recv(const EngineOp& op, double arrival)
    {
        retire();
        record(op, std::max(floor(op, t), arrival));
    }
    void tile_access(L1Range range, bool write)
    {
        EngineOp op;
        (write ? op.writes : op.reads[0]) = range;
        t = floor(op, t);
    }
};

// A range of 1 to 4 granules of 256 bytes in a 4 KiB window (so ops often meet), or none.
L1Range random_range(std::mt19937& rng, int none_in)
{
    if (std::uniform_int_distribution<int>(0, none_in - 1)(rng) == 0) return {};
    const std::uint32_t lo = std::uniform_int_distribution<std::uint32_t>(0, 15)(rng) * 256;
    const std::uint32_t len = std::uniform_int_distribution<std::uint32_t>(1, 4)(rng) * 256;
    return {lo, lo + len};
}

EngineOp random_op(std::mt19937& rng)
{
    EngineOp op;
    const int kind = std::uniform_int_distribution<int>(0, 2)(rng);
    op.engine = kind == 0 ? Engine::dma : kind == 1 ? Engine::matrix : Engine::vector;
    for (L1Range& rd : op.reads) rd = random_range(rng, 2);
    op.writes = random_range(rng, 3);
    if (op.engine == Engine::dma)
        op.traffic.local = std::uniform_int_distribution<std::uint64_t>(0, 1 << 20)(rng);
    return op;
}

// `steps` random actions; `issue_gap` bounds the scalar cycles between two. With `ops_only`
// every action is an engine op (no TREAD/TWRITE or RECV, which wait and so drain the queue).
void run_stream(unsigned seed, int steps, int issue_gap, bool ops_only = false)
{
    std::mt19937 rng(seed);
    SliceTiming timing(kMhz);
    Reference ref;
    for (int i = 0; i < steps; i++) {
        const int cycles = std::uniform_int_distribution<int>(0, issue_gap)(rng);
        for (int c = 0; c < cycles; c++) {
            timing.issue();
            ref.t += kCycle;  // one cycle at a time, as issue() adds them
        }
        const int action = ops_only ? 0 : std::uniform_int_distribution<int>(0, 9)(rng);
        if (action < 7) {
            const EngineOp op = random_op(rng);
            ASSERT_EQ(timing.engine_op(op), ref.engine_op(op)) << "seed " << seed << " step " << i;
        } else if (action < 8) {
            EngineOp op;
            op.engine = Engine::network;
            op.writes = random_range(rng, 4);
            const double arrival =
                ref.t + std::uniform_int_distribution<int>(0, 4000)(rng) * kCycle;
            timing.recv(op, arrival);
            ref.recv(op, arrival);
        } else {
            const L1Range range = random_range(rng, 8);
            const bool write = action == 9;
            timing.scalar_tile_access(range, write);
            ref.tile_access(range, write);
        }
        ASSERT_EQ(timing.now(), ref.t) << "seed " << seed << " step " << i;
    }
}

TEST(TimingHazards, MatchThePlainRuleOnRandomStreams)
{
    for (unsigned seed = 1; seed <= 20; seed++) run_stream(seed, 3000, 40);
}

TEST(TimingHazards, MatchThePlainRuleWithTheQueueFull)
{
    // Engine ops alone, a cycle or two apart, a third of them long DMAs: 64 ops in flight
    // most of the time.
    for (unsigned seed = 100; seed <= 110; seed++) run_stream(seed, 5000, 2, true);
}

}  // namespace
