// Slices together: SEND/RECV FIFOs, BARRIER, deadlock detection, the earliest-fault rule,
// and determinism whatever the number of host threads.
#include "isa_harness.hpp"

using namespace isatest;

namespace {

class IsaNetwork : public IsaTest {
protected:
    void SetUp() override { map(0, 2, 0); }
};

// Ring: slice i puts i*10 + k into a 1 x 4 I32 tile (VIOTA), sends it to i+1, receives
// from i-1, and stores what it got at out + 16 * i.
std::vector<std::uint64_t> ring_kernel()
{
    return {
        MOVSR(1, JAL_SR_ARGS),
        MOVSR(2, JAL_SR_SLICE),
        MOVSR(3, JAL_SR_NSLICES),
        ADDI(4, 2, 1),
        R(JAL_OP_REMU, 4, 4, 3),  // next
        R(JAL_OP_ADD, 5, 2, 3),
        ADDI(5, 5, -1),
        R(JAL_OP_REMU, 5, 5, 3),  // previous
        LI(10, 0),
        LI(11, 1),
        LI(12, 4),
        LI(13, 64),
        TDESC(0, 10, 11, 12, 0, JAL_DT_I32),
        TDESC(1, 13, 11, 12, 0, JAL_DT_I32),
        MULI(6, 2, 10),
        LI(7, 1),
        V(JAL_OP_VIOTA, 0, 6, 7),
        SEND(0, 4, 0),
        RECV(1, 5, 1),
        WAIT(1, 1),
        WAIT(0, 1),
        MULI(8, 2, 16),
        R(JAL_OP_ADD, 8, 8, 1),
        TSTORE(1, 8, 0, 2),
        WAIT(2, 1),
        END(),
    };
}

TEST_F(IsaNetwork, SendRecvRingAmongEightSlices)
{
    Opts o;
    o.slices = 8;
    o.args = kVa;
    const auto r = run(ring_kernel(), o);
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    for (int i = 0; i < 8; ++i) {
        const int from = (i + 7) % 8;
        EXPECT_EQ(
            read_vec<std::int32_t>(kVa + 16 * i, 4),
            (std::vector<std::int32_t>{from * 10, from * 10 + 1, from * 10 + 2, from * 10 + 3}))
            << "slice " << i;
    }
}

TEST_F(IsaNetwork, MessagesFromOneSenderArriveInOrder)
{
    // Slice 0 sends 1 x 1 tiles holding 1..5; slice 1 receives them and stores each.
    Opts o;
    o.slices = 2;
    o.args = kVa;
    const auto r = run(
        {MOVSR(1, JAL_SR_ARGS), MOVSR(2, JAL_SR_SLICE), LI(10, 0), LI(11, 1),
         TDESC(0, 10, 11, 11, 0, JAL_DT_I32), LI(3, 1), LI(4, 6), LI(5, 0), BR(JAL_OP_BNE, 2, 0, 6),
         // slice 0: for v in 1..5: fill, send to 1
         V(JAL_OP_VIOTA, 0, 3, 5), SEND(0, 11, 0), ADDI(3, 3, 1), BR(JAL_OP_BLT, 3, 4, -3), END(),
         // slice 1: receive 5, storing each at args + 4k
         RECV(0, 5, 0), TSTORE(0, 1, 0, 1), ADDI(1, 1, 4), ADDI(3, 3, 1), BR(JAL_OP_BLT, 3, 4, -4),
         END()},
        o);
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    EXPECT_EQ(read_vec<std::int32_t>(kVa, 5), (std::vector<std::int32_t>{1, 2, 3, 4, 5}));
}

TEST_F(IsaNetwork, BarrierReleasesEverySliceAtTheSameModelledTime)
{
    // Slice i spins i*100 iterations, then all meet; the clock read right after the
    // barrier is the same everywhere, and later than the slowest slice's arrival.
    Opts o;
    o.slices = 4;
    const auto r = run({MOVSR(2, JAL_SR_SLICE), MULI(3, 2, 100), LI(4, 0), BR(JAL_OP_BGE, 4, 3, 3),
                        ADDI(4, 4, 1), JMP(-2), MOVSR(5, JAL_SR_CLOCK), BARRIER(),
                        MOVSR(6, JAL_SR_CLOCK), END()},
                       o);
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    const std::uint64_t after = r.slices[0].x[6];
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(r.slices[i].x[6], after);
        EXPECT_GT(after, r.slices[i].x[5]);
    }
    EXPECT_GE(after, r.slices[3].x[5] + 600);  // the barrier's latency after the last arrival
}

TEST_F(IsaNetwork, SlicesWaitingForEachOtherAreADeadlock)
{
    Opts o;
    o.slices = 3;
    // Every slice receives from the next before sending.
    auto c = ring_kernel();
    std::swap(c[17], c[18]);  // RECV before SEND
    const auto r = run(c, o);
    EXPECT_EQ(r.report.status, JAL_STATUS_DEADLOCK);
    EXPECT_EQ(r.report.fault_slice, 0u);
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_RECV);

    // A WAIT for signals that were never requested can never be satisfied.
    const auto w = run({TDESC(0, 0, 0, 0, 0, 0), END()});  // (fault, not deadlock: rows 0)
    EXPECT_EQ(w.report.status, JAL_STATUS_INVALID_FIELD);
    const auto w2 = run({I(JAL_OP_SIGNAL, 3, 0, 0, 0, 1), WAIT(3, 2), END()});
    EXPECT_EQ(w2.report.status, JAL_STATUS_DEADLOCK);
    EXPECT_EQ(w2.report.fault_pc, 1u);

    // A barrier one slice never reaches.
    o.slices = 2;
    const auto b = run({MOVSR(2, JAL_SR_SLICE), BR(JAL_OP_BNE, 2, 0, 2), BARRIER(), END()}, o);
    EXPECT_EQ(b.report.status, JAL_STATUS_DEADLOCK);
    EXPECT_EQ(b.report.fault_slice, 0u);
}

TEST_F(IsaNetwork, TheEarliestFaultInModelledTimeIsReported)
{
    // Slice 1 faults after a few instructions; slice 0 loops long, then faults. Whatever
    // the host runs first, slice 1's fault is reported.
    Opts o;
    o.slices = 2;
    for (unsigned threads : {1u, 3u}) {
        o.threads = threads;
        const auto r =
            run({MOVSR(2, JAL_SR_SLICE), BR(JAL_OP_BEQ, 2, 0, 2),
                 I(JAL_OP_TRAP, 0, 0, 0, 0, JAL_STATUS_BUSY), LI(4, 0), LI(5, 5000), ADDI(4, 4, 1),
                 BR(JAL_OP_BLT, 4, 5, -1), I(JAL_OP_TRAP, 0, 0, 0, 0, JAL_STATUS_INTERNAL), END()},
                o);
        EXPECT_EQ(r.report.status, JAL_STATUS_BUSY);
        EXPECT_EQ(r.report.fault_slice, 1u);
        EXPECT_EQ(r.report.fault_pc, 2u);
    }
}

TEST_F(IsaNetwork, ResultsAndModelledTimeDoNotDependOnHostThreads)
{
    // The ring plus an MMA per slice, 16 slices, on 1 and 4 threads, three times each.
    map(2, 1, 5);
    Opts o;
    o.slices = 16;
    o.args = kVa;
    std::vector<jal::emu::exec::DispatchResult> runs;
    std::vector<std::vector<std::int32_t>> outs;
    for (unsigned threads : {1u, 4u, 1u, 4u, 2u, 4u}) {
        o.threads = threads;
        write_vec(kVa, std::vector<std::int32_t>(64, -1));
        runs.push_back(run(ring_kernel(), o));
        outs.push_back(read_vec<std::int32_t>(kVa, 64));
    }
    for (std::size_t i = 1; i < runs.size(); ++i) {
        EXPECT_EQ(outs[i], outs[0]);
        EXPECT_EQ(runs[i].report.status, JAL_STATUS_OK);
        EXPECT_EQ(runs[i].report.modelled_ns, runs[0].report.modelled_ns);
        EXPECT_EQ(runs[i].report.energy_nj, runs[0].report.energy_nj);
        EXPECT_EQ(runs[i].report.instructions, runs[0].report.instructions);
        for (std::size_t s = 0; s < runs[i].slices.size(); ++s)
            EXPECT_EQ(runs[i].slices[s].end_ns, runs[0].slices[s].end_ns);
    }
}

}  // namespace
