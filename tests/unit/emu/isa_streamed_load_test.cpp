// Streamed loads (ISA 1.5, docs/tile-isa.md "Streamed loads"): a TLOAD or TGATHER with
// JAL_DMA_STREAMED gives every reader the bytes a plain load gives, for the same modelled
// cost; a packed write over the tile ends the stream; a row read another way is copied in.
#include "emu/tile_exec/streamed_loads.hpp"
#include "isa_harness.hpp"

#include <random>

using namespace isatest;

namespace {

constexpr std::int32_t kStreamed = JAL_DMA_STREAMED;

std::uint64_t TGATHER(unsigned t, unsigned rbase, unsigned rstride, unsigned tidx, std::int32_t imm)
{
    return I(JAL_OP_TGATHER, t, rbase, rstride, tidx, imm);
}
std::uint64_t TREAD(unsigned rd, unsigned t, unsigned rrow, std::int32_t col)
{
    return I(JAL_OP_TREAD, rd, t, rrow, 0, col);
}

class IsaStreamed : public IsaTest {
protected:
    void SetUp() override { map(0, 4, 0); }
    static constexpr std::uint64_t kA = kVa + 4096, kB = kVa + 65536, kC = kVa + (1u << 20);
    static constexpr std::uint64_t kOut = kVa + (3u << 20);

    Opts opts() const
    {
        Opts o;
        o.args = kVa;
        return o;
    }
    // MXFP4 rows: random codes, scales 2^-4 .. 2^3.
    std::vector<std::uint8_t> mxfp4_rows(unsigned rows, unsigned k, unsigned seed)
    {
        std::mt19937 rng(seed);
        std::vector<std::uint8_t> v(std::size_t{rows} * (k / 32) * 17);
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = static_cast<std::uint8_t>(i % 17 == 0 ? 123 + rng() % 8 : rng());
        return v;
    }
    // x2 = kA, x3 = kB, x4 = kC, x5 = kOut (the argument buffer at kVa).
    std::vector<std::uint64_t> prologue()
    {
        write_vec<std::uint64_t>(kVa, {kA, kB, kC, kOut});
        return {MOVSR(1, JAL_SR_ARGS), LD(2, 1, 0), LD(3, 1, 8), LD(4, 1, 16), LD(5, 1, 24)};
    }
    struct Result {
        std::uint32_t status;
        std::vector<std::uint32_t> out;  // n words at kOut
        jal_dispatch_report report;
    };
    // L1's first 512 KiB hold a NaN pattern: what a streamed tile's L1 bytes are until
    // something copies them in (L1 keeps the last dispatch's bytes otherwise).
    void scribble_l1()
    {
        const auto r =
            run({LI(10, 0), LI(13, 128), LI(14, 1024), TDESC(0, 10, 13, 14, 0, JAL_DT_F32),
                 V(JAL_OP_VFILL, 0, 0, 0, 0, 0x7f800001), END()});
        ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    }
    Result run_words(std::vector<std::uint64_t> c, std::size_t n, bool timing_only = false)
    {
        scribble_l1();
        Opts o = opts();
        o.timing_only = timing_only;
        write_vec(kOut, std::vector<std::uint32_t>(n, 0x7fbadbadu));
        const auto r = run(c, o);
        return {r.report.status, read_vec<std::uint32_t>(kOut, n), r.report};
    }
};

// The tiles of acc (M x N, t2 at L1 256 KiB) = a (M x K, t0 at 0) x b (t1 at 8 KiB): b in the
// weight layout (N rows of K) of `dtype`, or K-major; x13..x15 = M, N, K.
std::vector<std::uint64_t> mma_tiles(unsigned M, unsigned N, unsigned K,
                                     std::uint32_t dtype = JAL_DT_F32, bool kmajor = false)
{
    return {LI(10, 0),
            LI(11, 8192),
            LI(12, 262144),
            LI(13, M),
            LI(14, N),
            LI(15, K),
            TDESC(0, 10, 13, 15, 0, JAL_DT_F32),
            kmajor ? TDESC(1, 11, 15, 14, 0, dtype) : TDESC(1, 11, 14, 15, 0, dtype),
            TDESC(2, 12, 13, 14, 0, JAL_DT_F32)};
}

// Those tiles with b loaded plainly or streamed; acc (from zero) stored to kOut.
std::vector<std::uint64_t> mma_program(unsigned M, unsigned N, unsigned K, std::uint32_t dtype,
                                       bool kmajor, bool streamed)
{
    std::vector<std::uint64_t> c = mma_tiles(M, N, K, dtype, kmajor);
    c.insert(c.end(), {TLOAD(0, 2, 0, 0), I(JAL_OP_TLOAD, 1, 3, 0, 0, streamed ? kStreamed : 0),
                       V(JAL_OP_VFILL, 2), WAIT(0, 2), MMA(2, 0, 1, kmajor ? JAL_MMA_B_KMAJOR : 0),
                       TSTORE(2, 5, 0, 1), WAIT(1, 1), END()});
    return c;
}

// The MMA's defined numerics for one row of a and b in the weight layout (N rows of K):
// each output's fused multiply-adds over k in order, from zero.
std::vector<float> gemv_reference(const std::vector<float>& a, const std::vector<float>& b,
                                  unsigned N, unsigned K)
{
    std::vector<float> y(N, 0.0f);
    for (unsigned n = 0; n < N; ++n)
        for (unsigned k = 0; k < K; ++k) y[n] = std::fma(a[k], b[n * K + k], y[n]);
    return y;
}

}  // namespace

TEST_F(IsaStreamed, AnMmaOverAStreamedBGivesThePlainLoadsBitsAndCost)
{
    const unsigned M = 1, N = 48, K = 64;
    write_vec(kA, random_floats(M * K, 1));
    struct Case {
        std::uint32_t dtype;
        bool kmajor;
    };
    for (const Case& c :
         {Case{JAL_DT_F32, true}, Case{JAL_DT_F32, false}, Case{JAL_DT_MXFP4, false}}) {
        if (c.dtype == JAL_DT_MXFP4)
            write_vec(kB, mxfp4_rows(N, K, 2));
        else
            write_vec(kB, random_floats(N * K, 2));
        auto with = [&](bool streamed, bool timing_only = false) {
            auto p = prologue();
            const auto body = mma_program(M, N, K, c.dtype, c.kmajor, streamed);
            p.insert(p.end(), body.begin(), body.end());
            return run_words(p, M * N, timing_only);
        };
        const Result plain = with(false), streamed = with(true);
        ASSERT_EQ(plain.status, JAL_STATUS_OK);
        ASSERT_EQ(streamed.status, JAL_STATUS_OK);
        EXPECT_EQ(streamed.out, plain.out) << "dtype " << c.dtype;
        EXPECT_NE(plain.out, std::vector<std::uint32_t>(M * N, 0));  // the MMA added something
        EXPECT_EQ(streamed.report.modelled_ns, plain.report.modelled_ns);
        EXPECT_EQ(streamed.report.hbm_bytes, plain.report.hbm_bytes);
        EXPECT_EQ(streamed.report.energy_nj, plain.report.energy_nj);
        EXPECT_EQ(with(true, true).report.modelled_ns, with(false, true).report.modelled_ns);
    }
}

// Anything but an MMA's b reads the loaded bytes: a TSTORE of the whole tile, a TREAD of one
// element (its row copied in, the rows around it still streamed for the MMA after it).
TEST_F(IsaStreamed, OtherReadsOfAStreamedTileSeeTheLoadedBytes)
{
    const unsigned N = 8, K = 32;
    const auto b = random_floats(N * K, 3), a = random_floats(K, 4);
    write_vec(kA, a);
    write_vec(kB, b);
    auto p = prologue();
    const auto tiles = mma_tiles(1, N, K);
    p.insert(p.end(), tiles.begin(), tiles.end());
    p.insert(p.end(), {LI(16, 5), TLOAD(0, 2, 0, 0), I(JAL_OP_TLOAD, 1, 3, 0, 0, kStreamed),
                       WAIT(0, 2), TREAD(20, 1, 16, 7),  // b[5][7]
                       ST(20, 5, 0), V(JAL_OP_VFILL, 2), MMA(2, 0, 1), TSTORE(2, 5, 0, 1),
                       WAIT(1, 1), TSTORE(1, 4, 0, 1), WAIT(1, 1), END()});
    const Result r = run_words(p, N);
    ASSERT_EQ(r.status, JAL_STATUS_OK);
    EXPECT_EQ(read_vec<float>(kC, N * K), b);  // the TSTORE of the streamed tile
    EXPECT_EQ(read_vec<float>(kOut, N), gemv_reference(a, b, N, K));
    // The TREAD's word went to kOut before the MMA's row overwrote it: run it alone.
    auto q = prologue();
    const std::vector<std::uint64_t> only = {LI(11, 8192),
                                             LI(14, N),
                                             LI(15, K),
                                             LI(16, 5),
                                             TDESC(1, 11, 14, 15, 0, JAL_DT_F32),
                                             I(JAL_OP_TLOAD, 1, 3, 0, 0, kStreamed),
                                             WAIT(0, 1),
                                             TREAD(20, 1, 16, 7),
                                             ST(20, 5, 0),
                                             END()};
    q.insert(q.end(), only.begin(), only.end());
    const Result t = run_words(q, 2);
    ASSERT_EQ(t.status, JAL_STATUS_OK);
    float got;
    std::memcpy(&got, &t.out[0], 4);
    EXPECT_EQ(got, b[5 * K + 7]);
}

// A plain load over a streamed tile's L1 ends the stream: an MMA naming the old descriptor
// then reads what the new load put there, not the streamed memory.
TEST_F(IsaStreamed, APackedWriteOverAStreamedTileEndsTheStream)
{
    const unsigned N = 16, K = 32;
    const auto a = random_floats(K, 5), streamed_b = random_floats(N * K, 6),
               plain_b = random_floats(N * K, 7);
    write_vec(kA, a);
    write_vec(kB, streamed_b);
    write_vec(kC, plain_b);
    auto p = prologue();
    const auto tiles = mma_tiles(1, N, K);
    p.insert(p.end(), tiles.begin(), tiles.end());
    p.insert(p.end(),
             {TLOAD(0, 2, 0, 0), I(JAL_OP_TLOAD, 1, 3, 0, 0, kStreamed), TLOAD(1, 4, 0, 0),
              WAIT(0, 3), V(JAL_OP_VFILL, 2), MMA(2, 0, 1), TSTORE(2, 5, 0, 1), WAIT(1, 1), END()});
    const Result r = run_words(p, N);
    ASSERT_EQ(r.status, JAL_STATUS_OK);
    EXPECT_EQ(read_vec<float>(kOut, N), gemv_reference(a, plain_b, N, K));
}

// A streamed TGATHER: each run of consecutive indices is one streamed piece, and an MMA over
// the rows of one run (an expert's rows) reads them where they lie; the same bits as a plain
// gather.
TEST_F(IsaStreamed, AStreamedGatherGivesThePlainGathersBits)
{
    const unsigned K = 64, table_rows = 40, rows = 12;
    write_vec(kA, random_floats(K, 8));
    write_vec(kB, mxfp4_rows(table_rows, K, 9));
    // Two runs (rows 20..27 and 4..7) into one tile; the MMA takes the first run's 8 rows.
    std::vector<std::int32_t> idx = {20, 21, 22, 23, 24, 25, 26, 27, 4, 5, 6, 7};
    write_vec(kC, idx);
    const std::uint32_t rb = K / 32 * 17;
    auto with = [&](bool streamed) {
        auto p = prologue();
        const std::vector<std::uint64_t> body = {LI(10, 0),
                                                 LI(11, 8192),
                                                 LI(12, 262144),
                                                 LI(13, 1),
                                                 LI(14, rows),
                                                 LI(15, K),
                                                 LI(16, 32768),
                                                 LI(17, 8),
                                                 LI(18, rb),
                                                 TDESC(0, 10, 13, 15, 0, JAL_DT_F32),
                                                 TDESC(1, 11, 14, 15, 0, JAL_DT_MXFP4),
                                                 TDESC(3, 16, 14, 13, 0, JAL_DT_I32),
                                                 TDESC(2, 12, 13, 17, 0, JAL_DT_F32),
                                                 TDESC(4, 11, 17, 15, 0, JAL_DT_MXFP4),
                                                 TLOAD(0, 2, 0, 0),
                                                 TLOAD(3, 4, 0, 0),
                                                 WAIT(0, 2),
                                                 TGATHER(1, 3, 18, 3, streamed ? kStreamed : 0),
                                                 WAIT(0, 1),
                                                 V(JAL_OP_VFILL, 2),
                                                 MMA(2, 0, 4),
                                                 TSTORE(2, 5, 0, 1),
                                                 WAIT(1, 1),
                                                 END()};
        p.insert(p.end(), body.begin(), body.end());
        return run_words(p, 8);
    };
    const Result plain = with(false), streamed = with(true);
    ASSERT_EQ(plain.status, JAL_STATUS_OK);
    ASSERT_EQ(streamed.status, JAL_STATUS_OK);
    EXPECT_EQ(streamed.out, plain.out);
    EXPECT_EQ(streamed.report.modelled_ns, plain.report.modelled_ns);
}

// The copy-in of a streamed row reads device memory then: a page unmapped since the load
// faults there (what an MMA or any other reader reports), at the row's address.
TEST_F(IsaStreamed, ACopyInFromAnUnmappedPageFaults)
{
    using jal::emu::exec::StreamedLoad;
    jal::emu::exec::StreamedLoads loads;
    const std::uint64_t va = kVa + 3 * kPage + 128;
    loads.add(StreamedLoad{{1024, 1024 + 3 * 256 + 64}, 1024, 4, 256, 64, va, 64});
    EXPECT_TRUE(loads.may_overlap({1024 + 256, 1024 + 260}));
    EXPECT_FALSE(loads.may_overlap({0, 1024}));
    std::vector<std::byte> l1(JAL_SLICE_L1_BYTES);
    std::uint64_t fault = 0;
    ASSERT_EQ(mmu_.unmap(kCtx, kVa + 3 * kPage), JAL_STATUS_OK);
    EXPECT_EQ(loads.copy_in({1024 + 256, 1024 + 260}, l1.data(), nullptr, mem_, 0, fault),
              JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(fault, va + 64);
}

// A streamed load's bytes are read by their reader: a poisoned page faults the MMA that reads
// it, at its address, where a plain load faults itself.
TEST_F(IsaStreamed, APoisonedPageFaultsTheReaderOfAStreamedTile)
{
    const unsigned N = 16, K = 32;
    const std::uint64_t weights = kVa + 2 * kPage;  // physical page 2 of slice 0
    write_vec(kA, random_floats(K, 10));
    write_vec(weights, random_floats(N * K, 11));
    hbm_.poison(2 * kPage);
    auto with = [&](bool streamed) {
        auto p = prologue();
        const auto tiles = mma_tiles(1, N, K);
        p.insert(p.end(), tiles.begin(), tiles.end());
        p.insert(p.end(),
                 {LI(20, 0), LUI(20, static_cast<std::int32_t>(weights >> 32)),
                  ADDI(20, 20, static_cast<std::int32_t>(weights & 0x7fffffff)), TLOAD(0, 2, 0, 0),
                  I(JAL_OP_TLOAD, 1, 20, 0, 0, streamed ? kStreamed : 0), WAIT(0, 2),
                  V(JAL_OP_VFILL, 2), MMA(2, 0, 1), END()});
        return run_words(p, 1).report;
    };
    const jal_dispatch_report plain = with(false), streamed = with(true);
    EXPECT_EQ(plain.status, JAL_STATUS_ECC_UNCORRECTED);
    EXPECT_EQ(plain.fault_opcode, JAL_OP_TLOAD);
    EXPECT_EQ(plain.fault_address, weights);
    EXPECT_EQ(streamed.status, JAL_STATUS_ECC_UNCORRECTED);
    EXPECT_EQ(streamed.fault_opcode, JAL_OP_MMA);
    EXPECT_EQ(streamed.fault_address, weights);
}
