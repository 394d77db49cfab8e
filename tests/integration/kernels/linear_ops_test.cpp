// Activation quantization, embedding lookup, argmax and the ring all-reduce on a jal-emu,
// each against a host reference: exact where the operation is exact (conversions follow
// jal::numerics' documented rounding bit for bit, lookups and argmax move values), within
// the F32 summation bound for the all-reduce.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "linear_fixture.hpp"

#include <jal/error.hpp>
#include <jal/kernels/library/argmax.hpp>
#include <jal/kernels/library/collective.hpp>
#include <jal/kernels/library/embedding.hpp>
#include <jal/kernels/library/quantize.hpp>

namespace jl = jal::kernels::linear;
using jal::kernels::TensorRef;
using jal::test::HostMatrix;

namespace {
class LinearOpsTest : public jal::test::LinearKernelTest {};

TensorRef f32(uint64_t va, uint32_t rows, uint32_t cols)
{
    return {.va = va, .rows = rows, .cols = cols, .row_stride = 0, .dtype = JAL_DT_F32};
}
TensorRef i32(uint64_t va, uint32_t rows, uint32_t cols)
{
    return {.va = va, .rows = rows, .cols = cols, .row_stride = 0, .dtype = JAL_DT_I32};
}
}  // namespace

TEST_F(LinearOpsTest, QuantizeMatchesTheDocumentedRoundingBitForBit)
{
    const uint32_t m = 7, k = 96;
    std::vector<float> x = jal::test::random_floats(m * k, 1, 3.0f);
    uint64_t x_va = upload(x);
    struct {
        jal_dtype dt;
        jal_cvt_mode mode;
    } cases[] = {{JAL_DT_Q8_0, JAL_CVT_OCP},
                 {JAL_DT_MXFP8_E4M3, JAL_CVT_OCP},
                 {JAL_DT_MXFP4, JAL_CVT_OCP},
                 {JAL_DT_MXFP4, JAL_CVT_GGML},
                 {JAL_DT_BF16, JAL_CVT_OCP}};
    for (auto [dt, mode] : cases) {
        SCOPED_TRACE(dt);
        jl::QuantizeConfig c{.m = m, .k = k, .out = dt, .mode = mode};
        HostMatrix want = jal::test::quantized(x, m, k, dt, mode);
        uint64_t out_va = output(want.bytes.size());
        run(jl::build_quantize(c), jl::quantize_args(c, f32(x_va, m, k), want.ref(out_va)),
            slices(3));
        EXPECT_EQ(read(out_va, want.bytes.size()), want.bytes);
    }
}

TEST_F(LinearOpsTest, EmbeddingEveryTableFormat)
{
    const uint32_t vocab = 50, dim = 64, tokens = 7;
    std::vector<int32_t> ids{3, 49, 0, 3, 17, 22, 48};
    uint64_t ids_va = upload(ids);
    for (jal_dtype dt :
         {JAL_DT_F32, JAL_DT_BF16, JAL_DT_F16, JAL_DT_MXFP4, JAL_DT_MXFP8_E4M3, JAL_DT_Q8_0}) {
        SCOPED_TRACE(dt);
        HostMatrix table =
            jal::test::quantized(jal::test::random_floats(vocab * dim, 10u + dt), vocab, dim, dt);
        uint64_t table_va = upload(table.bytes);
        uint64_t out_va = output(tokens * dim * 4);
        jl::EmbeddingConfig c{.tokens = tokens, .vocab = vocab, .dim = dim, .table = dt};
        run(jl::build_embedding(c),
            jl::embedding_args(c, i32(ids_va, tokens, 1), table.ref(table_va),
                               f32(out_va, tokens, dim)),
            slices(3));
        std::vector<float> out = read_f32(out_va, tokens * dim);
        for (uint32_t t = 0; t < tokens; t++)
            for (uint32_t d = 0; d < dim; d++)
                ASSERT_EQ(out[t * dim + d], table.values[size_t(ids[t]) * dim + d])
                    << "token " << t << " dim " << d;
    }
}

TEST_F(LinearOpsTest, EmbeddingIdOutOfRangeFaults)
{
    const uint32_t vocab = 16, dim = 32;
    HostMatrix table =
        jal::test::quantized(jal::test::random_floats(vocab * dim, 5), vocab, dim, JAL_DT_F32);
    uint64_t table_va = upload(table.bytes);
    jl::EmbeddingConfig c{.tokens = 2, .vocab = vocab, .dim = dim, .table = JAL_DT_F32};
    for (int32_t bad : {16, -1}) {
        uint64_t ids_va = upload(std::vector<int32_t>{1, bad});
        uint64_t out_va = output(2 * dim * 4);
        try {
            run(jl::build_embedding(c),
                jl::embedding_args(c, i32(ids_va, 2, 1), table.ref(table_va), f32(out_va, 2, dim)),
                slices(1));
            ADD_FAILURE() << "id " << bad << " did not fault";
        } catch (const jal::Error& e) {
            EXPECT_EQ(e.status(), JAL_STATUS_OUT_OF_RANGE) << e.what();
        }
    }
}

TEST_F(LinearOpsTest, ArgmaxAcrossSlicesKeepsTheLowestIndexOnTies)
{
    const uint32_t rows = 3, vocab = 1000;
    std::vector<float> logits = jal::test::random_floats(rows * vocab, 3, 10.0f);
    logits[0 * vocab + 811] = 50.0f;  // row 0: one clear maximum in the last slices' part
    logits[1 * vocab + 123] = 40.0f;  // row 1: a tie across slices; the lower index wins
    logits[1 * vocab + 901] = 40.0f;
    logits[2 * vocab + 0] = 30.0f;  // row 2: the very first column
    uint64_t logits_va = upload(logits);
    for (uint32_t n : {1u, 4u, 7u}) {
        SCOPED_TRACE(n);
        uint64_t idx_va = output(rows * 4), val_va = output(rows * 4);
        jl::ArgmaxConfig c{.rows = rows, .vocab = vocab};
        run(jl::build_argmax(c),
            jl::argmax_args(c, f32(logits_va, rows, vocab), i32(idx_va, rows, 1),
                            f32(val_va, rows, 1)),
            slices(n));
        auto idx_bytes = read(idx_va, rows * 4);
        std::vector<int32_t> idx(rows);
        std::memcpy(idx.data(), idx_bytes.data(), rows * 4);
        std::vector<float> val = read_f32(val_va, rows);
        for (uint32_t r = 0; r < rows; r++) {
            auto first = logits.begin() + r * vocab;
            auto best = std::max_element(first, first + vocab);  // the first of equal maxima
            EXPECT_EQ(idx[r], best - first) << "row " << r;
            EXPECT_EQ(val[r], *best) << "row " << r;
        }
    }
}

TEST_F(LinearOpsTest, AllReduceRing)
{
    for (auto [n, len] : {std::pair{1u, 100u}, {2u, 1000u}, {5u, 1003u}, {5u, 3u}}) {
        SCOPED_TRACE(std::to_string(n) + " slices, " + std::to_string(len));
        uint64_t mask = slices(n);
        std::vector<std::vector<float>> v;
        std::vector<uint64_t> table;
        uint32_t s = 0;
        for (uint32_t bit = 0; bit < 64; bit++)
            if (mask & (1ull << bit)) {  // each vector in its slice's memory
                v.push_back(jal::test::random_floats(len, 40u + s++));
                table.push_back(upload(v.back().data(), len * 4, JAL_PLACE_SLICE, 1ull << bit));
            }
        uint64_t table_va = upload(table);
        jl::AllReduceConfig c{.length = len};
        run(jl::build_all_reduce(c), jl::all_reduce_args(c, table_va), mask);
        for (uint32_t i = 0; i < n; i++) {
            std::vector<float> got = read_f32(table[i], len);
            for (uint32_t e = 0; e < len; e++) {
                double sum = 0, mag = 0;
                for (uint32_t j = 0; j < n; j++) sum += v[j][e], mag += std::fabs(v[j][e]);
                // n F32 additions: at most n roundings of 2^-24 of the running magnitude.
                ASSERT_NEAR(got[e], sum, n * 0x1p-24 * mag + 1e-30)
                    << "slice " << i << " element " << e;
            }
        }
    }
}

TEST_F(LinearOpsTest, TimingOnlyLeavesEveryOutputUntouched)
{
    const uint32_t m = 4, k = 64, vocab = 300;
    std::vector<float> x = jal::test::random_floats(m * k, 60);
    uint64_t x_va = upload(x);
    jl::QuantizeConfig qc{.m = m, .k = k, .out = JAL_DT_MXFP4};
    const size_t qbytes = m * jal::numerics::row_bytes(JAL_DT_MXFP4, k);
    uint64_t q_va = output(qbytes, 0x5a);
    HostMatrix qref = jal::test::quantized(x, m, k, JAL_DT_MXFP4);
    jal_dispatch_report r =
        run(jl::build_quantize(qc), jl::quantize_args(qc, f32(x_va, m, k), qref.ref(q_va)),
            slices(2), true);
    EXPECT_GT(r.modelled_ns, 0u);
    EXPECT_EQ(read(q_va, qbytes), std::vector<uint8_t>(qbytes, 0x5a));

    jl::EmbeddingConfig ec{.tokens = m, .vocab = m, .dim = k, .table = JAL_DT_F32};
    uint64_t ids_va = upload(std::vector<int32_t>{3, 2, 1, 0});
    uint64_t e_va = output(m * k * 4, 0x5a);
    r = run(jl::build_embedding(ec),
            jl::embedding_args(ec, i32(ids_va, m, 1), f32(x_va, m, k), f32(e_va, m, k)), slices(2),
            true);
    EXPECT_GT(r.modelled_ns, 0u);
    EXPECT_EQ(read(e_va, m * k * 4), std::vector<uint8_t>(m * k * 4, 0x5a));

    jl::ArgmaxConfig ac{.rows = 1, .vocab = vocab};
    uint64_t logits_va = upload(jal::test::random_floats(vocab, 61));
    uint64_t idx_va = output(4, 0x5a), val_va = output(4, 0x5a);
    r = run(jl::build_argmax(ac),
            jl::argmax_args(ac, f32(logits_va, 1, vocab), i32(idx_va, 1, 1), f32(val_va, 1, 1)),
            slices(3), true);
    EXPECT_GT(r.modelled_ns, 0u);
    EXPECT_EQ(read(idx_va, 4), std::vector<uint8_t>(4, 0x5a));
    EXPECT_EQ(read(val_va, 4), std::vector<uint8_t>(4, 0x5a));

    std::vector<float> v0 = jal::test::random_floats(k, 62), v1 = jal::test::random_floats(k, 63);
    uint64_t mask = slices(2);
    std::vector<uint64_t> table;
    const std::vector<float>* vs[2] = {&v0, &v1};
    for (uint32_t bit = 0, s = 0; bit < 64 && s < 2; bit++)
        if (mask & (1ull << bit))
            table.push_back(upload(vs[s++]->data(), k * 4, JAL_PLACE_SLICE, 1ull << bit));
    jl::AllReduceConfig rc{.length = k};
    r = run(jl::build_all_reduce(rc), jl::all_reduce_args(rc, upload(table)), mask, true);
    EXPECT_GT(r.modelled_ns, 0u);
    EXPECT_EQ(read_f32(table[0], k), v0);
    EXPECT_EQ(read_f32(table[1], k), v1);
}
