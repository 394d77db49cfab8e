// No kernel is modelled faster than the chip can go: for every dispatch, the modelled time is
// at least its HBM bytes at the bandwidth of the slices it ran on and its FLOPs at their
// highest matrix rate. The bounds come from the published chip (ARCHITECTURE.md §12:
// 15.36 TB/s of HBM and 13.4 PFLOP/s of MXFP4 over 64 slices), not from the emulator's
// timing constants, so a modelling error that made any kernel too cheap fails here.
// Shapes are GPT-OSS-120B's decode and prefill, run timing-only (no data is written).
#include <bit>
#include <string>
#include <vector>

#include "linear_fixture.hpp"

#include <jal/kernels/library/attention.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/library/kv_cache.hpp>
#include <jal/kernels/library/moe.hpp>
#include <jal/kernels/library/norm.hpp>
#include <jal/kernels/library/rope.hpp>

namespace jk = jal::kernels;
namespace jl = jal::kernels::linear;
using jk::TensorRef;

namespace {

constexpr double kSliceBytesPerNs = 15.36e12 / 64 / 1e9;  // 240 GB/s a slice
constexpr double kSliceFlopsPerNs = 13.4e15 / 64 / 1e9;   // MXFP4, the fastest format
constexpr uint32_t kSlices = 8;
constexpr uint32_t kEmbd = 2880, kHeads = 64, kKvHeads = 8;
constexpr uint32_t kDim = 64;

class RooflineTest : public jal::test::LinearKernelTest {
protected:
    // Device memory that is never written (timing-only runs read nothing).
    uint64_t space(uint64_t bytes, jal_placement placement = JAL_PLACE_INTERLEAVED)
    {
        memories.push_back(std::make_unique<jal::runtime::Memory>(
            *context, std::max<uint64_t>(bytes, 64), placement, slices(kSlices)));
        return memories.back()->va();
    }
    // Every expert's weights, stacked (never written).
    TensorRef expert_weights(const jl::ExpertGemmConfig& c)
    {
        const uint64_t row = jl::packed_row_bytes(c.weight, c.kdim);
        return {.va = space(row * c.n * c.experts),
                .rows = c.n * c.experts,
                .cols = c.kdim,
                .row_stride = row,
                .dtype = c.weight};
    }
    TensorRef f32(uint32_t rows, uint32_t cols)
    {
        return {.va = space(uint64_t{rows} * cols * 4),
                .rows = rows,
                .cols = cols,
                .dtype = JAL_DT_F32};
    }
    // Runs the kernel on kSlices slices (timing-only unless `data`) and checks it against both
    // roofs.
    void check(const std::string& what, const jk::CodeObject& code,
               const std::vector<uint64_t>& args, bool data = false)
    {
        SCOPED_TRACE(what);
        const jal_dispatch_report r = run(code, args, slices(kSlices), !data);
        ASSERT_EQ(r.status, JAL_STATUS_OK);
        const double bytes_ns = double(r.hbm_bytes) / (kSlices * kSliceBytesPerNs);
        const double flops_ns = double(r.flops) / (kSlices * kSliceFlopsPerNs);
        EXPECT_GT(r.hbm_bytes, 0u) << "a kernel that moves nothing measures nothing";
        EXPECT_GE(double(r.modelled_ns), bytes_ns)
            << what << ": " << r.hbm_bytes << " bytes in " << r.modelled_ns << " ns";
        EXPECT_GE(double(r.modelled_ns), flops_ns)
            << what << ": " << r.flops << " FLOPs in " << r.modelled_ns << " ns";
        std::printf("[ roofline ] %-34s %9.2f us  bytes bound %8.2f us  flops bound %8.2f us\n",
                    what.c_str(), r.modelled_ns / 1e3, bytes_ns / 1e3, flops_ns / 1e3);
    }
};

TEST_F(RooflineTest, GemmsPlainFusedAndAccumulating)
{
    for (uint32_t m : {1u, 256u})
        for (int variant = 0; variant < 4; variant++) {
            if (variant == 3 && m != 1) continue;  // W before ACQUIRE: one chunk of rows
            jl::GemmConfig c{.m = m, .n = kEmbd, .k = kEmbd, .weight = JAL_DT_MXFP4, .bias = true};
            c.rms_norm = variant == 1;
            c.accumulate = variant >= 2;
            c.w_before_acquire = variant == 3;
            const uint64_t row = jl::packed_row_bytes(c.weight, c.k);
            const uint64_t w_va = space(row * c.n);
            const TensorRef w{
                .va = w_va, .rows = c.n, .cols = c.k, .row_stride = row, .dtype = c.weight};
            const uint64_t table = upload(jl::shard_table(w, kSlices));
            const TensorRef bias = f32(1, c.n), norm = f32(1, c.k);
            check(jl::gemm_name(c), jl::build_gemm(c),
                  jl::gemm_args(c, f32(m, c.k), table, w, bias, f32(m, c.n), norm));
        }
}

TEST_F(RooflineTest, GemmsInRowGroups)
{
    // A prompt's GEMMs: rows split over 2, 4 and 8 groups of the 8 slices, norm fused and
    // epilogue add, in every numerics (ggml's BF16 activations run at the BF16 rate).
    for (uint32_t groups : {2u, 4u, 8u})
        for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast}) {
            jl::GemmConfig c{.m = 512,
                             .n = 1024,
                             .k = kEmbd,
                             .weight = JAL_DT_BF16,
                             .numerics = n,
                             .bias = true,
                             .rms_norm = groups != 4,
                             .accumulate = groups == 4,
                             .row_groups = groups};
            const uint64_t row = jl::packed_row_bytes(c.weight, c.k);
            const TensorRef w{.va = space(row * c.n),
                              .rows = c.n,
                              .cols = c.k,
                              .row_stride = row,
                              .dtype = c.weight};
            const uint64_t table = upload(jl::shard_table(w, kSlices));
            check(
                jl::gemm_name(c) + " groups " + std::to_string(groups), jl::build_gemm(c),
                jl::gemm_args(c, f32(c.m, c.k), table, w, f32(1, c.n), f32(c.m, c.n), f32(1, c.k)));
        }
}

TEST_F(RooflineTest, PromptAttentionInLargeQueryBlocks)
{
    // A prompt's attention as the runtime runs it: 64 queries an item, full and windowed,
    // over an F32 and an F16 cache.
    const uint32_t n_ctx = 1024, rows = 512, qkv = (kHeads + 2 * kKvHeads) * kDim;
    const jk::KvCacheConfig kv{.n_head_kv = kKvHeads, .head_dim = kDim, .n_ctx = n_ctx};
    jk::KvCache cache(*device, *context, *queue, kv,
                      jk::kv_head_masks(slices(kSlices), kKvHeads, 1));
    jk::KvCacheConfig kv_half = kv;
    kv_half.dtype = JAL_DT_F16;
    jk::KvCache cache_half(*device, *context, *queue, kv_half,
                           jk::kv_head_masks(slices(kSlices), kKvHeads, 1));
    TensorRef q = f32(rows, qkv);
    q.cols = kHeads * kDim;
    q.row_stride = qkv * 4ull;
    const TensorRef out = f32(rows, kHeads * kDim), sinks = f32(1, kHeads);
    for (jal_dtype kvt : {JAL_DT_F32, JAL_DT_F16})
        for (uint32_t window : {0u, 128u}) {
            const jk::AttentionConfig a{.n_head = kHeads,
                                        .n_head_kv = kKvHeads,
                                        .head_dim = kDim,
                                        .n_ctx = n_ctx,
                                        .window = window,
                                        .sinks = true,
                                        .q_block = 64,
                                        .kv_dtype = kvt};
            const uint64_t heads = kvt == JAL_DT_F16 ? cache_half.heads_va() : cache.heads_va();
            check("attention prompt 512 at 256, window " + std::to_string(window) +
                      (kvt == JAL_DT_F16 ? ", F16 KV" : ""),
                  jk::build_attention(a), jk::attention_args(a, q, out, 256, heads, sinks.va));
        }
    const jk::AttentionConfig a16{.n_head = kHeads,
                                  .n_head_kv = kKvHeads,
                                  .head_dim = kDim,
                                  .n_ctx = n_ctx,
                                  .sinks = true,
                                  .q_block = 64,
                                  .out_dtype = JAL_DT_BF16};
    TensorRef out16 = out;
    out16.dtype = JAL_DT_BF16;
    out16.row_stride = kHeads * kDim * 2ull;
    check("attention prompt 512 at 256, BF16 out", jk::build_attention(a16),
          jk::attention_args(a16, q, out16, 256, cache.heads_va(), sinks.va));
    // The prompt's append on all 8 slices with 2 heads: 4 slices a head.
    const jk::KvCacheConfig kv2{.n_head_kv = 2, .head_dim = kDim, .n_ctx = n_ctx};
    const TensorRef kv_rows = f32(rows, 2 * kDim);
    for (jal_dtype kvt : {JAL_DT_F32, JAL_DT_F16}) {
        jk::KvCacheConfig kv2t = kv2;
        kv2t.dtype = kvt;
        jk::KvCache cache2(*device, *context, *queue, kv2t,
                           jk::kv_head_masks(slices(kSlices), 2, 1));
        const jk::KvAppendConfig app{
            .n_head_kv = 2, .head_dim = kDim, .n_ctx = n_ctx, .kv_dtype = kvt};
        check(std::string("kv_append 512 rows, 2 heads on 8 slices") +
                  (kvt == JAL_DT_F16 ? ", F16" : ""),
              jk::build_kv_append(app),
              jk::kv_append_args(app, kv_rows, kv_rows, 256, cache2.heads_va()));
    }
}

TEST_F(RooflineTest, ExpertGemmBothSplitsWithTheFusedNorm)
{
    // With data: which experts a pair chose decides what is read, and timing-only runs read
    // no ids. Weights are device memory never written (zeros): every byte is still read.
    const uint32_t experts = 8;
    for (uint32_t tokens : {1u, 16u})
        for (jl::ExpertSplit split : {jl::ExpertSplit::experts, jl::ExpertSplit::rows}) {
            jl::ExpertGemmConfig c{.tokens = tokens,
                                   .k = 4,
                                   .experts = experts,
                                   .n = 720,
                                   .kdim = kEmbd,
                                   .split = split,
                                   .rms_norm = true};
            const TensorRef w = expert_weights(c);
            const uint64_t table =
                upload(split == jl::ExpertSplit::rows ? jl::expert_row_shard_table(c, w, kSlices)
                                                      : jl::expert_shard_table(c, w, kSlices));
            std::vector<int32_t> chosen;
            for (uint32_t p = 0; p < tokens * 4; p++)
                chosen.push_back(static_cast<int32_t>((p * 3 + p / 4) % experts));
            const TensorRef ids{
                .va = upload(chosen), .rows = tokens, .cols = 4, .dtype = JAL_DT_I32};
            check(jl::expert_gemm_name(c), jl::build_expert_gemm(c),
                  jl::expert_gemm_args(c, f32(tokens, c.kdim), ids, table, w, f32(c.experts, c.n),
                                       f32(tokens * 4, c.n), f32(1, c.kdim)),
                  true);
        }
}

TEST_F(RooflineTest, PromptExpertGemmsWithTheSwigluAndTheHandOver)
{
    // A prompt's gate|up (SwiGLU in the epilogue, rows stored as Q8_0) and down (Q8_0 rows
    // gathered as they are), ggml numerics, with data: 64 tokens over 8 experts.
    const uint32_t experts = 8, tokens = 64, F = 768;  // whole Q8_0 blocks
    std::vector<int32_t> chosen;
    for (uint32_t p = 0; p < tokens * 4; p++)
        chosen.push_back(static_cast<int32_t>((p * 3 + p / 4) % experts));
    const TensorRef ids{.va = upload(chosen), .rows = tokens, .cols = 4, .dtype = JAL_DT_I32};
    const uint64_t q8 = jl::packed_row_bytes(JAL_DT_Q8_0, F);
    const TensorRef mid{.va = space(q8 * tokens * 4),
                        .rows = tokens * 4,
                        .cols = F,
                        .row_stride = q8,
                        .dtype = JAL_DT_Q8_0};
    for (bool up : {true, false}) {
        jl::ExpertGemmConfig c{.tokens = tokens,
                               .k = 4,
                               .experts = experts,
                               .n = up ? 2 * F : kEmbd,
                               .kdim = up ? kEmbd : F,
                               .numerics = jl::Numerics::ggml,
                               .input_per_pair = !up,
                               .rms_norm = up,
                               .swiglu = up,
                               .x_dtype = up ? JAL_DT_F32 : JAL_DT_Q8_0,
                               .y_dtype = up ? JAL_DT_Q8_0 : JAL_DT_F32};
        const TensorRef w = expert_weights(c);
        const uint64_t table = upload(jl::expert_shard_table(c, w, kSlices));
        check(jl::expert_gemm_name(c), jl::build_expert_gemm(c),
              jl::expert_gemm_args(c, up ? f32(tokens, kEmbd) : mid, ids, table, w,
                                   f32(c.experts, c.n), up ? mid : f32(tokens * 4, kEmbd),
                                   f32(1, c.kdim)),
              true);
    }
}

TEST_F(RooflineTest, AttentionWithAndWithoutTheAppendAndTheRowKernels)
{
    const uint32_t n_ctx = 1024, qkv = (kHeads + 2 * kKvHeads) * kDim;
    const TensorRef q_rows = f32(1, qkv), out = f32(1, kHeads * kDim), sinks = f32(1, kHeads);
    TensorRef q = q_rows;
    q.cols = kHeads * kDim;
    q.row_stride = qkv * 4ull;
    for (jal_dtype kvt : {JAL_DT_F32, JAL_DT_F16}) {
        const jk::KvCacheConfig kv{
            .n_head_kv = kKvHeads, .head_dim = kDim, .n_ctx = n_ctx, .dtype = kvt};
        jk::KvCache cache(*device, *context, *queue, kv,
                          jk::kv_head_masks(slices(kSlices), kKvHeads, 1));
        for (bool append : {false, true}) {
            const jk::AttentionConfig a{.n_head = kHeads,
                                        .n_head_kv = kKvHeads,
                                        .head_dim = kDim,
                                        .n_ctx = n_ctx,
                                        .sinks = true,
                                        .append_kv = append,
                                        .kv_dtype = kvt};
            check(std::string("attention decode at 1000") + (append ? " + append" : "") +
                      (kvt == JAL_DT_F16 ? ", F16 KV" : ""),
                  jk::build_attention(a),
                  jk::attention_args(a, q, out, 1000, cache.heads_va(), sinks.va,
                                     q.va + kHeads * kDim * 4ull,
                                     q.va + (kHeads + kKvHeads) * kDim * 4ull));
        }
        // A batch of three rows (one a sequence: here three positions of one cache).
        jk::AttentionConfig b{.n_head = kHeads, .n_head_kv = kKvHeads, .head_dim = kDim};
        b.n_ctx = n_ctx, b.sinks = true, b.append_kv = true, b.kv_dtype = kvt, b.batch = true;
        const std::vector<jk::AttentionBatchEntry> entries = {{0, 1000, cache.heads_va()},
                                                              {1, 990, cache.heads_va()},
                                                              {2, 980, cache.heads_va()},
                                                              {}};
        TensorRef q3 = f32(3, qkv);
        q3.cols = kHeads * kDim;
        q3.row_stride = qkv * 4ull;
        check(std::string("attention decode batch of 3 + append") +
                  (kvt == JAL_DT_F16 ? ", F16 KV" : ""),
              jk::build_attention(b),
              jk::attention_batch_args(b, q3, f32(3, kHeads * kDim), upload(entries), 0, sinks.va,
                                       q3.va + kHeads * kDim * 4ull,
                                       q3.va + (kHeads + kKvHeads) * kDim * 4ull));
    }
    const jk::RmsNormConfig nc{.cols = kEmbd};
    check("rms_norm 256 rows", jk::build_rms_norm(nc),
          jk::rms_norm_args(nc, f32(256, kEmbd), f32(1, kEmbd), f32(256, kEmbd)));
    jk::MoeCombineConfig mc{.cols = kEmbd, .k = 4, .residual = true};
    check("moe_combine + residual 16 rows", jk::build_moe_combine(mc),
          jk::moe_combine_args(mc, f32(64, kEmbd), f32(16, 4), f32(16, kEmbd)));
}

}  // namespace
