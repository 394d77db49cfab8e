// The timing model, through whole kernels: modelled quantities (deterministic, never host
// time) against formulas built from the rates in isa/timing_rates.hpp. Timing-only mode
// runs the same timing without touching data, so the large shapes here cost nothing.
#include "emu/tile_exec/timing_rates.hpp"
#include "isa_harness.hpp"

#include "emu/chip/power_model.hpp"

using namespace isatest;
namespace rates = jal::emu::exec::rates;

namespace {

constexpr std::uint32_t kRows = 64, kCols = 1024;  // one F32 tile: 256 KiB
constexpr std::uint64_t kTileBytes = std::uint64_t{kRows} * kCols * 4;
constexpr std::int32_t kL1Slot = static_cast<std::int32_t>(kTileBytes);
// The GEMM streams 64 x 4096 F32 weight tiles (1 MiB): long enough that one load's
// latency hides behind one MMA, so two buffers suffice.
constexpr std::uint32_t kK = 4096;
constexpr std::uint64_t kWeightBytes = 64ull * kK * 4;
constexpr std::int32_t kGemmSlot = static_cast<std::int32_t>(kWeightBytes);

class IsaTiming : public IsaTest {
protected:
    Opts opts(std::uint32_t clock = 2000) const
    {
        Opts o;
        o.args = kVa;
        o.timing_only = true;
        o.clock_mhz = clock;
        return o;
    }
    // The slice's end (the report adds the fixed dispatch overhead).
    static double end_ns(const jal::emu::exec::DispatchResult& r) { return r.slices.at(0).end_ns; }
    // Argument 0: where the streamed tiles start.
    void stream_from(std::uint64_t va) { write_vec(kVa, std::vector<std::uint64_t>{va}); }
};

// x3 = argument 0 (where the tiles stream from); t0 and t1 kRows x kCols F32 at L1 0 and
// kL1Slot; then `rest`.
std::vector<std::uint64_t> two_tiles_then(std::initializer_list<std::uint64_t> rest)
{
    std::vector<std::uint64_t> code = {MOVSR(1, JAL_SR_ARGS),
                                       LD(3, 1),
                                       LI(14, kRows),
                                       LI(15, kCols),
                                       LI(10, 0),
                                       TDESC(0, 10, 14, 15, 0, JAL_DT_F32),
                                       LI(10, kL1Slot),
                                       TDESC(1, 10, 14, 15, 0, JAL_DT_F32)};
    code.insert(code.end(), rest);
    return code;
}

// Loads `loads` tiles back to back into four rotating L1 buffers, then waits for them.
std::vector<std::uint64_t> streaming_kernel(std::int32_t loads)
{
    return two_tiles_then({LI(10, 2 * kL1Slot), TDESC(2, 10, 14, 15, 0, JAL_DT_F32),
                           LI(10, 3 * kL1Slot), TDESC(3, 10, 14, 15, 0, JAL_DT_F32), LI(20, 0),
                           LI(21, loads / 4), TLOAD(0, 3, 0, 0), ADDI(3, 3, kL1Slot),
                           TLOAD(1, 3, 0, 0), ADDI(3, 3, kL1Slot), TLOAD(2, 3, 0, 0),
                           ADDI(3, 3, kL1Slot), TLOAD(3, 3, 0, 0), ADDI(3, 3, kL1Slot),
                           ADDI(20, 20, 1), BR(JAL_OP_BLT, 20, 21, -9), WAIT(0, loads), END()});
}

// Streams weight tiles B (64 x 1024) and accumulates acc (64 x 64) += A x B^T; `double_buffer`
// alternates two B registers so the next load overlaps this MMA.
std::vector<std::uint64_t> gemm_kernel(std::int32_t tiles, bool double_buffer)
{
    std::vector<std::uint64_t> c = {MOVSR(1, JAL_SR_ARGS),
                                    LD(3, 1),
                                    LI(14, 64),
                                    LI(15, kK),
                                    LI(16, 64),
                                    LI(10, 0),
                                    TDESC(0, 10, 14, 15, 0, JAL_DT_F32),  // A
                                    LI(10, kGemmSlot),
                                    TDESC(1, 10, 16, 15, 0, JAL_DT_F32),  // B0
                                    LI(10, 2 * kGemmSlot),
                                    TDESC(2, 10, 16, 15, 0, JAL_DT_F32),  // B1
                                    LI(10, 3 * kGemmSlot),
                                    TDESC(3, 10, 14, 16, 0, JAL_DT_F32),  // acc
                                    TLOAD(0, 3, 0, 0),
                                    ADDI(3, 3, kGemmSlot),
                                    LI(20, 0)};
    if (double_buffer) {
        c.insert(c.end(),
                 {TLOAD(1, 3, 0, 0), ADDI(3, 3, kGemmSlot), LI(21, tiles / 2), TLOAD(2, 3, 0, 0),
                  ADDI(3, 3, kGemmSlot), MMA(3, 0, 1), TLOAD(1, 3, 0, 0), ADDI(3, 3, kGemmSlot),
                  MMA(3, 0, 2), ADDI(20, 20, 1), BR(JAL_OP_BLT, 20, 21, -7)});
    } else {
        c.insert(c.end(), {LI(21, tiles), TLOAD(1, 3, 0, 0), ADDI(3, 3, kGemmSlot), MMA(3, 0, 1),
                           ADDI(20, 20, 1), BR(JAL_OP_BLT, 20, 21, -4)});
    }
    c.insert(c.end(), {END()});
    return c;
}

constexpr double load_ns(double bytes_per_ns, std::uint64_t bytes = kTileBytes,
                         double clock_mhz = 2000)
{
    return rates::kDmaOpCycles * 1000.0 / clock_mhz + bytes / bytes_per_ns;
}
// One MMA of the GEMM: 64 x 64 x 4096, F32, plus the pipeline's latency (the next MMA
// accumulates into the same tile, so it waits for it).
constexpr double mma_ns(double clock_mhz = 2000)
{
    return 2.0 * 64 * 64 * kK / (rates::kMmaF32 * 1e-9 * clock_mhz / 2000) +
           rates::kMmaLatencyCycles * 1000.0 / clock_mhz;
}
// The prologue: the argument's LD misses the scalar cache once.
constexpr double kArgLoadNs = rates::kLocalHbmLatencyNs;

TEST_F(IsaTiming, StreamingLoadsReachNearlyLocalHbmBandwidth)
{
    map(0, 16, 0);
    stream_from(kVa + kPage);
    const std::int32_t loads = 32;
    const auto r = run(streaming_kernel(loads), opts());
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    const double bytes = double(loads) * kTileBytes;
    // The DMA engine is busy back to back; the last load adds its latency.
    const double expect =
        kArgLoadNs + loads * load_ns(rates::kLocalHbmBytesPerNs) + rates::kLocalHbmLatencyNs;
    EXPECT_NEAR(end_ns(r), expect, 20);
    const double gbps = bytes / end_ns(r);
    EXPECT_GT(gbps, 0.95 * rates::kLocalHbmBytesPerNs);
    EXPECT_LE(gbps, rates::kLocalHbmBytesPerNs);
    EXPECT_EQ(r.report.hbm_bytes, bytes + 64);  // plus the argument's cache line
    EXPECT_EQ(r.report.modelled_ns,
              static_cast<std::uint64_t>(end_ns(r) + rates::kDispatchOverheadNs));
}

TEST_F(IsaTiming, RemoteHbmIsSlowerThanLocal)
{
    map(0, 1, 0);
    map(1, 16, 9);  // the tiles live in slice 9's HBM; the kernel runs on slice 0
    stream_from(kVa + kPage);
    const std::int32_t loads = 32;
    const auto remote = run(streaming_kernel(loads), opts());
    ASSERT_EQ(remote.report.status, JAL_STATUS_OK);
    const double expect =
        kArgLoadNs + loads * load_ns(rates::kRemoteHbmBytesPerNs) + rates::kRemoteHbmLatencyNs;
    EXPECT_NEAR(end_ns(remote), expect, 20);
    const double gbps = double(loads) * kTileBytes / end_ns(remote);
    EXPECT_GT(gbps, 0.95 * rates::kRemoteHbmBytesPerNs);
    EXPECT_LE(gbps, rates::kRemoteHbmBytesPerNs);
    // The same kernel on slice 9 itself streams locally.
    Opts o = opts();
    o.first_physical = 9;
    map(20, 1, 9);
    write_vec(kVa + 20 * kPage, std::vector<std::uint64_t>{kVa + kPage});
    o.args = kVa + 20 * kPage;
    const auto local = run(streaming_kernel(loads), o);
    ASSERT_EQ(local.report.status, JAL_STATUS_OK);
    EXPECT_GT(end_ns(remote), 3.5 * end_ns(local));
}

TEST_F(IsaTiming, DoubleBufferingOverlapsLoadsWithMma)
{
    map(0, 16, 0);
    stream_from(kVa + kPage);
    const std::int32_t tiles = 12;
    const auto db = run(gemm_kernel(tiles, true), opts());
    const auto serial = run(gemm_kernel(tiles, false), opts());
    ASSERT_EQ(db.report.status, JAL_STATUS_OK);
    ASSERT_EQ(serial.report.status, JAL_STATUS_OK);
    EXPECT_EQ(db.report.flops, serial.report.flops);
    const double load = load_ns(rates::kLocalHbmBytesPerNs, kWeightBytes),
                 lat = rates::kLocalHbmLatencyNs;
    const double mma = mma_ns();
    // Overlapped: the slower engine's total, plus getting going (argument, A and the first
    // B); serial: every load's time and latency, then its MMA.
    const double overlapped = tiles * std::max(load, mma) + kArgLoadNs + 2 * load + lat;
    EXPECT_LE(end_ns(db), overlapped * 1.02);
    EXPECT_GE(end_ns(db), tiles * std::max(load, mma));
    EXPECT_GE(end_ns(serial), tiles * (load + lat + mma));
    EXPECT_LT(end_ns(db), 0.6 * end_ns(serial));
}

TEST_F(IsaTiming, LowerClockSlowsComputeButNotHbm)
{
    map(0, 16, 0);
    stream_from(kVa + kPage);
    const std::int32_t tiles = 16;
    const auto fast = run(gemm_kernel(tiles, true), opts(2000));
    const auto slow = run(gemm_kernel(tiles, true), opts(1000));
    ASSERT_EQ(slow.report.status, JAL_STATUS_OK);
    // MMA-bound: the MMAs take twice as long at half the clock; the loads that start the
    // kernel do not.
    EXPECT_NEAR(end_ns(slow) - end_ns(fast), tiles * (mma_ns(1000) - mma_ns(2000)),
                0.02 * end_ns(fast));
    const double ratio = end_ns(slow) / end_ns(fast);
    EXPECT_GT(ratio, 1.85);
    EXPECT_LE(ratio, 2.0);
    // HBM has its own clock: a streaming kernel only pays the DMA engine's op overhead.
    const auto sfast = run(streaming_kernel(16), opts(2000));
    const auto sslow = run(streaming_kernel(16), opts(1000));
    EXPECT_NEAR(end_ns(sslow) - end_ns(sfast), 16 * rates::kDmaOpCycles * (1.0 - 0.5) + 64 * 0.5,
                40);
    EXPECT_LT(end_ns(sslow), 1.05 * end_ns(sfast));
}

TEST_F(IsaTiming, TimingOnlyGivesTheSameTimeAsARealRun)
{
    map(0, 16, 0);
    stream_from(kVa + kPage);
    Opts real = opts();
    real.timing_only = false;
    const auto a = run(gemm_kernel(2, true), opts());
    const auto b = run(gemm_kernel(2, true), real);
    ASSERT_EQ(b.report.status, JAL_STATUS_OK);
    EXPECT_EQ(a.report.modelled_ns, b.report.modelled_ns);
    EXPECT_EQ(a.report.flops, b.report.flops);
    EXPECT_EQ(a.report.hbm_bytes, b.report.hbm_bytes);
    EXPECT_EQ(a.report.energy_nj, b.report.energy_nj);
}

TEST_F(IsaTiming, EnergyFollowsTheChosenCosts)
{
    map(0, 16, 0);
    stream_from(kVa + kPage);
    const auto r = run(streaming_kernel(16), opts());
    const double insn_pj = r.report.instructions * rates::kPjPerInstruction;
    const double hbm_pj = r.report.hbm_bytes * rates::kPjPerHbmByte;
    EXPECT_NEAR(static_cast<double>(r.report.energy_nj), (insn_pj + hbm_pj) / 1000, 1.0);
}

TEST_F(IsaTiming, ScalarInstructionsCostOneIssueCycleAndTheirEnergyAcrossQuanta)
{
    // 3 x 50 000 + 4 instructions: more than two of the executor's quanta (it yields and
    // comes back), all of them plain scalar ones (run on the interpreter's fast path).
    const std::vector<std::uint64_t> code = {
        LI(1, 0), LI(2, 50000), ADDI(1, 1, 1), R(JAL_OP_XOR, 3, 3, 1), BR(JAL_OP_BLT, 1, 2, -2),
        END()};
    Opts o = opts(1000);  // 1 ns a cycle
    const auto r = run(code, o);
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    const std::uint64_t n = 2 + 3 * 50000 + 1;
    EXPECT_EQ(r.report.instructions, n);
    EXPECT_GT(n, 2 * jal::emu::exec::Executor::kQuantum);
    EXPECT_EQ(r.slices.at(0).x[1], 50000u);
    EXPECT_DOUBLE_EQ(end_ns(r), static_cast<double>(n));
    EXPECT_EQ(r.report.modelled_ns, static_cast<std::uint64_t>(n + rates::kDispatchOverheadNs));
    EXPECT_NEAR(static_cast<double>(r.report.energy_nj), n * rates::kPjPerInstruction / 1000, 1.0);
}

// A TREAD waits for the engine op that writes its element (a load into its tile), a TWRITE
// for the one that reads it (a store from its tile); an element of another tile waits for
// nothing. The clock read after each tells: the difference is the op's time left, to the
// cycle (one-cycle issues at 2 GHz; the DMA's descriptor cycles, its bytes at the local
// HBM rate and its latency).
TEST_F(IsaTiming, TileElementAccessesWaitForTheEngineOpsOnTheirElement)
{
    map(0, 1, 0);
    stream_from(kVa + 4096);
    const double cycle = 0.5;
    const double op_ns = rates::kDmaOpCycles * cycle +
                         static_cast<double>(kTileBytes) / rates::kLocalHbmBytesPerNs +
                         rates::kLocalHbmLatencyNs;
    for (const std::uint8_t dma : {JAL_OP_TLOAD, JAL_OP_TSTORE}) {
        const std::uint8_t access = dma == JAL_OP_TLOAD ? JAL_OP_TREAD : JAL_OP_TWRITE;
        auto clock_after = [&](unsigned tile) {
            const auto r =
                run(two_tiles_then({LI(19, 1), I(dma, 0, 3, 0, 0, 0), I(access, 5, tile, 19, 0, 7),
                                    MOVSR(6, JAL_SR_CLOCK), WAIT(0, 1), END()}),
                    opts());
            EXPECT_EQ(r.report.status, JAL_STATUS_OK);
            return static_cast<double>(r.slices.at(0).x[6]);
        };
        SCOPED_TRACE(dma);
        const double waited = clock_after(0), free = clock_after(1);
        // The access issues a cycle after the op: it waits the op's time but that cycle.
        EXPECT_NEAR((waited - free) * cycle, op_ns - cycle, cycle);
    }
}

TEST_F(IsaTiming, ABranchOutOfTheProgramFaultsAtItsOwnIssue)
{
    // The fault's time is the branch's issue: three cycles at 1 ns.
    const auto r = run({LI(1, 1), ADDI(1, 1, 1), BR(JAL_OP_BNE, 1, 0, 40), END()}, opts(1000));
    EXPECT_EQ(r.report.status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(r.report.fault_pc, 2u);
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_BNE);
    EXPECT_EQ(r.report.fault_address, 42u);
    EXPECT_EQ(r.report.instructions, 3u);
    EXPECT_DOUBLE_EQ(end_ns(r), 3.0);
}

TEST(DispatchPower, DispatchEnergyIsDrawnAtTheDispatchsPower)
{
    jal::emu::PowerModel m(0, 25);
    const double dt = 250e-6;
    jal::emu::PowerInputs in;
    in.slices_powered = 64;
    m.step(dt, in);
    const double idle = m.power_w();
    // Tolerance: leakage rises slightly as the extra power warms the junction.
    const double tol = 0.2;
    // 1 mJ over 100 µs (10 W) is spent within one 250 µs step: 4 W on average.
    m.add_dispatch_energy(1e-3, 100e-6);
    m.step(dt, in);
    EXPECT_NEAR(m.power_w() - idle, 4.0, tol);
    m.step(dt, in);
    EXPECT_NEAR(m.power_w(), idle, tol);
    // 50 mJ over 1 ms: 50 W for four steps.
    m.add_dispatch_energy(50e-3, 1e-3);
    for (double expect : {50.0, 50.0, 50.0, 50.0, 0.0}) {
        m.step(dt, in);
        EXPECT_NEAR(m.power_w() - idle, expect, tol);
    }
    // Two concurrent dispatches add up, to the cap at most.
    m.add_dispatch_energy(1.0, 1e-3);  // 1000 W: capped
    m.add_dispatch_energy(0.1, 1.0);   // 0.1 W
    m.step(dt, in);
    EXPECT_NEAR(m.power_w() - idle, jal::emu::PowerModel::kDispatchMaxWatts, tol);
}

}  // namespace
