// SENDALL and RECVALL (ISA 1.6; a group given as a mask of dispatch slices, 1.7): an
// all-gather in one instruction a slice, checked against the concatenation computed here,
// against the SENDs and RECVs it stands for (the same messages: either side may use either),
// inside a stage and across the dispatch, and its faults.
#include "isa_harness.hpp"

#include <numeric>

using namespace isatest;

namespace {

inline std::uint64_t SENDALL(unsigned t, unsigned rgroup, unsigned q)
{
    return I(JAL_OP_SENDALL, t, rgroup, 0, 0, static_cast<std::int32_t>(q));
}
inline std::uint64_t RECVALL(unsigned t, unsigned rgroup, unsigned q)
{
    return I(JAL_OP_RECVALL, t, rgroup, 0, 0, static_cast<std::int32_t>(q));
}
// The group x[rmask] a mask of dispatch slices (JAL_GROUP_MASK).
inline std::uint64_t SENDALL_MASK(unsigned t, unsigned rmask, unsigned q)
{
    return I(JAL_OP_SENDALL, t, rmask, 0, 0, static_cast<std::int32_t>(q | JAL_GROUP_MASK));
}
inline std::uint64_t RECVALL_MASK(unsigned t, unsigned rmask, unsigned q)
{
    return I(JAL_OP_RECVALL, t, rmask, 0, 0, static_cast<std::int32_t>(q | JAL_GROUP_MASK));
}

constexpr std::uint32_t kRows = 2, kOut = 4096;  // the gathered tile's L1 offset

// Slice k's share: 1 + k % 3 columns of I32, every row k * 100 + column.
std::uint32_t share_cols(std::uint32_t k)
{
    return 1 + k % 3;
}
std::uint32_t total_cols(std::uint32_t slices)
{
    std::uint32_t t = 0;
    for (std::uint32_t k = 0; k < slices; ++k) t += share_cols(k);
    return t;
}
// What every slice should hold after the all-gather: the shares side by side, by rank.
std::vector<std::int32_t> expected_rows(std::uint32_t slices)
{
    std::vector<std::int32_t> row;
    for (std::uint32_t k = 0; k < slices; ++k)
        for (std::uint32_t j = 0; j < share_cols(k); ++j)
            row.push_back(static_cast<std::int32_t>(k * 100 + j));
    std::vector<std::int32_t> all;
    for (std::uint32_t r = 0; r < kRows; ++r) all.insert(all.end(), row.begin(), row.end());
    return all;
}

// Registers after it: x1 args, x2 slice, x3 slices, x12 the total columns, x13 its row bytes;
// t0 this slice's share (filled), t1 the whole rows at kOut.
std::vector<std::uint64_t> prologue(std::uint32_t slices)
{
    const auto total = static_cast<std::int32_t>(total_cols(slices));
    return {MOVSR(1, JAL_SR_ARGS),
            MOVSR(2, JAL_SR_SLICE),
            MOVSR(3, JAL_SR_NSLICES),
            LI(9, 3),
            R(JAL_OP_REMU, 4, 2, 9),
            ADDI(4, 4, 1),  // this slice's columns
            LI(10, 0),
            LI(11, kRows),
            TDESC(0, 10, 11, 4, 0, JAL_DT_I32),
            MULI(6, 2, 100),
            LI(7, 1),
            V(JAL_OP_VIOTA, 0, 6, 7),
            LI(12, total),
            LI(13, total * 4),
            LI(10, kOut),
            TDESC(1, 10, 11, 12, 0, JAL_DT_I32)};
}
// Stores t1 at args + slice * its bytes, then ends.
std::vector<std::uint64_t> epilogue()
{
    return {R(JAL_OP_MUL, 8, 2, 13), MULI(8, 8, kRows), R(JAL_OP_ADD, 8, 8, 1),
            TSTORE(1, 8, 13, 2),     WAIT(2, 1),        END()};
}
std::vector<std::uint64_t> join(std::vector<std::vector<std::uint64_t>> parts)
{
    std::vector<std::uint64_t> code;
    for (auto& p : parts) code.insert(code.end(), p.begin(), p.end());
    return code;
}

// The all-gather by SEND to each slice and a RECV from each into its columns (no RECVALL,
// no SENDALL): unrolled for `slices`.
std::vector<std::uint64_t> sends(std::uint32_t slices)
{
    std::vector<std::uint64_t> c;
    for (std::uint32_t k = 0; k < slices; ++k) {
        c.push_back(LI(5, static_cast<std::int32_t>(k)));
        c.push_back(SEND(0, 5, 0));
    }
    return c;
}
std::vector<std::uint64_t> receives(std::uint32_t slices)
{
    std::vector<std::uint64_t> c;
    std::uint32_t col = 0;
    const std::uint32_t stride = total_cols(slices) * 4;
    for (std::uint32_t k = 0; k < slices; ++k) {
        c.push_back(LI(5, static_cast<std::int32_t>(k)));
        c.push_back(LI(14, static_cast<std::int32_t>(kOut + col * 4)));
        c.push_back(LI(15, static_cast<std::int32_t>(share_cols(k))));
        c.push_back(TDESC(2, 14, 11, 15, stride, JAL_DT_I32));
        c.push_back(RECV(2, 5, 1));
        c.push_back(WAIT(1, 1));
        col += share_cols(k);
    }
    return c;
}

class IsaAllGather : public IsaTest {
protected:
    void SetUp() override { map(0, 1, 0); }

    // Runs `code` on `slices` slices and checks every slice's stored rows.
    jal::emu::exec::DispatchResult run_and_check(const std::vector<std::uint64_t>& code,
                                                 std::uint32_t slices, unsigned threads = 2)
    {
        Opts o;
        o.slices = slices;
        o.args = kVa;
        o.threads = threads;
        const std::size_t n = kRows * total_cols(slices);
        write_vec(kVa, std::vector<std::int32_t>(n * slices, -1));
        auto r = run(code, o);
        EXPECT_EQ(r.report.status, JAL_STATUS_OK) << "fault at pc " << r.report.fault_pc;
        for (std::uint32_t i = 0; i < slices; ++i)
            EXPECT_EQ(read_vec<std::int32_t>(kVa + i * n * 4, n), expected_rows(slices))
                << "slice " << i << " of " << slices;
        return r;
    }
};

TEST_F(IsaAllGather, EverySliceGetsEveryShareSideBySide)
{
    for (std::uint32_t slices : {1u, 3u, 8u}) {
        const auto code = join({prologue(slices),
                                {SENDALL(0, 0, 0), RECVALL(1, 0, 1), WAIT(1, 1), WAIT(0, 1)},
                                epilogue()});
        run_and_check(code, slices);
    }
}

TEST_F(IsaAllGather, IsTheSendsAndReceivesItStandsFor)
{
    const std::uint32_t slices = 5;
    const auto ref = run_and_check(join({prologue(slices),
                                         sends(slices),
                                         receives(slices),
                                         {WAIT(0, static_cast<std::int32_t>(slices))},
                                         epilogue()}),
                                   slices);
    // SENDALL's tiles taken by RECVs; SENDs' tiles taken by RECVALL.
    run_and_check(
        join({prologue(slices), {SENDALL(0, 0, 0)}, receives(slices), {WAIT(0, 1)}, epilogue()}),
        slices);
    const auto both =
        run_and_check(join({prologue(slices),
                            {SENDALL(0, 0, 0), RECVALL(1, 0, 1), WAIT(1, 1), WAIT(0, 1)},
                            epilogue()}),
                      slices);
    // The same bytes cross the network in fewer instructions.
    EXPECT_LT(both.report.instructions, ref.report.instructions);
    run_and_check(join({prologue(slices),
                        sends(slices),
                        {RECVALL(1, 0, 1), WAIT(1, 1)},
                        {WAIT(0, static_cast<std::int32_t>(slices))},
                        epilogue()}),
                  slices);
}

TEST_F(IsaAllGather, ResultsAndModelledTimeDoNotDependOnHostThreads)
{
    const std::uint32_t slices = 12;
    const auto code = join({prologue(slices),
                            {SENDALL(0, 0, 0), RECVALL(1, 0, 1), WAIT(1, 1), WAIT(0, 1)},
                            epilogue()});
    const auto first = run_and_check(code, slices, 1);
    for (unsigned threads : {4u, 2u, 3u}) {
        const auto r = run_and_check(code, slices, threads);
        EXPECT_EQ(r.report.modelled_ns, first.report.modelled_ns);
        EXPECT_EQ(r.report.energy_nj, first.report.energy_nj);
        for (std::size_t s = 0; s < r.slices.size(); ++s)
            EXPECT_EQ(r.slices[s].end_ns, first.slices[s].end_ns);
    }
}

TEST_F(IsaAllGather, CompletesWhenTheLastShareHasArrived)
{
    // Slice 2 spins before it sends: every slice's RECVALL completes after that, at least the
    // network's latency after slice 2's SENDALL issued.
    const std::uint32_t slices = 3;
    auto code = join({prologue(slices),
                      {LI(19, 2), BR(JAL_OP_BNE, 2, 19, 5), LI(20, 0), LI(21, 2000),
                       ADDI(20, 20, 1), BR(JAL_OP_BLT, 20, 21, -1)},
                      {MOVSR(22, JAL_SR_CLOCK), SENDALL(0, 0, 0), RECVALL(1, 0, 1), WAIT(1, 1),
                       MOVSR(23, JAL_SR_CLOCK), WAIT(0, 1)},
                      epilogue()});
    const auto r = run_and_check(code, slices);
    const std::uint64_t late_send = r.slices[2].x[22];
    EXPECT_GT(late_send, r.slices[0].x[22] + 2000);  // it did spin
    for (std::uint32_t i = 0; i < slices; ++i)
        EXPECT_GE(r.slices[i].x[23], late_send + 400) << "slice " << i;  // 200 ns at 2 GHz
}

TEST_F(IsaAllGather, BadGroupsShapesAndFormatsFault)
{
    const std::uint32_t slices = 3;
    Opts o;
    o.slices = slices;
    o.args = kVa;
    // A group that is neither the stage's (0) nor the dispatch's.
    auto bad_group = join({prologue(slices), {LI(16, 5), SENDALL(0, 16, 0), END()}});
    auto r = run(bad_group, o);
    EXPECT_EQ(r.report.status, JAL_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_SENDALL);
    EXPECT_EQ(r.report.fault_address, 5u);
    // Columns that do not add up to the tile's: t1 one column wider.
    auto wide = join({prologue(slices),
                      {ADDI(12, 12, 1), TDESC(1, 10, 11, 12, 0, JAL_DT_I32), SENDALL(0, 0, 0),
                       RECVALL(1, 0, 1), END()}});
    r = run(wide, o);
    EXPECT_EQ(r.report.status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_RECVALL);
    // Rows that differ from the tile's.
    auto rows = join({prologue(slices),
                      {LI(17, 1), TDESC(1, 10, 17, 12, 0, JAL_DT_I32), SENDALL(0, 0, 0),
                       RECVALL(1, 0, 1), END()}});
    r = run(rows, o);
    EXPECT_EQ(r.report.status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_RECVALL);
    // 2-byte columns.
    auto bf16 =
        join({prologue(slices), {TDESC(1, 10, 11, 12, 0, JAL_DT_BF16), RECVALL(1, 0, 1), END()}});
    r = run(bf16, o);
    EXPECT_EQ(r.report.status, JAL_STATUS_INVALID_FIELD);
    // A slice that never sends leaves the others waiting: a deadlock, reported at RECVALL.
    auto silent =
        join({prologue(slices),
              {LI(18, 1), BR(JAL_OP_BEQ, 2, 18, 2), SENDALL(0, 0, 0), RECVALL(1, 0, 1), END()}});
    r = run(silent, o);
    EXPECT_EQ(r.report.status, JAL_STATUS_DEADLOCK);
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_RECVALL);
}

// Slices 1, 2 and 4 of 6 send their shares to every slice (SENDALL over the dispatch, or over
// a mask of all six); every slice takes the three with one RECVALL over the senders' mask,
// side by side in dispatch order. Then the same with the receivers' RECVs.
TEST_F(IsaAllGather, AMaskNamesTheGroupBySlices)
{
    const std::uint32_t slices = 6;
    const std::uint32_t senders = 0b010110;
    std::vector<std::int32_t> row;
    for (std::uint32_t k = 0; k < slices; ++k)
        if (senders >> k & 1)
            for (std::uint32_t j = 0; j < share_cols(k); ++j)
                row.push_back(static_cast<std::int32_t>(k * 100 + j));
    const auto total = static_cast<std::int32_t>(row.size());
    std::vector<std::int32_t> want;
    for (std::uint32_t r = 0; r < kRows; ++r) want.insert(want.end(), row.begin(), row.end());
    // x18: whether this slice sends; t1 described again for the senders' columns.
    const std::vector<std::uint64_t> setup = {LI(16, senders),
                                              R(JAL_OP_SHR, 18, 16, 2),
                                              LI(19, 1),
                                              R(JAL_OP_AND, 18, 18, 19),
                                              LI(12, total),
                                              LI(13, total * 4),
                                              TDESC(1, 10, 11, 12, 0, JAL_DT_I32)};
    std::vector<std::uint64_t> by_recv;  // the RECVs RECVALL stands for
    std::int32_t col = 0;
    for (std::uint32_t k = 0; k < slices; ++k) {
        if (!(senders >> k & 1)) continue;
        by_recv.insert(by_recv.end(),
                       {LI(5, static_cast<std::int32_t>(JAL_PEER_DISPATCH + k)),
                        LI(14, static_cast<std::int32_t>(kOut) + col * 4),
                        LI(15, static_cast<std::int32_t>(share_cols(k))),
                        TDESC(2, 14, 11, 15, static_cast<std::uint32_t>(total) * 4, JAL_DT_I32),
                        RECV(2, 5, 1), WAIT(1, 1)});
        col += static_cast<std::int32_t>(share_cols(k));
    }
    const std::vector<std::uint64_t> by_mask = {RECVALL_MASK(1, 16, 1), WAIT(1, 1)};
    struct Form {
        std::uint64_t send;
        std::int32_t group;
        const std::vector<std::uint64_t>* receive;
    };
    for (const Form& f : {Form{SENDALL(0, 17, 0), JAL_PEER_DISPATCH, &by_mask},
                          Form{SENDALL_MASK(0, 17, 0), 0b111111, &by_mask},
                          Form{SENDALL_MASK(0, 17, 0), 0b111111, &by_recv}}) {
        const auto code = join({prologue(slices),
                                setup,
                                {LI(17, f.group), BR(JAL_OP_BEQ, 18, 0, 2), f.send},
                                *f.receive,
                                {BR(JAL_OP_BEQ, 18, 0, 2), WAIT(0, 1)},
                                epilogue()});
        Opts o;
        o.slices = slices;
        o.args = kVa;
        const std::size_t n = want.size();
        write_vec(kVa, std::vector<std::int32_t>(n * slices, -1));
        const auto r = run(code, o);
        ASSERT_EQ(r.report.status, JAL_STATUS_OK) << "fault at pc " << r.report.fault_pc;
        for (std::uint32_t i = 0; i < slices; ++i)
            EXPECT_EQ(read_vec<std::int32_t>(kVa + i * n * 4, n), want) << "slice " << i;
    }
}

TEST_F(IsaAllGather, AMaskWithNoSliceOrOnePastTheDispatchFaults)
{
    const std::uint32_t slices = 3;
    Opts o;
    o.slices = slices;
    o.args = kVa;
    for (std::int32_t mask : {0, 0b1001}) {
        for (bool send : {true, false}) {
            const auto code = join(
                {prologue(slices),
                 {LI(16, mask), send ? SENDALL_MASK(0, 16, 0) : RECVALL_MASK(1, 16, 1), END()}});
            const auto r = run(code, o);
            EXPECT_EQ(r.report.status, JAL_STATUS_OUT_OF_RANGE) << mask;
            EXPECT_EQ(r.report.fault_opcode, send ? JAL_OP_SENDALL : JAL_OP_RECVALL);
            EXPECT_EQ(r.report.fault_address, static_cast<std::uint64_t>(mask));
        }
    }
}

TEST_F(IsaAllGather, TimingOnlyMovesNoDataButTheSameTime)
{
    const std::uint32_t slices = 4;
    const auto code = join({prologue(slices),
                            {SENDALL(0, 0, 0), RECVALL(1, 0, 1), WAIT(1, 1), WAIT(0, 1)},
                            epilogue()});
    const auto real = run_and_check(code, slices);
    Opts o;
    o.slices = slices;
    o.args = kVa;
    o.timing_only = true;
    const auto timed = run(code, o);
    ASSERT_EQ(timed.report.status, JAL_STATUS_OK);
    EXPECT_EQ(timed.report.modelled_ns, real.report.modelled_ns);
    EXPECT_EQ(timed.report.instructions, real.report.instructions);
}

}  // namespace
