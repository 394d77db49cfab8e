// STAGE (ISA 1.2): what a slice sees inside a stage (its rank, the stage's size, its
// arguments), that slices outside it branch past it, that BARRIER, SEND and RECV are the
// stage's, and that entering a stage fences the slice's stores (its barrier waits for them)
// and clears semaphores.
#include "isa_harness.hpp"

using namespace isatest;

namespace {

class IsaStage : public IsaTest {
protected:
    void SetUp() override { map(0, 2, 0); }
    Opts slices(std::uint32_t n)
    {
        Opts o;
        o.slices = n;
        o.args = kVa;
        return o;
    }
};

// x1 = mask (LI + LUI), x2 = argument offset, STAGE to `skip` instructions on.
std::vector<std::uint64_t> enter(std::uint64_t mask, std::int32_t args_offset, std::int32_t skip,
                                 bool ordered = false)
{
    return {LI(1, static_cast<std::int32_t>(mask)), LUI(1, static_cast<std::int32_t>(mask >> 32)),
            LI(2, args_offset), I(JAL_OP_STAGE, 1, 2, ordered ? 1 : 0, 0, skip)};
}

std::vector<std::uint64_t> operator+(std::vector<std::uint64_t> a,
                                     const std::vector<std::uint64_t>& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

TEST_F(IsaStage, MembersAreNumberedInTheStageAndReadTheirArguments)
{
    // Stage on dispatch slices 1, 3, 4 and 6 with arguments at +64. Members store
    // rank * 100 + count and their SR_ARGS at out + 16 * logical; the others branch past
    // and store their dispatch index + 1000 and their SR_ARGS.
    const std::uint64_t mask = 0b01011010;
    const auto store = std::vector<std::uint64_t>{
        MOVSR(5, JAL_SR_LOGICAL_SLICE), MULI(5, 5, 16), ADDI(5, 5, 1024), MOVSR(6, JAL_SR_ARGS),
        R(JAL_OP_ADD, 5, 5, 6),         ST(3, 5, 0),    ST(6, 5, 8)};
    // The out pointer is relative to SR_ARGS, which differs inside the stage: members
    // subtract the offset back (x6 - 64).
    const auto member = std::vector<std::uint64_t>{MOVSR(3, JAL_SR_SLICE),
                                                   MULI(3, 3, 100),
                                                   MOVSR(4, JAL_SR_NSLICES),
                                                   R(JAL_OP_ADD, 3, 3, 4),
                                                   MOVSR(5, JAL_SR_LOGICAL_SLICE),
                                                   MULI(5, 5, 16),
                                                   ADDI(5, 5, 1024 - 64),
                                                   MOVSR(6, JAL_SR_ARGS),
                                                   R(JAL_OP_ADD, 5, 5, 6),
                                                   ST(3, 5, 0),
                                                   ST(6, 5, 8),
                                                   END()};
    const auto outside = std::vector<std::uint64_t>{MOVSR(3, JAL_SR_SLICE), ADDI(3, 3, 1000)} +
                         store + std::vector<std::uint64_t>{END()};
    const auto code =
        enter(mask, 64, static_cast<std::int32_t>(member.size()) + 1) + member + outside;
    const auto r = run(code, slices(8));
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    std::uint32_t rank = 0;
    for (std::uint32_t i = 0; i < 8; ++i) {
        const auto v = read_vec<std::uint64_t>(kVa + 1024 + 16 * i, 2);
        if (mask >> i & 1) {
            EXPECT_EQ(v[0], rank * 100 + 4) << "slice " << i;
            EXPECT_EQ(v[1], kVa + 64) << "slice " << i << ": SR_ARGS + the stage's offset";
            rank++;
        } else {
            EXPECT_EQ(v[0], 1000 + i) << "slice " << i << ": back in the whole dispatch";
            EXPECT_EQ(v[1], kVa) << "slice " << i;
        }
    }
}

TEST_F(IsaStage, DispatchRegistersNumberTheWholeDispatchInsideAStage)
{
    // ISA 1.3: inside a stage on dispatch slices 1, 3, 4 and 6, SR_DISPATCH_SLICE and
    // SR_DISPATCH_NSLICES still give the slice's place in the whole dispatch of 8 (members
    // store index * 100 + count); outside, they equal SR_SLICE and SR_NSLICES (the others
    // store the difference, 0, + 1000).
    const std::uint64_t mask = 0b01011010;
    const auto out =
        std::vector<std::uint64_t>{MOVSR(5, JAL_SR_LOGICAL_SLICE), MULI(5, 5, 8), ADDI(5, 5, 1024),
                                   MOVSR(6, JAL_SR_ARGS), R(JAL_OP_ADD, 5, 5, 6)};
    const auto member =
        std::vector<std::uint64_t>{MOVSR(3, JAL_SR_DISPATCH_SLICE), MULI(3, 3, 100),
                                   MOVSR(4, JAL_SR_DISPATCH_NSLICES), R(JAL_OP_ADD, 3, 3, 4)} +
        out + std::vector<std::uint64_t>{ADDI(5, 5, -64), ST(3, 5, 0), END()};
    const auto outside =
        std::vector<std::uint64_t>{
            MOVSR(3, JAL_SR_DISPATCH_SLICE), MOVSR(4, JAL_SR_SLICE),
            R(JAL_OP_SUB, 3, 3, 4),          MOVSR(4, JAL_SR_DISPATCH_NSLICES),
            MOVSR(7, JAL_SR_NSLICES),        R(JAL_OP_SUB, 4, 4, 7),
            R(JAL_OP_ADD, 3, 3, 4),          ADDI(3, 3, 1000)} +
        out + std::vector<std::uint64_t>{ST(3, 5, 0), END()};
    const auto code =
        enter(mask, 64, static_cast<std::int32_t>(member.size()) + 1) + member + outside;
    const auto r = run(code, slices(8));
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    const auto v = read_vec<std::uint64_t>(kVa + 1024, 8);
    for (std::uint32_t i = 0; i < 8; ++i)
        EXPECT_EQ(v[i], mask >> i & 1 ? i * 100 + 8 : 1000) << "slice " << i;
}

TEST_F(IsaStage, ABarrierInsideAStageJoinsOnlyItsSlices)
{
    // Slices 0 and 1 meet at a barrier the other two never reach: with a barrier of the
    // whole dispatch this would deadlock.
    const auto code = enter(0b0011, 0, 3) + std::vector<std::uint64_t>{BARRIER(), END(), END()};
    const auto r = run(code, slices(4));
    EXPECT_EQ(r.report.status, JAL_STATUS_OK);
}

TEST_F(IsaStage, SendAndRecvNameStageRanks)
{
    // Stage on dispatch slices 2 and 5: rank 0 (slice 2) sends 1 x 4 I32 {7, 8, 9, 10} to
    // rank 1 (slice 5), which stores it at out.
    const auto body = std::vector<std::uint64_t>{MOVSR(3, JAL_SR_SLICE),
                                                 LI(10, 0),
                                                 LI(11, 1),
                                                 LI(12, 4),
                                                 TDESC(0, 10, 11, 12, 0, JAL_DT_I32),
                                                 LI(13, 7),
                                                 V(JAL_OP_VIOTA, 0, 13, 11),
                                                 BR(JAL_OP_BNE, 3, 0, 3),
                                                 SEND(0, 11, 0),  // to rank 1
                                                 END(),
                                                 RECV(0, 0, 1),  // from rank 0 (x0)
                                                 MOVSR(4, JAL_SR_ARGS),
                                                 TSTORE(0, 4, 0, 2),
                                                 WAIT(2, 1),
                                                 END()};
    const auto code = enter(0b100100, 0, static_cast<std::int32_t>(body.size()) + 1) + body +
                      std::vector<std::uint64_t>{END()};
    const auto r = run(code, slices(6));
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    EXPECT_EQ(read_vec<std::int32_t>(kVa, 4), (std::vector<std::int32_t>{7, 8, 9, 10}));
}

TEST_F(IsaStage, DispatchPeersAreNamedFromAnyStage)
{
    // ISA 1.3: inside a stage on dispatch slice 2 alone (rank 0), JAL_PEER_DISPATCH + 5 is
    // dispatch slice 5, outside the stage, which receives from JAL_PEER_DISPATCH + 2 and
    // stores what came at out. A plain peer 5 would be past the stage's one rank.
    const auto tile = std::vector<std::uint64_t>{LI(10, 0), LI(11, 1), LI(12, 4),
                                                 TDESC(0, 10, 11, 12, 0, JAL_DT_I32)};
    const auto member =
        std::vector<std::uint64_t>{LI(13, 7), V(JAL_OP_VIOTA, 0, 13, 11),
                                   LI(14, JAL_PEER_DISPATCH + 5), SEND(0, 14, 0), END()};
    const auto outside = std::vector<std::uint64_t>{MOVSR(3, JAL_SR_SLICE),
                                                    LI(15, 5),
                                                    BR(JAL_OP_BNE, 3, 15, 7),
                                                    LI(14, JAL_PEER_DISPATCH + 2),
                                                    RECV(0, 14, 1),
                                                    MOVSR(4, JAL_SR_ARGS),
                                                    TSTORE(0, 4, 0, 2),
                                                    WAIT(2, 1),
                                                    END(),
                                                    END()};
    const auto code =
        tile + enter(0b000100, 0, static_cast<std::int32_t>(member.size()) + 1) + member + outside;
    const auto r = run(code, slices(6));
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    EXPECT_EQ(read_vec<std::int32_t>(kVa, 4), (std::vector<std::int32_t>{7, 8, 9, 10}));
}

TEST_F(IsaStage, ADispatchPeerPastTheDispatchIsOutOfRange)
{
    const auto code =
        std::vector<std::uint64_t>{LI(10, 0), LI(11, 1), LI(12, 4),
                                   TDESC(0, 10, 11, 12, 0, JAL_DT_I32)} +
        enter(0b000001, 0, 3) +
        std::vector<std::uint64_t>{LI(14, JAL_PEER_DISPATCH + 6), SEND(0, 14, 0), END()};
    const auto r = run(code, slices(6));
    EXPECT_EQ(r.report.status, JAL_STATUS_OUT_OF_RANGE);
}

TEST_F(IsaStage, AStageFencesTheSlicesStoresAndPayingItsBarrierWaitsForThem)
{
    // A 64 KiB store takes its HBM latency and transfer time. Entering a stage does not wait
    // for it (the clock read right after STAGE is before its completion); paying the stage's
    // barrier does (the clock read after ACQUIRE is past it). Unordered, ACQUIRE owes nothing
    // and waits for nothing.
    const auto store = std::vector<std::uint64_t>{LI(10, 0),
                                                  LI(11, 64),
                                                  LI(12, 256),
                                                  TDESC(0, 10, 11, 12, 0, JAL_DT_F32),
                                                  MOVSR(4, JAL_SR_ARGS),
                                                  TSTORE(0, 4, 0, 0),
                                                  MOVSR(20, JAL_SR_CLOCK)};
    // 2 cycles a ns at 2 GHz: latency 500 ns plus 65 536 bytes at 240 bytes a ns.
    const double store_cycles = 2 * (500 + 65536 / 240.0);
    for (const bool ordered : {true, false}) {
        SCOPED_TRACE(ordered ? "ordered" : "unordered");
        const auto code = store + enter(1, 0, 1, ordered) +
                          std::vector<std::uint64_t>{MOVSR(21, JAL_SR_CLOCK), I(JAL_OP_ACQUIRE),
                                                     MOVSR(22, JAL_SR_CLOCK), END()};
        const auto r = run(code, slices(1));
        ASSERT_EQ(r.report.status, JAL_STATUS_OK);
        EXPECT_LT(static_cast<double>(r.slices[0].x[20]), store_cycles);
        EXPECT_LT(static_cast<double>(r.slices[0].x[21]), store_cycles);
        if (ordered)
            EXPECT_GE(static_cast<double>(r.slices[0].x[22]), store_cycles);
        else
            EXPECT_LT(static_cast<double>(r.slices[0].x[22]), store_cycles);
    }
}

TEST_F(IsaStage, EnteringAStageClearsTheSemaphores)
{
    // q3 signalled twice before the stage: inside it, WAIT q3 can never be satisfied.
    const auto before = std::vector<std::uint64_t>{I(JAL_OP_SIGNAL, 3, 0, 0, 0, 2)};
    const auto ok = run(before + std::vector<std::uint64_t>{WAIT(3, 1), END()}, slices(1));
    EXPECT_EQ(ok.report.status, JAL_STATUS_OK);
    const auto r = run(
        before + enter(1, 0, 3) + std::vector<std::uint64_t>{WAIT(3, 1), END(), END()}, slices(1));
    EXPECT_NE(r.report.status, JAL_STATUS_OK);
    EXPECT_EQ(r.slices[0].q[3], 0u);
}

TEST_F(IsaStage, ANonMemberBranchesToItsTarget)
{
    // Slice 1 is not in the stage {0}: it skips the TRAP inside it.
    const auto code = enter(1, 0, 3) + std::vector<std::uint64_t>{
                                           MOVSR(3, JAL_SR_SLICE),
                                           I(JAL_OP_TRAP, 0, 0, 0, 0, JAL_STATUS_BUSY), END()};
    // Slice 0 enters and traps; slice 1 ends. Nothing else faults.
    const auto r = run(code, slices(2));
    EXPECT_EQ(r.report.status, JAL_STATUS_BUSY);
    EXPECT_EQ(r.report.fault_slice, 0u);
    EXPECT_EQ(r.slices[1].state, static_cast<std::uint32_t>(jal::emu::exec::SliceRunState::ended));
}

// Stage 0 (slice 0) spends 4 000 cycles, then stores 42; stage 1 (slice 1) reads it after
// ACQUIRE. `ordered`: stage 1 is an ordered stage.
std::vector<std::uint64_t> producer_consumer(bool ordered)
{
    const std::vector<std::uint64_t> produce = {
        LI(3, 0),  LI(4, 2000),           ADDI(3, 3, 1), BR(JAL_OP_BLT, 3, 4, -1),
        LI(5, 42), MOVSR(6, JAL_SR_ARGS), ST(5, 6, 0)};
    const std::vector<std::uint64_t> consume = {MOVSR(6, JAL_SR_ARGS), I(JAL_OP_ACQUIRE),
                                                MOVSR(8, JAL_SR_CLOCK)};
    const std::vector<std::uint64_t> read =
        ordered ? std::vector<std::uint64_t>{LD(7, 6, 0), ST(7, 6, 8)}
                : std::vector<std::uint64_t>{};
    const auto s1 = consume + read;
    return enter(1, 0, static_cast<std::int32_t>(produce.size()) + 1) + produce +
           enter(2, 0, static_cast<std::int32_t>(s1.size()) + 1, ordered) + s1 +
           std::vector<std::uint64_t>{END()};
}

TEST_F(IsaStage, AnOrderedStageWaitsAtAcquireForTheStageBefore)
{
    const auto r = run(producer_consumer(true), slices(2));
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    EXPECT_EQ(r.slices[1].x[7], 42u) << "read after the store of the stage before";
    EXPECT_EQ(read_vec<std::uint64_t>(kVa + 8, 1)[0], 42u);
    EXPECT_GE(r.slices[1].x[8], 4000u) << "slice 1 left ACQUIRE after slice 0's loop";
}

TEST_F(IsaStage, AcquireWithoutAnOrderedStageDoesNotWait)
{
    const auto r = run(producer_consumer(false), slices(2));
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    EXPECT_LT(r.slices[1].x[8], 1000u);
    // Outside any stage ACQUIRE does nothing either.
    EXPECT_EQ(run({I(JAL_OP_ACQUIRE), END()}, slices(3)).report.status, JAL_STATUS_OK);
}

TEST_F(IsaStage, ASliceThatNeverAcquiresPaysAtItsNextStageOrEnd)
{
    // Ordered stage on slice 0 only; its kernel ends before ACQUIRE. Slice 1 is not in it.
    // Both owe the barrier; they pay at END and nothing deadlocks.
    const auto code = enter(1, 0, 2, true) + std::vector<std::uint64_t>{END(), END()};
    EXPECT_EQ(run(code, slices(2)).report.status, JAL_STATUS_OK);
    // Two ordered stages in a row, neither acquiring: each slice pays twice, in order.
    const auto two =
        enter(1, 0, 1, true) + enter(2, 0, 1, true) + std::vector<std::uint64_t>{END()};
    EXPECT_EQ(run(two, slices(2)).report.status, JAL_STATUS_OK);
}

}  // namespace
