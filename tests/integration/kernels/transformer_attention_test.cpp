// Attention (GQA, sinks, sliding window) and the KV cache append, on a jal-emu, against a
// double-precision reference written from the definition (llama.cpp: kq = k·q scaled by
// 1/sqrt(head_dim), causal and sliding-window mask with key p0 visible from p1 iff
// p1 - p0 < window, ggml_soft_max_add_sinks, then kqv).
//
// Tolerances: the chip computes QK^T and PV with F32 FMAs, exp within 2 ulp and a running
// maximum/sum in F32 (flash attention); outputs are averages of values of order 1:
// |err| <= 2e-5 + 1e-4 |want|. The append copies bits: K and V^T must match exactly.
// With an F16 cache the append rounds K and V to F16 (nearest even) and the reference
// attends over the same values, rounded on the host by the compiler's _Float16 (not by
// jal::numerics, the emulator's conversion): the same tolerance, and the append's bits
// must be the host's rounding exactly.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>

#include <jal/isa/numerics.hpp>
#include <jal/kernels/library/attention.hpp>
#include <jal/kernels/library/kv_cache.hpp>
#include <jal/kernels/library/transformer.hpp>

#include "transformer_fixture.hpp"
#include "transformer_reference.hpp"

namespace jk = jal::kernels;
using jal::test::all_near;

using namespace jal::test::ref;

// x rounded to IEEE half (nearest even), by the compiler, and back.
float half_rounded(float x)
{
    return static_cast<float>(static_cast<_Float16>(x));
}

std::vector<float> half_rounded(std::vector<float> v)
{
    for (float& x : v) x = half_rounded(x);
    return v;
}

class TransformerAttentionTest : public jal::test::TransformerKernelTest {
protected:
    // The KV cache's elements prefill_then_decode and check_append use.
    jal_dtype kv_dtype_ = JAL_DT_F32;
    // kv_append on n slices: every head's K rows and Vᵀ columns bit-exact (rounded to F16
    // with kv_dtype_ F16).
    void check_append(uint32_t n);
    // The attention with RoPE fused in against the rope kernel then the attention, in
    // kv_dtype_'s cache.
    void check_rope_fused(uint32_t G, unsigned n_slices, uint32_t k_block, uint32_t window = 0,
                          uint32_t key_splits = 1);
    void run_fused_append(const jk::AttentionConfig& att, unsigned n, uint32_t rows,
                          jal_status expect);
    // kv_append of the k and v columns that follow q's qcols in q's rows.
    void append_apart(const jk::KvAppendConfig& app, const jk::TensorRef& q, uint32_t qcols,
                      uint32_t kvcols, uint32_t pos0, const jk::KvCache& cache, uint64_t mask)
    {
        jk::TensorRef k = q, v = q;
        k.va += qcols * 4ull, k.cols = kvcols;
        v.va += (qcols + kvcols) * 4ull, v.cols = kvcols;
        run(jk::build_kv_append(app), jk::kv_append_args(app, k, v, pos0, cache.heads_va()), mask);
    }
    // A batch of several sequences' decode rows against one call a sequence (bits) and the
    // reference, in kv_dtype_'s cache.
    void check_batch(const Shape& s, bool rope, unsigned n_slices);
    std::vector<double> decode_ref(const Shape& s, const std::vector<float>& qkv, uint32_t pos,
                                   const std::vector<float>& sinks) const;
    std::vector<float> attend_rows(const jal::kernels::AttentionConfig& cfg,
                                   const jal::kernels::CodeObject& code,
                                   const std::vector<float>& qkv, uint32_t width, uint32_t pos0,
                                   uint32_t rows, const jal::kernels::KvCache& cache,
                                   uint64_t sinks_va, const jal::kernels::RopeTablesRef& tables,
                                   uint64_t mask);
    // Prefill `prefill` tokens, then decode one token at a time for `decode_steps` more,
    // checking the output of every call against the reference.
    void prefill_then_decode(const Shape& s, uint32_t n_ctx, uint32_t prefill,
                             uint32_t decode_steps, unsigned n_slices, uint32_t q_block = 0,
                             uint32_t k_block = 0, uint64_t seed = 40, uint32_t key_splits = 1,
                             bool fused_append = false)
    {
        const uint32_t total = prefill + decode_steps;
        const uint32_t qcols = s.n_head * s.head_dim, kvcols = s.n_head_kv * s.head_dim;
        auto q = jal::test::random_normal(size_t{total} * qcols, seed, 1.5);
        auto k = jal::test::random_normal(size_t{total} * kvcols, seed + 1, 1.5);
        auto v = jal::test::random_normal(size_t{total} * kvcols, seed + 2);
        auto sinks = jal::test::random_uniform(s.n_head, seed + 3, -2.0, 4.0);
        const uint64_t mask = slices(n_slices);

        const jk::KvCacheConfig kv_cfg{
            .n_head_kv = s.n_head_kv, .head_dim = s.head_dim, .n_ctx = n_ctx, .dtype = kv_dtype_};
        jk::KvCache cache(device(), context(), queue(), kv_cfg,
                          jk::kv_head_masks(mask, s.n_head_kv, key_splits));
        const jk::KvAppendConfig app{.n_head_kv = s.n_head_kv,
                                     .head_dim = s.head_dim,
                                     .n_ctx = n_ctx,
                                     .block_rows = 16,
                                     .kv_dtype = kv_dtype_};
        const jk::AttentionConfig att{.n_head = s.n_head,
                                      .n_head_kv = s.n_head_kv,
                                      .head_dim = s.head_dim,
                                      .n_ctx = n_ctx,
                                      .window = s.window,
                                      .sinks = s.sinks,
                                      .q_block = q_block,
                                      .k_block = k_block,
                                      .key_splits = key_splits,
                                      .append_kv = fused_append,
                                      .kv_dtype = kv_dtype_};
        const jk::CodeObject append_code = jk::build_kv_append(app);
        const jk::CodeObject attention_code = jk::build_attention(att);
        auto dsinks = upload(sinks, 1, s.n_head, 0, mask, JAL_PLACE_REPLICATED);
        // What the cache holds: the keys and values, rounded as the append rounds them.
        const bool half = kv_dtype_ == JAL_DT_F16;
        const std::vector<float> k_held = half ? half_rounded(k) : k,
                                 v_held = half ? half_rounded(v) : v;

        auto step = [&](uint32_t pos0, uint32_t rows) {
            SCOPED_TRACE("positions " + std::to_string(pos0) + ".." +
                         std::to_string(pos0 + rows - 1));
            auto dout = alloc(rows, qcols);
            if (fused_append) {  // rows of q | k | v, as the model runtime's fused projection
                std::vector<float> qkv;
                for (uint32_t r = 0; r < rows; r++)
                    for (const auto* src : {&q, &k, &v}) {
                        const uint32_t w = src == &q ? qcols : kvcols;
                        auto row = rows_of(*src, pos0 + r, 1, w);
                        qkv.insert(qkv.end(), row.begin(), row.end());
                    }
                auto dqkv = upload(qkv, rows, qcols + 2 * kvcols);
                jal::kernels::TensorRef dq = dqkv.ref;
                dq.cols = qcols;
                dq.row_stride = (qcols + 2 * kvcols) * 4;
                run(attention_code,
                    jk::attention_args(att, dq, dout.ref, pos0, cache.heads_va(), dsinks.ref.va,
                                       dq.va + qcols * 4ull, dq.va + (qcols + kvcols) * 4ull),
                    mask);
            } else {
                auto dk = upload(rows_of(k, pos0, rows, kvcols), rows, kvcols);
                auto dv = upload(rows_of(v, pos0, rows, kvcols), rows, kvcols);
                auto dq = upload(rows_of(q, pos0, rows, qcols), rows, qcols);
                run(append_code, jk::kv_append_args(app, dk.ref, dv.ref, pos0, cache.heads_va()),
                    mask);
                run(attention_code,
                    jk::attention_args(att, dq.ref, dout.ref, pos0, cache.heads_va(),
                                       dsinks.ref.va),
                    mask);
            }
            auto want =
                attention_ref(s, rows_of(q, pos0, rows, qcols), rows, pos0, k_held, v_held, sinks);
            EXPECT_TRUE(all_near(download(dout.ref), want, 2e-5, 1e-4));
        };
        step(0, prefill);
        for (uint32_t i = 0; i < decode_steps; i++) step(prefill + i, 1);
    }
};

TEST_F(TransformerAttentionTest, AppendWritesKeysAndTransposedValues)
{
    // On 2 slices (heads strided over them) and on 7 (two slices a head, each appending a
    // share of the rows; the seventh idle).
    for (uint32_t n : {2u, 7u}) {
        SCOPED_TRACE(std::to_string(n) + " slices");
        check_append(n);
    }
}

void TransformerAttentionTest::check_append(uint32_t n)
{
    const uint32_t n_ctx = 48, d = 64, g_heads = 3, rows = 21, pos0 = 5;
    auto k = jal::test::random_normal(size_t{rows} * g_heads * d, 41);
    auto v = jal::test::random_normal(size_t{rows} * g_heads * d, 42);
    const bool half = kv_dtype_ == JAL_DT_F16;
    jk::KvCache cache(device(), context(), queue(),
                      {.n_head_kv = g_heads, .head_dim = d, .n_ctx = n_ctx, .dtype = kv_dtype_},
                      jk::kv_head_masks(slices(n), g_heads));
    auto dk = upload(k, rows, g_heads * d);
    auto dv = upload(v, rows, g_heads * d);
    const jk::KvAppendConfig cfg{.n_head_kv = g_heads,
                                 .head_dim = d,
                                 .n_ctx = n_ctx,
                                 .block_rows = 8,
                                 .kv_dtype = kv_dtype_};
    run(jk::build_kv_append(cfg), jk::kv_append_args(cfg, dk.ref, dv.ref, pos0, cache.heads_va()),
        slices(n));
    // Element i of a head's cache as F32 bits (F16 elements widened: exact).
    auto element = [&](const std::vector<uint8_t>& bytes, size_t i) {
        if (!half) {
            uint32_t w;
            std::memcpy(&w, bytes.data() + 4 * i, 4);
            return w;
        }
        _Float16 h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        return std::bit_cast<uint32_t>(static_cast<float>(h));
    };
    for (uint32_t g = 0; g < g_heads; g++) {
        std::vector<uint8_t> kc(cache.k_bytes()), vt(cache.k_bytes());
        read(kc.data(), cache.k_va(g), kc.size());
        read(vt.data(), cache.vt_va(g), vt.size());
        for (uint32_t t = 0; t < rows; t++)
            for (uint32_t c = 0; c < d; c++) {
                float kw = k[(size_t{t} * g_heads + g) * d + c],
                      vw = v[(size_t{t} * g_heads + g) * d + c];
                if (half) kw = half_rounded(kw), vw = half_rounded(vw);
                ASSERT_EQ(element(kc, size_t{pos0 + t} * d + c), std::bit_cast<uint32_t>(kw))
                    << "K head " << g << " token " << t << " dim " << c;
                ASSERT_EQ(element(vt, size_t{c} * n_ctx + pos0 + t), std::bit_cast<uint32_t>(vw))
                    << "V^T head " << g << " token " << t << " dim " << c;
            }
    }
}

TEST_F(TransformerAttentionTest, HalfCacheAppendRoundsKeysAndValuesToF16)
{
    // The same append into an F16 cache, on 1 slice (every head), 8 (one a head and idle
    // slices) and 64 (a share of the rows each).
    kv_dtype_ = JAL_DT_F16;
    for (uint32_t n : {1u, 8u, 64u}) {
        SCOPED_TRACE(std::to_string(n) + " slices");
        check_append(n);
    }
}

TEST_F(TransformerAttentionTest, HalfCachePrefillThenDecode)
{
    // An F16 cache on 1, 8 and 64 slices: GQA 8 full causal with sinks (prompt items on
    // one slice, then on 8), windowed with key splits over 64 slices (flash decoding), and
    // the append fused into the attention (8 slices, one KV head each) as the model runtime
    // runs a decode step.
    kv_dtype_ = JAL_DT_F16;
    const Shape gqa{.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 0, .sinks = true};
    prefill_then_decode(gqa, 64, 40, 3, 1);
    prefill_then_decode(gqa, 64, 40, 3, 8, 0, 16, 41);
    prefill_then_decode({.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 12, .sinks = true},
                        96, 45, 3, 64, 7, 8, 42, /*key_splits=*/4);
    prefill_then_decode({.n_head = 64, .n_head_kv = 8, .head_dim = 64, .window = 0, .sinks = true},
                        64, 33, 3, 8, 0, 16, 43, 1, /*fused_append=*/true);
}

TEST_F(TransformerAttentionTest, ConvertedOutputIsTheF32OutputRounded)
{
    // The output written as BF16 (OCP rounding) and as Q8_0 (ggml's): bit for bit the F32
    // output (checked against the reference by the other tests) rounded on the host.
    const Shape s{.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 0, .sinks = true};
    const uint32_t n_ctx = 64, rows = 40, qcols = s.n_head * s.head_dim,
                   kvcols = s.n_head_kv * s.head_dim;
    auto q = jal::test::random_normal(size_t{rows} * qcols, 60, 1.5);
    auto k = jal::test::random_normal(size_t{rows} * kvcols, 61, 1.5);
    auto v = jal::test::random_normal(size_t{rows} * kvcols, 62);
    auto sinks = jal::test::random_uniform(s.n_head, 63, -2.0, 4.0);
    const uint64_t mask = slices(2);
    jk::KvCache cache(device(), context(), queue(),
                      {.n_head_kv = s.n_head_kv, .head_dim = s.head_dim, .n_ctx = n_ctx},
                      jk::kv_head_masks(mask, s.n_head_kv));
    const jk::KvAppendConfig app{.n_head_kv = s.n_head_kv, .head_dim = s.head_dim, .n_ctx = n_ctx};
    auto dk = upload(k, rows, kvcols), dv = upload(v, rows, kvcols), dq = upload(q, rows, qcols);
    auto dsinks = upload(sinks, 1, s.n_head, 0, mask, JAL_PLACE_REPLICATED);
    run(jk::build_kv_append(app), jk::kv_append_args(app, dk.ref, dv.ref, 0, cache.heads_va()),
        mask);
    jk::AttentionConfig att{.n_head = s.n_head,
                            .n_head_kv = s.n_head_kv,
                            .head_dim = s.head_dim,
                            .n_ctx = n_ctx,
                            .sinks = true,
                            .q_block = 8};
    auto f32 = alloc(rows, qcols);
    run(jk::build_attention(att),
        jk::attention_args(att, dq.ref, f32.ref, 0, cache.heads_va(), dsinks.ref.va), mask);
    const std::vector<float> out = download(f32.ref);
    for (auto [dt, mode] :
         {std::pair{JAL_DT_BF16, JAL_CVT_OCP}, std::pair{JAL_DT_Q8_0, JAL_CVT_GGML}}) {
        SCOPED_TRACE("dtype " + std::to_string(dt));
        att.out_dtype = dt, att.out_cvt = mode;
        const size_t row = jal::numerics::row_bytes(dt, qcols);
        auto conv = alloc(rows, qcols);  // F32-sized: room enough
        jal::kernels::TensorRef ref = conv.ref;
        ref.dtype = dt, ref.row_stride = row;
        run(jk::build_attention(att),
            jk::attention_args(att, dq.ref, ref, 0, cache.heads_va(), dsinks.ref.va), mask);
        std::vector<uint8_t> got(rows * row), want(rows * row);
        read(got.data(), ref.va, got.size());
        for (uint32_t r = 0; r < rows; r++)
            jal::numerics::quantize_row(dt, out.data() + size_t{r} * qcols, want.data() + r * row,
                                        qcols, mode);
        EXPECT_EQ(got, want);
    }
}

TEST_F(TransformerAttentionTest, AppendPastTheCacheTraps)
{
    const jk::KvAppendConfig cfg{.n_head_kv = 1, .head_dim = 64, .n_ctx = 8};
    jk::KvCache cache(device(), context(), queue(), {.n_head_kv = 1, .head_dim = 64, .n_ctx = 8},
                      {{1}});
    auto dk = alloc(4, 64);
    std::vector<uint64_t> args = jk::kv_append_args(cfg, dk.ref, dk.ref, 4, cache.heads_va());
    args[5] = 6;  // pos0 6 + 4 rows > 8: the host check is bypassed, the kernel must refuse
    run(jk::build_kv_append(cfg), args, slices(1), JAL_STATUS_OUT_OF_RANGE);
}

TEST_F(TransformerAttentionTest, GqaEightFullCausalWithSinks)
{
    prefill_then_decode({.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 0, .sinks = true},
                        64, 40, 3, 4);
}

TEST_F(TransformerAttentionTest, GqaOneWindowShorterThanTheSequenceWithoutSinks)
{
    prefill_then_decode({.n_head = 4, .n_head_kv = 4, .head_dim = 64, .window = 8, .sinks = false},
                        64, 37, 3, 4,
                        /*q_block=*/6, /*k_block=*/16);
}

TEST_F(TransformerAttentionTest, GqaEightWindowWithSinksDecodeAfterPrefill)
{
    prefill_then_decode({.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 16, .sinks = true},
                        96, 50, 4, 8,
                        /*q_block=*/5, /*k_block=*/16);
}

TEST_F(TransformerAttentionTest, ChunksThatAreFullyMaskedForSomeRows)
{
    // window 4 and chunks of 4 keys with 8 queries an item: the first chunk holds none of
    // the last rows' keys, so their running maximum starts from nothing.
    prefill_then_decode({.n_head = 8, .n_head_kv = 1, .head_dim = 64, .window = 4, .sinks = false},
                        32, 24, 2, 2,
                        /*q_block=*/8, /*k_block=*/4);
    prefill_then_decode({.n_head = 8, .n_head_kv = 1, .head_dim = 64, .window = 4, .sinks = true},
                        32, 24, 2, 2,
                        /*q_block=*/8, /*k_block=*/4, 60);
}

TEST_F(TransformerAttentionTest, KeySplitsMergeAcrossSlicesForDecode)
{
    // Flash decoding: each (head, query block) item's keys cut into 4 ranges on 4 slices,
    // merged over SEND/RECV. GQA 8 with sinks (only split 0 starts from the sink), full
    // causal and with a window (most splits of a windowed decode see no key at all).
    prefill_then_decode({.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 0, .sinks = true},
                        96, 45, 3, 8,
                        /*q_block=*/0, /*k_block=*/8, 80, /*key_splits=*/4);
    prefill_then_decode({.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 12, .sinks = true},
                        96, 45, 3, 8,
                        /*q_block=*/7, /*k_block=*/8, 81, /*key_splits=*/4);
    prefill_then_decode({.n_head = 4, .n_head_kv = 4, .head_dim = 64, .window = 0, .sinks = false},
                        64, 30, 2, 4,
                        /*q_block=*/8, /*k_block=*/16, 82, /*key_splits=*/2);
}

TEST_F(TransformerAttentionTest, AppendFusedIntoTheAttention)
{
    // append_kv: each slice appends the keys and values of the heads it attends for, then
    // attends; a prompt, then decode steps. One head a slice, two heads a slice, windowed.
    prefill_then_decode({.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 0, .sinks = true},
                        64, 20, 3, 2, 0, 16, 90, 1, true);
    prefill_then_decode({.n_head = 16, .n_head_kv = 4, .head_dim = 64, .window = 0, .sinks = true},
                        64, 40, 2, 2, 0, 16, 91, 1, true);
    prefill_then_decode({.n_head = 8, .n_head_kv = 4, .head_dim = 64, .window = 12, .sinks = false},
                        64, 33, 3, 4, 5, 8, 92, 1, true);
}

// One call of an attention with append_kv (4 query heads, 2 KV heads of 64, 8 positions)
// over `rows` rows from position 0 on `n` slices, the cache placed for its key splits; the
// dispatch must end with `expect`.
void TransformerAttentionTest::run_fused_append(const jk::AttentionConfig& att, unsigned n,
                                                uint32_t rows, jal_status expect)
{
    jk::KvCache cache(device(), context(), queue(), {.n_head_kv = 2, .head_dim = 64, .n_ctx = 8},
                      jk::kv_head_masks(slices(n), 2, att.splits()));
    auto dq = alloc(rows, 4 * 64 + 2 * 2 * 64);
    jal::kernels::TensorRef q = dq.ref;
    q.cols = 4 * 64;
    auto out = alloc(rows, 4 * 64);
    run(jk::build_attention(att),
        jk::attention_args(att, q, out.ref, 0, cache.heads_va(), 0, q.va + 1024, q.va + 1536),
        slices(n), expect);
}

TEST_F(TransformerAttentionTest, AppendFusedNeedsASliceCountDividingTheKvHeads)
{
    run_fused_append({.n_head = 4, .n_head_kv = 2, .head_dim = 64, .n_ctx = 8, .append_kv = true},
                     3, 1, JAL_STATUS_INVALID_FIELD);
}

TEST_F(TransformerAttentionTest, AppendFusedWithKeySplitsNeedsOneQueryBlock)
{
    // Each split appends the rows in its share of one block's keys: a call of more rows
    // than a block traps, and so does a slice count the splits do not divide, before any
    // row is stored.
    const jk::AttentionConfig att{.n_head = 4,
                                  .n_head_kv = 2,
                                  .head_dim = 64,
                                  .n_ctx = 8,
                                  .q_block = 2,
                                  .key_splits = 2,
                                  .append_kv = true};
    run_fused_append(att, 4, 2, JAL_STATUS_OK);
    run_fused_append(att, 4, 3, JAL_STATUS_INVALID_FIELD);
    run_fused_append(att, 3, 2, JAL_STATUS_INVALID_FIELD);
}

TEST_F(TransformerAttentionTest, KeySplitsNeedASliceCountTheyDivide)
{
    const jk::AttentionConfig att{
        .n_head = 2, .n_head_kv = 1, .head_dim = 64, .n_ctx = 8, .key_splits = 3};
    jk::KvCache cache(device(), context(), queue(), {.n_head_kv = 1, .head_dim = 64, .n_ctx = 8},
                      {{0xf}});
    auto dq = alloc(1, 128);
    jk::Program program(device(), context(), queue(), jk::build_attention(att));
    // the host call refuses 4 slices for 3 splits; the kernel itself traps
    EXPECT_THROW(jk::attention(launcher(), program, att, dq.ref, dq.ref, 0, cache.heads_va(), 0,
                               {.slice_mask = 0xf}),
                 jal::Error);
    run(jk::build_attention(att), jk::attention_args(att, dq.ref, dq.ref, 0, cache.heads_va(), 0),
        slices(4), JAL_STATUS_INVALID_FIELD);
}

// The attention with RoPE fused in (it rotates its queries and, before appending them, its
// keys) gives the bits of the rope kernel over q | k followed by the attention: a prompt,
// then decode steps; the keys it appended are rotated alike (the later steps read them).
// F32 and F16 caches (the F16 one rounds the rotated keys, as the unfused append does).
TEST_F(TransformerAttentionTest, RopeFusedIntoTheAttentionGivesTheBitsOfRopeThenAttention)
{
    for (jal_dtype kvt : {JAL_DT_F32, JAL_DT_F16}) {
        SCOPED_TRACE(kvt == JAL_DT_F16 ? "F16 cache" : "F32 cache");
        kv_dtype_ = kvt;
        check_rope_fused(2, 2, 0);
        // Decode rows whose first key chunk holds no appended key load it with the queries,
        // before the rows are stored (chunks of 16 keys); and several KV heads a slice
        // append from rows of their own in the append blocks.
        check_rope_fused(2, 2, 16);
        check_rope_fused(4, 1, 16);
        // A full sliding window is one chunk ending with the appended key: the other keys
        // load with the queries and the appended one is copied in from the append blocks.
        check_rope_fused(2, 2, 16, 12);
        check_rope_fused(4, 1, 16, 12);
        // Key splits (4 a head, on 8 slices; each head's cache replicated over its 4): the
        // split whose share holds a row's position appends it, to every copy.
        check_rope_fused(2, 8, 16, 0, 4);
        check_rope_fused(2, 8, 16, 12, 4);
    }
}

void TransformerAttentionTest::check_rope_fused(uint32_t G, unsigned n_slices, uint32_t k_block,
                                                uint32_t window, uint32_t key_splits)
{
    SCOPED_TRACE(std::to_string(G) + " KV heads on " + std::to_string(n_slices) +
                 " slices, chunks of " + std::to_string(k_block) + ", window " +
                 std::to_string(window) + ", key splits " + std::to_string(key_splits));
    // With key splits, enough steps that a split reads keys another split appended (its
    // share moves down as the keys grow): they must be in every copy of the cache.
    const uint32_t H = 16, D = 64, n_ctx = 64, prefill = 20, steps = key_splits > 1 ? 9 : 3;
    const uint32_t qcols = H * D, kvcols = G * D, width = qcols + 2 * kvcols;
    const uint64_t mask = slices(n_slices);
    const jk::RopeTables tables = jk::rope_yarn_tables(jk::YarnParams{}, n_ctx);
    auto dcos = upload(tables.cos, n_ctx, tables.half, 0, mask, JAL_PLACE_REPLICATED);
    auto dsin = upload(tables.sin, n_ctx, tables.half, 0, mask, JAL_PLACE_REPLICATED);
    const jk::RopeTablesRef tref{
        .cos_va = dcos.ref.va, .sin_va = dsin.ref.va, .n_positions = n_ctx};
    auto sinks = jal::test::random_uniform(H, 97, -2.0, 4.0);
    auto dsinks = upload(sinks, 1, H, 0, mask, JAL_PLACE_REPLICATED);
    const auto qkv = jal::test::random_normal(size_t{prefill + steps} * width, 98, 1.5);
    const jk::KvCacheConfig kv_cfg{
        .n_head_kv = G, .head_dim = D, .n_ctx = n_ctx, .dtype = kv_dtype_};
    const std::vector<uint64_t> heads = jk::kv_head_masks(mask, G, key_splits);
    jk::KvCache separate_cache(device(), context(), queue(), kv_cfg, heads);
    jk::KvCache fused_cache(device(), context(), queue(), kv_cfg, heads);
    jk::AttentionConfig att{.n_head = H,
                            .n_head_kv = G,
                            .head_dim = D,
                            .n_ctx = n_ctx,
                            .window = window,
                            .sinks = true,
                            .q_block = k_block ? 4u : 0u,  // the queries' RoPE rows fit a chunk
                            .k_block = k_block,
                            .key_splits = key_splits,
                            .append_kv = true,
                            .kv_dtype = kv_dtype_};
    jk::AttentionConfig fused_att = att;
    fused_att.rope = true;
    // With key splits the unfused side appends with kv_append (the split append is what is
    // checked), and so do both sides for a prompt (the split append takes one query block).
    jk::AttentionConfig plain_att = att;
    plain_att.append_kv = false;
    const jk::KvAppendConfig app{
        .n_head_kv = G, .head_dim = D, .n_ctx = n_ctx, .block_rows = 8, .kv_dtype = kv_dtype_};
    const jk::RopeConfig rope{.n_head = H + G, .head_dim = D};
    const jk::CodeObject rope_code = jk::build_rope_neox(rope);
    auto step = [&](uint32_t pos0, uint32_t rows) {
        SCOPED_TRACE("positions from " + std::to_string(pos0));
        const std::span<const float> in(qkv.data() + size_t{pos0} * width, size_t{rows} * width);
        auto attend = [&](const jk::AttentionConfig& cfg, const jk::KvCache& cache,
                          bool rotate_first) {
            auto d = upload(in, rows, width);
            jal::kernels::TensorRef q = d.ref;
            q.cols = qcols;
            if (rotate_first) {  // q and k rotated in place, as the unfused graph does
                jal::kernels::TensorRef qk = d.ref;
                qk.cols = qcols + kvcols;
                qk.row_stride = width * 4ull;
                run(rope_code, jk::rope_neox_args(rope, qk, {}, pos0, tref), mask);
            }
            q.row_stride = width * 4ull;
            auto out = alloc(rows, qcols);
            if (!cfg.append_kv) append_apart(app, q, qcols, kvcols, pos0, cache, mask);
            run(jk::build_attention(cfg),
                jk::attention_args(cfg, q, out.ref, pos0, cache.heads_va(), dsinks.ref.va,
                                   q.va + qcols * 4ull, q.va + (qcols + kvcols) * 4ull,
                                   rotate_first ? jk::RopeTablesRef{} : tref),
                mask);
            return download(out.ref);
        };
        const bool split_prompt = key_splits > 1 && rows > att.queries_per_item();
        const std::vector<float> want =
            attend(key_splits > 1 ? plain_att : att, separate_cache, true);
        const std::vector<float> got = split_prompt ? attend(plain_att, fused_cache, true)
                                                    : attend(fused_att, fused_cache, false);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
    };
    step(0, prefill);
    for (uint32_t i = 0; i < steps; i++) step(prefill + i, 1);
}

// A batch (AttentionConfig::batch) runs the decode rows of several sequences in one call:
// after each sequence's prompt, decode steps whose rows (in another order than the
// sequences, with a row the list leaves out) go through one batched call, against the same
// steps run one call a sequence on copies of the caches: the same output bits, and (without
// RoPE, which the reference does not model) the reference's values. The later steps read
// what the batch appended.
TEST_F(TransformerAttentionTest, BatchGivesTheBitsOfOneCallASequence)
{
    for (jal_dtype kvt : {JAL_DT_F32, JAL_DT_F16}) {
        SCOPED_TRACE(kvt == JAL_DT_F16 ? "F16 cache" : "F32 cache");
        kv_dtype_ = kvt;
        check_batch({.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 0, .sinks = true},
                    false, 2);
        check_batch({.n_head = 8, .n_head_kv = 4, .head_dim = 64, .window = 12, .sinks = false},
                    false, 2);
        check_batch({.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 0, .sinks = true},
                    true, 2);
    }
}

// The reference's output for the decode row at `pos` of a sequence whose q | k | v rows by
// position are `qkv`, over the keys and values the cache holds (rounded in an F16 one).
std::vector<double> TransformerAttentionTest::decode_ref(const Shape& s,
                                                         const std::vector<float>& qkv,
                                                         uint32_t pos,
                                                         const std::vector<float>& sinks) const
{
    const uint32_t qcols = s.n_head * s.head_dim, kvcols = s.n_head_kv * s.head_dim,
                   width = qcols + 2 * kvcols;
    std::vector<float> k, v;
    for (uint32_t p = 0; p <= pos; p++) {
        const float* row = qkv.data() + size_t{p} * width;
        k.insert(k.end(), row + qcols, row + qcols + kvcols);
        v.insert(v.end(), row + qcols + kvcols, row + width);
    }
    if (kv_dtype_ == JAL_DT_F16) k = half_rounded(k), v = half_rounded(v);
    const std::vector<float> q(qkv.begin() + size_t{pos} * width,
                               qkv.begin() + size_t{pos} * width + qcols);
    return attention_ref(s, q, 1, pos, k, v, sinks);
}

// One call of `code` (one sequence, built for cfg) for rows [pos0, pos0 + rows) of the
// q | k | v rows `qkv` (width floats a row), appending to `cache`: its output rows.
std::vector<float>
TransformerAttentionTest::attend_rows(const jk::AttentionConfig& cfg, const jk::CodeObject& code,
                                      const std::vector<float>& qkv, uint32_t width, uint32_t pos0,
                                      uint32_t rows, const jk::KvCache& cache, uint64_t sinks_va,
                                      const jk::RopeTablesRef& tables, uint64_t mask)
{
    const uint32_t qcols = cfg.n_head * cfg.head_dim, kvcols = cfg.n_head_kv * cfg.head_dim;
    const std::span<const float> in(qkv.data() + size_t{pos0} * width, size_t{rows} * width);
    auto d = upload(in, rows, width);
    jal::kernels::TensorRef q = d.ref;
    q.cols = qcols;
    q.row_stride = width * 4ull;
    auto out = alloc(rows, qcols);
    run(code,
        jk::attention_args(cfg, q, out.ref, pos0, cache.heads_va(), sinks_va, q.va + qcols * 4ull,
                           q.va + (qcols + kvcols) * 4ull, tables),
        mask);
    return download(out.ref);
}

void TransformerAttentionTest::check_batch(const Shape& s, bool rope, unsigned n_slices)
{
    const uint32_t H = s.n_head, G = s.n_head_kv, D = s.head_dim, n_ctx = 64, steps = 3;
    const uint32_t qcols = H * D, kvcols = G * D, width = qcols + 2 * kvcols;
    const std::vector<uint32_t> prompts = {20, 7, 33};
    const uint32_t n_seq = static_cast<uint32_t>(prompts.size());
    const uint64_t mask = slices(n_slices);
    const jk::RopeTables tables = jk::rope_yarn_tables(jk::YarnParams{}, n_ctx);
    auto dcos = upload(tables.cos, n_ctx, tables.half, 0, mask, JAL_PLACE_REPLICATED);
    auto dsin = upload(tables.sin, n_ctx, tables.half, 0, mask, JAL_PLACE_REPLICATED);
    const jk::RopeTablesRef tref =
        rope ? jk::RopeTablesRef{.cos_va = dcos.ref.va, .sin_va = dsin.ref.va, .n_positions = n_ctx}
             : jk::RopeTablesRef{};
    auto sinks = jal::test::random_uniform(H, 101, -2.0, 4.0);
    auto dsinks = upload(sinks, 1, H, 0, mask, JAL_PLACE_REPLICATED);
    jk::AttentionConfig att{.n_head = H, .n_head_kv = G, .head_dim = D, .n_ctx = n_ctx};
    att.window = s.window, att.sinks = s.sinks, att.append_kv = true, att.rope = rope;
    att.kv_dtype = kv_dtype_;
    jk::AttentionConfig batch_att = att;
    batch_att.batch = true;
    const jk::CodeObject one_code = jk::build_attention(att),
                         batch_code = jk::build_attention(batch_att);
    // Every sequence's q | k | v rows by position, and two caches each: one the batch
    // appends to, one the calls a sequence do.
    std::vector<std::vector<float>> qkv;
    std::vector<std::unique_ptr<jk::KvCache>> batched, single;
    const jk::KvCacheConfig kv_cfg{
        .n_head_kv = G, .head_dim = D, .n_ctx = n_ctx, .dtype = kv_dtype_};
    for (uint32_t j = 0; j < n_seq; j++) {
        qkv.push_back(jal::test::random_normal(size_t{n_ctx} * width, 102 + j, 1.5));
        for (auto* caches : {&batched, &single})
            caches->push_back(std::make_unique<jk::KvCache>(device(), context(), queue(), kv_cfg,
                                                            jk::kv_head_masks(mask, G, 1)));
    }
    auto one_call = [&](uint32_t j, uint32_t pos0, uint32_t rows, const jk::KvCache& cache) {
        return attend_rows(att, one_code, qkv[j], width, pos0, rows, cache, dsinks.ref.va, tref,
                           mask);
    };
    for (uint32_t j = 0; j < n_seq; j++)
        for (auto* caches : {&batched, &single}) one_call(j, 0, prompts[j], *(*caches)[j]);

    // The batch's rows: sequence order[i] in row 1 + i; row 0 is in no entry.
    const std::vector<uint32_t> order = {2, 0, 1};
    for (uint32_t step = 0; step < steps; step++) {
        SCOPED_TRACE("decode step " + std::to_string(step));
        std::vector<float> in(size_t{n_seq + 1} * width, 0.0f);
        std::vector<jk::AttentionBatchEntry> entries;
        for (uint32_t i = 0; i < n_seq; i++) {
            const uint32_t j = order[i], pos = prompts[j] + step;
            std::copy_n(qkv[j].begin() + size_t{pos} * width, width, in.begin() + (i + 1) * width);
            entries.push_back({i + 1, pos, batched[j]->heads_va()});
        }
        entries.push_back({});  // the end of the list
        std::vector<int32_t> list(entries.size() * 4);
        std::memcpy(list.data(), entries.data(), list.size() * 4);
        auto d = upload(in, n_seq + 1, width);
        jal::kernels::TensorRef q = d.ref;
        q.cols = qcols;
        q.row_stride = width * 4ull;
        auto out = alloc(n_seq + 1, qcols);
        auto dlist = upload_i32(list, static_cast<uint32_t>(entries.size()), 4);
        run(batch_code,
            jk::attention_batch_args(batch_att, q, out.ref, dlist.ref.va, 0, dsinks.ref.va,
                                     q.va + qcols * 4ull, q.va + (qcols + kvcols) * 4ull, tref),
            mask);
        const std::vector<float> got = download(out.ref);
        for (uint32_t i = 0; i < n_seq; i++) {
            const uint32_t j = order[i], pos = prompts[j] + step;
            SCOPED_TRACE("sequence " + std::to_string(j));
            const std::vector<float> want = one_call(j, pos, 1, *single[j]);
            ASSERT_EQ(want.size(), qcols);
            EXPECT_EQ(std::memcmp(got.data() + size_t{i + 1} * qcols, want.data(), qcols * 4), 0);
            if (!rope) {
                EXPECT_TRUE(all_near(std::vector<float>(got.begin() + size_t{i + 1} * qcols,
                                                        got.begin() + size_t{i + 2} * qcols),
                                     decode_ref(s, qkv[j], pos, sinks), 2e-5, 1e-4));
            }
        }
    }
}

// A batch's entry past the cache traps OUT_OF_RANGE, as a call of one sequence does; a
// batch's arguments are refused for a kernel built without batch, and the other way round.
TEST_F(TransformerAttentionTest, BatchEntryPastTheCacheTraps)
{
    const jk::AttentionConfig att{
        .n_head = 2, .n_head_kv = 1, .head_dim = 64, .n_ctx = 8, .batch = true};
    jk::KvCache cache(device(), context(), queue(), {.n_head_kv = 1, .head_dim = 64, .n_ctx = 8},
                      {{0x1}});
    auto dq = alloc(1, 128);
    const uint64_t heads = cache.heads_va();
    const std::vector<int32_t> list = {
        0, 8, static_cast<int32_t>(heads & 0xffffffffu), static_cast<int32_t>(heads >> 32), 0, 0,
        0, 0};
    auto dlist = upload_i32(list, 2, 4);
    run(jk::build_attention(att), jk::attention_batch_args(att, dq.ref, dq.ref, dlist.ref.va, 0, 0),
        slices(1), JAL_STATUS_OUT_OF_RANGE);
    jk::AttentionConfig one = att;
    one.batch = false;
    EXPECT_THROW(jk::attention_batch_args(one, dq.ref, dq.ref, dlist.ref.va, 0, 0), jal::Error);
    EXPECT_THROW(jk::attention_args(att, dq.ref, dq.ref, 0, heads, 0), jal::Error);
}
