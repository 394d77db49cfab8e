// GEMV and GEMM (jal/kernels/library/gemm.hpp) on a jal-emu against a double-precision host
// reference: every weight format under every numerics mode, shapes that are not multiples of
// the tiles, one slice and several, x chunked in L1, x already quantized, weights in one
// allocation or one per slice, timing-only runs and bad arguments.
//
// Reference: y[m][n] = Σ_k a[m][k]·w[n][k] + bias[n] in double, where w is the stored
// weight decoded exactly (jal::numerics) and a is x rounded to the numerics' activation
// format on the host (jal::numerics::quantize_row, the rounding VCVT documents). The device
// accumulates in F32 in K order, so the error is a sum of K roundings of partial sums; the
// tolerance is 1e-5 · Σ_k |a·w| + |bias| (K ≤ 320 here: K·2^-24 ≈ 2e-5 is the worst case,
// random-walk growth stays far below).
#include <cmath>
#include <string>
#include <vector>

#include "linear_fixture.hpp"

#include <jal/error.hpp>
#include <jal/kernels/library/gemm.hpp>

namespace jl = jal::kernels::linear;
using jal::test::HostMatrix;

namespace {

struct GemmCase {
    jl::GemmConfig config;
    uint32_t slices = 1;
    uint64_t seed = 1;
};

// Where W lives: one allocation (the shard table into it); each slice's shard in its own
// memory; or (GemmConfig::slice_tables) a copy per slice in its own memory whose rows
// outside the slice's column group are NaN, named by that slice's row of the table.
enum class Weights { shared, per_slice, slice_copies };

class LinearGemmTest : public jal::test::LinearKernelTest {
protected:
    // Runs `c` and checks y against the reference; returns the dispatch report (and y in
    // *y_out).
    jal_dispatch_report check(const GemmCase& gc, Weights where = Weights::shared,
                              std::vector<float>* y_out = nullptr)
    {
        const jl::GemmConfig& c = gc.config;
        SCOPED_TRACE(jl::gemm_name(c) + " on " + std::to_string(gc.slices) + " slices");
        const jl::GemmPlan plan = jl::plan_gemm(c);
        std::vector<float> xf = jal::test::random_floats(size_t{c.m} * c.k, gc.seed);
        std::vector<float> wf = jal::test::random_floats(size_t{c.n} * c.k, gc.seed + 1, 0.5f);
        std::vector<float> bias = jal::test::random_floats(c.n, gc.seed + 2);
        HostMatrix w = jal::test::quantized(wf, c.n, c.k, c.weight);
        if (c.w_kmajor) w.bytes = k_major_shards(w, c.n, c.k, c.weight, gc.slices);
        HostMatrix a = jal::test::quantized(xf, c.m, c.k, plan.activation,
                                            jl::activation_cvt_mode(c.numerics));
        HostMatrix x = c.x_dtype == JAL_DT_F32 ? jal::test::quantized(xf, c.m, c.k, JAL_DT_F32) : a;

        const uint64_t mask = slices(gc.slices);
        uint64_t x_va = upload(x.bytes);
        std::vector<uint64_t> table;
        uint64_t w_va = 0;
        if (where == Weights::slice_copies) {
            table = slice_copies(c, w, gc.slices, mask);
        } else if (where == Weights::per_slice) {  // each slice's rows in its own allocation
            uint32_t s = 0;
            for (uint32_t bit = 0; bit < 64; bit++) {
                if (!(mask & (1ull << bit))) continue;
                jl::Range r = jl::slice_range(c.n, gc.slices, s++);
                size_t off = r.begin * w.row_bytes,
                       len = std::max<size_t>(r.size() * w.row_bytes, 64);
                std::vector<uint8_t> part(len);
                std::memcpy(part.data(), w.bytes.data() + off, r.size() * w.row_bytes);
                table.push_back(upload(part.data(), len, JAL_PLACE_SLICE, 1ull << bit));
            }
        } else {
            w_va = upload(w.bytes);
            table = jl::shard_table(w.ref(w_va), gc.slices);
        }
        uint64_t table_va = upload(table);
        uint64_t bias_va = c.bias ? upload(bias) : 0;
        uint64_t y_va = output(size_t{c.m} * c.n * 4);
        jal::kernels::TensorRef bias_ref{};
        if (c.bias)
            bias_ref = {
                .va = bias_va, .rows = 1, .cols = c.n, .row_stride = 0, .dtype = JAL_DT_F32};
        auto words = jl::gemm_args(
            c, x.ref(x_va), table_va, w.ref(w_va), bias_ref,
            {.va = y_va, .rows = c.m, .cols = c.n, .row_stride = 0, .dtype = JAL_DT_F32});
        jal_dispatch_report report = run(jl::build_gemm(c), words, mask);
        EXPECT_EQ(report.status, JAL_STATUS_OK);

        std::vector<float> y = read_f32(y_va, size_t{c.m} * c.n);
        int bad = 0;
        for (uint32_t m = 0; m < c.m; m++)
            for (uint32_t n = 0; n < c.n; n++) {
                double ref = c.bias ? bias[n] : 0.0, mag = c.bias ? std::fabs(bias[n]) : 0.0;
                for (uint32_t k = 0; k < c.k; k++) {
                    double p =
                        double(a.values[size_t{m} * c.k + k]) * w.values[size_t{n} * c.k + k];
                    ref += p;
                    mag += std::fabs(p);
                }
                float got = y[size_t{m} * c.n + n];
                if (!(std::fabs(got - ref) <= 1e-5 * mag + 1e-30) && bad++ < 5)
                    ADD_FAILURE() << "y[" << m << "][" << n << "] = " << got << ", reference "
                                  << ref << " (tolerance " << 1e-5 * mag << ")";
            }
        EXPECT_EQ(bad, 0);
        if (y_out) *y_out = std::move(y);
        return report;
    }

    // W's bytes with every slice's shard K-major (GemmConfig::w_kmajor), each where its rows
    // were, so every placement below takes the shards from the same offsets.
    static std::vector<uint8_t> k_major_shards(const HostMatrix& w, uint32_t n, uint32_t k,
                                               jal_dtype dtype, uint32_t slices)
    {
        std::vector<uint8_t> out(w.bytes.size());
        for (uint32_t s = 0; s < slices; s++) {
            const jl::Range r = jl::slice_range(n, slices, s);
            const size_t at = r.begin * w.row_bytes;
            jl::k_major_shard(w.bytes.data() + at, r.size(), k, dtype, out.data() + at);
        }
        return out;
    }

    // Weights::slice_copies: slice s's copy of W, NaN (all ones) outside the shards of its
    // column group, and the n × n table whose row s points into it.
    std::vector<uint64_t> slice_copies(const jl::GemmConfig& c, const HostMatrix& w, uint32_t n,
                                       uint64_t mask)
    {
        std::vector<uint64_t> table;
        uint32_t s = 0;
        for (uint32_t bit = 0; bit < 64; bit++) {
            if (!(mask & (1ull << bit))) continue;
            std::vector<uint8_t> copy(w.bytes.size(), 0xff);
            const uint32_t first = s - s % c.row_groups;
            for (uint32_t sh = first; sh < first + c.row_groups; sh++) {
                const jl::Range r = jl::slice_range(c.n, n, sh);
                std::memcpy(copy.data() + r.begin * w.row_bytes,
                            w.bytes.data() + r.begin * w.row_bytes, r.size() * w.row_bytes);
            }
            const uint64_t va = upload(copy.data(), copy.size(), JAL_PLACE_SLICE, 1ull << bit);
            for (uint32_t sh = 0; sh < n; sh++)
                table.push_back(va + jl::slice_range(c.n, n, sh).begin * w.row_bytes);
            s++;
        }
        return table;
    }
};

}  // namespace

TEST_F(LinearGemmTest, GemvEveryFormatAndNumericsOnFiveSlices)
{
    for (jal_dtype w :
         {JAL_DT_MXFP4, JAL_DT_MXFP8_E4M3, JAL_DT_BF16, JAL_DT_F16, JAL_DT_Q8_0, JAL_DT_F32})
        for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast}) {
            GemmCase gc{.config = {.m = 1,
                                   .n = 77,
                                   .k = 96,
                                   .weight = w,
                                   .numerics = n,
                                   .bias = true,
                                   .tile_n = 8},
                        .slices = 5,
                        .seed = 100u + w * 7u + static_cast<unsigned>(n)};
            check(gc);
        }
}

TEST_F(LinearGemmTest, GemvOneSliceWithoutBias)
{
    check({.config =
               {.m = 1, .n = 300, .k = 320, .weight = JAL_DT_MXFP4, .numerics = jl::Numerics::ggml},
           .slices = 1,
           .seed = 7});
    check({.config = {.m = 3, .n = 45, .k = 64, .weight = JAL_DT_BF16}, .slices = 1, .seed = 8});
}

TEST_F(LinearGemmTest, GemmChunksOfXAndManyTiles)
{
    // 37 rows in chunks of 16, W in tiles of 8 rows: every loop runs past one iteration
    // and ends on a partial tile.
    for (jal_dtype w : {JAL_DT_MXFP4, JAL_DT_BF16, JAL_DT_F16, JAL_DT_Q8_0})
        for (jl::Numerics n : {jl::Numerics::fast, jl::Numerics::ggml, jl::Numerics::native})
            check({.config = {.m = 37,
                              .n = 50,
                              .k = 64,
                              .weight = w,
                              .numerics = n,
                              .bias = true,
                              .tile_n = 8,
                              .max_m_chunk = 16},
                   .slices = 3,
                   .seed = 20u + w * 3u + static_cast<unsigned>(n)});
}

// W before ACQUIRE (the output projection beside the attention): the same bits as the
// loads after it, with one, two and more tiles a slice (so both leading loads, and the
// loop's own after them), a bias, and the residual add (y's fill before the run, 0xa5
// bytes, is an F32 of about 3e-16: it moves no result, so the reference holds).
TEST_F(LinearGemmTest, WeightsLoadedBeforeAcquireGiveTheSameBits)
{
    for (uint32_t tile_n : {64u, 8u, 3u})
        for (jal_dtype w : {JAL_DT_BF16, JAL_DT_MXFP4}) {
            jl::GemmConfig c{.m = 2,
                             .n = 50,
                             .k = 64,
                             .weight = w,
                             .numerics = jl::Numerics::ggml,
                             .bias = true,
                             .tile_n = tile_n};
            for (bool accumulate : {false, true}) {
                c.accumulate = accumulate;
                std::vector<float> plain, before;
                check({.config = c, .slices = 3, .seed = 90u + tile_n}, Weights::per_slice, &plain);
                c.w_before_acquire = true;
                check({.config = c, .slices = 3, .seed = 90u + tile_n}, Weights::per_slice,
                      &before);
                c.w_before_acquire = false;
                EXPECT_EQ(plain, before) << "tiles of " << tile_n << ", accumulate " << accumulate;
            }
        }
}

TEST_F(LinearGemmTest, RowGroupsSplitRowsAndColumns)
{
    // 6 slices in 2, 3 or 6 row groups: each slice takes its group's rows (19, 13 or 7 of
    // 37, in chunks of 4, the last chunk short) and its column group's shards; 5 rows in 6
    // groups leave a group without rows. Staged (converted) and resident x both.
    for (uint32_t groups : {2u, 3u, 6u})
        for (jal_dtype w : {JAL_DT_MXFP4, JAL_DT_BF16})
            for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
                for (uint32_t m : {37u, 5u})
                    check({.config = {.m = m,
                                      .n = 50,
                                      .k = 64,
                                      .weight = w,
                                      .numerics = n,
                                      .bias = true,
                                      .tile_n = 8,
                                      .row_groups = groups,
                                      .max_m_chunk = 4},
                           .slices = 6,
                           .seed = 40u + groups + w * 3u + static_cast<unsigned>(n)});
}

// W's shards K-major (ISA 1.4's K-major MMA): bit for bit the weight layout's y, for a
// GEMV with one and several tiles a slice, x in chunks, row groups over shared shards and
// over per-slice copies, accumulation and the tiles loaded before ACQUIRE.
TEST_F(LinearGemmTest, KMajorWeightsGiveTheWeightLayoutsBits)
{
    struct Variant {
        jl::GemmConfig c;
        uint32_t slices;
        Weights where;
    };
    std::vector<Variant> variants;
    for (jal_dtype w : {JAL_DT_F32, JAL_DT_BF16, JAL_DT_F16}) {
        const jl::GemmConfig gemv{.m = 1, .n = 100, .k = 96, .weight = w, .bias = true};
        variants.push_back({gemv, 4, Weights::per_slice});
        jl::GemmConfig tiles = gemv;
        tiles.tile_n = 7, tiles.accumulate = true, tiles.m = 3;
        variants.push_back({tiles, 3, Weights::shared});
        tiles.w_before_acquire = true;
        variants.push_back({tiles, 3, Weights::per_slice});
        const jl::GemmConfig chunks{
            .m = 37, .n = 50, .k = 64, .weight = w, .tile_n = 16, .max_m_chunk = 8};
        variants.push_back({chunks, 2, Weights::shared});
        jl::GemmConfig groups = chunks;
        groups.row_groups = 3, groups.tile_n = 8, groups.bias = true;
        variants.push_back({groups, 6, Weights::shared});
        groups.slice_tables = true;
        variants.push_back({groups, 6, Weights::slice_copies});
    }
    uint64_t seed = 700;
    for (Variant& v : variants) {
        std::vector<float> weight_layout, k_major;
        check({.config = v.c, .slices = v.slices, .seed = seed}, v.where, &weight_layout);
        v.c.w_kmajor = true;
        check({.config = v.c, .slices = v.slices, .seed = seed}, v.where, &k_major);
        ASSERT_EQ(weight_layout.size(), k_major.size());
        EXPECT_EQ(std::memcmp(weight_layout.data(), k_major.data(), k_major.size() * 4), 0)
            << jl::gemm_name(v.c);
        seed++;
    }
    EXPECT_THROW(jl::plan_gemm({.n = 8, .k = 32, .weight = JAL_DT_MXFP4, .w_kmajor = true}),
                 jal::Error);
}

TEST_F(LinearGemmTest, RowGroupsMustDivideTheSlices)
{
    const jl::GemmConfig c{.m = 8, .n = 16, .k = 32, .weight = JAL_DT_BF16, .row_groups = 4};
    HostMatrix x = jal::test::quantized(jal::test::random_floats(8 * 32, 3), 8, 32, JAL_DT_F32);
    HostMatrix w = jal::test::quantized(jal::test::random_floats(16 * 32, 4), 16, 32, c.weight);
    const uint64_t x_va = upload(x.bytes), w_va = upload(w.bytes);
    const uint64_t table_va = upload(jl::shard_table(w.ref(w_va), 6));
    const uint64_t y_va = output(8 * 16 * 4);
    auto words = jl::gemm_args(c, x.ref(x_va), table_va, w.ref(w_va), {},
                               {.va = y_va, .rows = 8, .cols = 16, .dtype = JAL_DT_F32});
    try {
        run(jl::build_gemm(c), words, slices(6));
        ADD_FAILURE() << "4 row groups on 6 slices ran";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_INVALID_FIELD) << e.what();
    }
}

TEST_F(LinearGemmTest, MoreSlicesThanRows)
{
    // 6 rows over 8 slices: the split leaves the last slices without work.
    check({.config = {.m = 2, .n = 6, .k = 32, .weight = JAL_DT_MXFP8_E4M3, .bias = true},
           .slices = 8,
           .seed = 30});
}

TEST_F(LinearGemmTest, PrequantizedActivationsLoadAsIs)
{
    check({.config = {.m = 9,
                      .n = 40,
                      .k = 128,
                      .weight = JAL_DT_MXFP4,
                      .numerics = jl::Numerics::fast,
                      .x_dtype = JAL_DT_MXFP4,
                      .tile_n = 16},
           .slices = 2,
           .seed = 40});
    check({.config = {.m = 2,
                      .n = 40,
                      .k = 128,
                      .weight = JAL_DT_MXFP4,
                      .numerics = jl::Numerics::ggml,
                      .x_dtype = JAL_DT_Q8_0},
           .slices = 2,
           .seed = 41});
}

TEST_F(LinearGemmTest, WeightsInEachSlicesOwnMemory)
{
    check({.config = {.m = 1,
                      .n = 100,
                      .k = 96,
                      .weight = JAL_DT_MXFP4,
                      .numerics = jl::Numerics::native,
                      .bias = true,
                      .tile_n = 16},
           .slices = 4,
           .seed = 50},
          Weights::per_slice);
}

// Row groups reading per-slice tables (the runtime's local copies of the column group's
// shards): each slice follows its own row of the table, into its own copy, and never reads
// a row outside its column group (those are NaN); y is bit for bit the shared table's.
TEST_F(LinearGemmTest, RowGroupsReadEachSlicesOwnTable)
{
    for (uint32_t groups : {2u, 3u, 6u})
        for (jal_dtype w : {JAL_DT_MXFP4, JAL_DT_BF16})
            for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml}) {
                GemmCase gc{.config = {.m = 37,
                                       .n = 50,
                                       .k = 64,
                                       .weight = w,
                                       .numerics = n,
                                       .bias = true,
                                       .tile_n = 8,
                                       .row_groups = groups,
                                       .max_m_chunk = 16},
                            .slices = 6,
                            .seed = 60u + groups + w * 3u + static_cast<unsigned>(n)};
                std::vector<float> shared, copies;
                check(gc, Weights::shared, &shared);
                gc.config.slice_tables = true;
                check(gc, Weights::slice_copies, &copies);
                ASSERT_EQ(shared.size(), copies.size());
                EXPECT_EQ(std::memcmp(shared.data(), copies.data(), shared.size() * 4), 0)
                    << jl::gemm_name(gc.config);
            }
}

TEST_F(LinearGemmTest, TimingOnlyLeavesOutputUntouched)
{
    jl::GemmConfig c{.m = 1, .n = 64, .k = 96, .weight = JAL_DT_MXFP4, .bias = false};
    HostMatrix w =
        jal::test::quantized(jal::test::random_floats(64 * 96, 60), 64, 96, JAL_DT_MXFP4);
    std::vector<float> x = jal::test::random_floats(96, 61);
    uint64_t x_va = upload(x), w_va = upload(w.bytes);
    uint64_t table_va = upload(jl::shard_table(w.ref(w_va), 2));
    uint64_t y_va = output(64 * 4, 0x5a);
    auto words = jl::gemm_args(
        c, {.va = x_va, .rows = 1, .cols = 96, .row_stride = 0, .dtype = JAL_DT_F32}, table_va,
        w.ref(w_va), {}, {.va = y_va, .rows = 1, .cols = 64, .row_stride = 0, .dtype = JAL_DT_F32});
    jal_dispatch_report r = run(jl::build_gemm(c), words, slices(2), true);
    EXPECT_EQ(r.status, JAL_STATUS_OK);
    EXPECT_GT(r.modelled_ns, 0u);
    EXPECT_EQ(read(y_va, 64 * 4), std::vector<uint8_t>(64 * 4, 0x5a));
}

TEST_F(LinearGemmTest, BadArguments)
{
    jl::GemmConfig c{.m = 1, .n = 16, .k = 64, .weight = JAL_DT_MXFP4};
    HostMatrix w =
        jal::test::quantized(jal::test::random_floats(16 * 64, 70), 16, 64, JAL_DT_MXFP4);
    std::vector<float> x = jal::test::random_floats(64, 71);
    uint64_t x_va = upload(x), w_va = upload(w.bytes);
    uint64_t y_va = output(16 * 4);
    jal::kernels::TensorRef xr{
        .va = x_va, .rows = 1, .cols = 64, .row_stride = 0, .dtype = JAL_DT_F32};
    jal::kernels::TensorRef yr{
        .va = y_va, .rows = 1, .cols = 16, .row_stride = 0, .dtype = JAL_DT_F32};
    // Host side: shapes and formats that do not match the generated code.
    jal::kernels::TensorRef wrong = w.ref(w_va);
    wrong.dtype = JAL_DT_BF16;
    EXPECT_THROW(jl::gemm_args(c, xr, 1, wrong, {}, yr), jal::Error);
    jal::kernels::TensorRef short_y = yr;
    short_y.cols = 15;
    EXPECT_THROW(jl::gemm_args(c, xr, 1, w.ref(w_va), {}, short_y), jal::Error);
    jl::GemmConfig one_group = c;  // per-slice tables name a column group's shards
    one_group.slice_tables = true;
    EXPECT_THROW(jl::build_gemm(one_group), jal::Error);
    // W before ACQUIRE: one chunk of x's rows, no row groups.
    jl::GemmConfig early = c;
    early.w_before_acquire = true;
    early.row_groups = 2;
    EXPECT_THROW(jl::plan_gemm(early), jal::Error);
    early.row_groups = 1, early.m = 37, early.max_m_chunk = 16;
    EXPECT_THROW(jl::plan_gemm(early), jal::Error);
    // Device side: a shard table naming memory that is not mapped faults the dispatch and
    // leaves the emulator serving.
    uint64_t table_va = upload(std::vector<uint64_t>{0x7f0000000000ull});
    try {
        run(jl::build_gemm(c), jl::gemm_args(c, xr, table_va, w.ref(w_va), {}, yr), slices(1));
        ADD_FAILURE() << "the dispatch did not fault";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_PAGE_FAULT) << e.what();
    }
    uint64_t good_table = upload(jl::shard_table(w.ref(w_va), 1));
    EXPECT_EQ(
        run(jl::build_gemm(c), jl::gemm_args(c, xr, good_table, w.ref(w_va), {}, yr), slices(1))
            .status,
        JAL_STATUS_OK);
}
