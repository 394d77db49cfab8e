// The router as messages (gemm.hpp's send_y, store_y, recv_x; expert_gemm.hpp's
// recv_logits, recv_x): in one staged program, the output projection (the residual add in
// its epilogue) sends its columns of the residual rows to every slice twice, the router
// (norm fused) receives its x from the first copy and sends its logits instead of storing
// them, and gate|up (routing and norm fused) receives the second copy and the logits
// instead of loading them, with no barrier between the three; the down projection takes
// gate|up's rows as messages in both runs. The residual rows the four leave must be the
// bits of the same kernels storing and loading, and the router's logits must not be
// stored where they are sent.
#include <cstring>
#include <string>
#include <vector>

#include "linear_fixture.hpp"

#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>

namespace jl = jal::kernels::linear;
using jal::kernels::TensorRef;
using jal::test::HostMatrix;

namespace {

class LinearRouterMessagesTest : public jal::test::LinearKernelTest {
protected:
    static constexpr uint32_t kTokens = 2, kK = 4, kExperts = 16, kEmbd = 64, kFf = 96;
    static constexpr uint32_t kAttn = 32;  // the output projection's input columns

    static jl::GemmConfig projection(jl::Numerics n, bool messages)
    {
        return {.m = kTokens,
                .n = kEmbd,
                .k = kAttn,
                .weight = JAL_DT_BF16,
                .numerics = n,
                .bias = true,
                .accumulate = true,
                .send_y = messages ? 2u : 0u};
    }
    static jl::GemmConfig router(jl::Numerics n, bool messages)
    {
        return {.m = kTokens,
                .n = kExperts,
                .k = kEmbd,
                .weight = JAL_DT_BF16,
                .numerics = n,
                .bias = true,
                .rms_norm = true,
                .recv_x = messages,
                .send_y = messages ? 1u : 0u,
                .store_y = !messages};
    }
    static jl::ExpertGemmConfig gate_up(jl::Numerics n, bool messages)
    {
        return {.tokens = kTokens,
                .k = kK,
                .experts = kExperts,
                .n = 2 * kFf,
                .kdim = kEmbd,
                .numerics = n,
                .split = jl::ExpertSplit::rows,
                .rms_norm = true,
                .swiglu = true,
                .route = true,
                .send_output = true,
                .recv_logits = messages,
                .recv_x = messages};
    }
    static jl::ExpertGemmConfig down(jl::Numerics n)
    {
        return {.tokens = kTokens,
                .k = kK,
                .experts = kExperts,
                .n = kEmbd,
                .kdim = kFf,
                .numerics = n,
                .input_per_pair = true,
                .split = jl::ExpertSplit::rows,
                .combine = true,
                .recv_input = true};
    }

    struct Dense {
        uint64_t w = 0, table = 0, bias = 0;
    };
    struct Model {
        Dense wo, router;
        uint64_t norm, gu_w, gu_table, gu_bias, dn_w, dn_table, dn_bias;
    };

    Dense dense(uint32_t rows, uint32_t cols, uint32_t seed, uint32_t nslices)
    {
        Dense d;
        HostMatrix w = jal::test::quantized(
            jal::test::random_floats(size_t{rows} * cols, seed, 0.5f), rows, cols, JAL_DT_BF16);
        d.w = upload(w.bytes);
        d.table = upload(jl::shard_table(w.ref(d.w), nslices));
        d.bias = upload(jal::test::random_floats(rows, seed + 1));
        return d;
    }

    Model upload_model(jl::Numerics n, uint32_t nslices)
    {
        Model m{};
        m.wo = dense(kEmbd, kAttn, 80, nslices);
        m.router = dense(kExperts, kEmbd, 82, nslices);
        m.norm = upload(jal::test::random_floats(kEmbd, 71));
        const jl::ExpertGemmConfig gu = gate_up(n, false), dn = down(n);
        HostMatrix wg = jal::test::quantized(
            jal::test::random_floats(size_t{kExperts} * gu.n * kEmbd, 72, 0.5f), kExperts * gu.n,
            kEmbd, gu.weight);
        HostMatrix wd =
            jal::test::quantized(jal::test::random_floats(size_t{kExperts} * dn.n * kFf, 73, 0.5f),
                                 kExperts * dn.n, kFf, dn.weight);
        m.gu_w = upload(jal::test::packed_expert_rows(gu, wg.bytes, nslices));
        m.dn_w = upload(jal::test::packed_expert_rows(dn, wd.bytes, nslices));
        m.gu_table = upload(jl::expert_row_shard_table(gu, wg.ref(m.gu_w), nslices));
        m.dn_table = upload(jl::expert_row_shard_table(dn, wd.ref(m.dn_w), nslices));
        m.gu_bias = upload(jal::test::random_floats(size_t{kExperts} * gu.n, 74));
        m.dn_bias = upload(jal::test::random_floats(size_t{kExperts} * dn.n, 75));
        return m;
    }

    struct Result {
        std::vector<uint8_t> x;
        bool logits_written = false;
        uint32_t status = 0;
    };

    // The four kernels as one staged program on `nslices` slices.
    Result run_layer(jl::Numerics n, const Model& m, uint32_t nslices, bool messages)
    {
        const jl::GemmConfig po = projection(n, messages), pr = router(n, messages);
        const jl::ExpertGemmConfig gu = gate_up(n, messages), dn = down(n);
        const uint64_t x_va = upload(jal::test::random_floats(size_t{kTokens} * kEmbd, 76));
        const uint64_t attn_va =
            upload(jal::test::random_floats(size_t{kTokens} * kAttn, 77, 2.0f));
        const uint64_t logits_va = output(size_t{kTokens} * kExperts * 4);
        const uint32_t pairs = kTokens * kK;
        const TensorRef x{.va = x_va, .rows = kTokens, .cols = kEmbd, .dtype = JAL_DT_F32};
        const TensorRef attn{.va = attn_va, .rows = kTokens, .cols = kAttn, .dtype = JAL_DT_F32};
        const TensorRef logits{
            .va = logits_va, .rows = kTokens, .cols = kExperts, .dtype = JAL_DT_F32};
        const TensorRef ids{
            .va = output(pairs * 4), .rows = kTokens, .cols = kK, .dtype = JAL_DT_I32};
        const TensorRef wts{
            .va = output(pairs * 4), .rows = kTokens, .cols = kK, .dtype = JAL_DT_F32};
        const TensorRef act{
            .va = output(size_t{pairs} * kFf * 4), .rows = pairs, .cols = kFf, .dtype = JAL_DT_F32};
        const TensorRef norm{.va = m.norm, .rows = 1, .cols = kEmbd, .dtype = JAL_DT_F32};
        const TensorRef wo{.va = m.wo.w, .rows = kEmbd, .cols = kAttn, .dtype = JAL_DT_BF16};
        const TensorRef bo{.va = m.wo.bias, .rows = 1, .cols = kEmbd, .dtype = JAL_DT_F32};
        const TensorRef wr{.va = m.router.w, .rows = kExperts, .cols = kEmbd, .dtype = JAL_DT_BF16};
        const TensorRef br{.va = m.router.bias, .rows = 1, .cols = kExperts, .dtype = JAL_DT_F32};
        const TensorRef gu_w{
            .va = m.gu_w, .rows = kExperts * gu.n, .cols = kEmbd, .dtype = gu.weight};
        const TensorRef dn_w{
            .va = m.dn_w, .rows = kExperts * dn.n, .cols = kFf, .dtype = dn.weight};
        const TensorRef gu_b{.va = m.gu_bias, .rows = kExperts, .cols = gu.n, .dtype = JAL_DT_F32};
        const TensorRef dn_b{.va = m.dn_bias, .rows = kExperts, .cols = dn.n, .dtype = JAL_DT_F32};
        jal::kernels::Program p_o(*device, *context, *queue, jl::build_gemm(po));
        jal::kernels::Program p_r(*device, *context, *queue, jl::build_gemm(pr));
        jal::kernels::Program p_gu(*device, *context, *queue, jl::build_expert_gemm(gu));
        jal::kernels::Program p_dn(*device, *context, *queue, jl::build_expert_gemm(dn));
        EXPECT_EQ(p_r.after_messages(), messages);
        EXPECT_EQ(p_gu.after_messages(), messages);
        jal::kernels::Launcher staged(*device, *context, *queue, {.stages = true});
        const jal::kernels::DispatchOptions on{.slice_mask = slices(nslices)};
        auto args = [](const std::vector<uint64_t>& w) { return jal::kernels::Args(w); };
        staged.add(p_o, args(jl::gemm_args(po, attn, m.wo.table, wo, bo, x)), on);
        staged.add(p_r, args(jl::gemm_args(pr, x, m.router.table, wr, br, logits, norm)), on);
        staged.add(
            p_gu,
            args(jl::expert_gemm_args(gu, x, ids, m.gu_table, gu_w, gu_b, act, norm, logits, wts)),
            on);
        staged.add(
            p_dn,
            args(jl::expert_gemm_args(dn, act, ids, m.dn_table, dn_w, dn_b, {}, {}, {}, wts, x)),
            on);
        const std::vector<uint8_t> logits_before = read(logits_va, size_t{kTokens} * kExperts * 4);
        const auto r = staged.run_batch();
        EXPECT_EQ(r.dispatches.size(), 1u) << "one staged program";
        Result out;
        out.status = r.dispatches.empty() ? 0 : r.dispatches[0].report.status;
        out.x = read(x_va, size_t{kTokens} * kEmbd * 4);
        out.logits_written = read(logits_va, size_t{kTokens} * kExperts * 4) != logits_before;
        return out;
    }
};

// Shares over 6 slices: the projection's 64 columns are 11 five times and 9, the router's
// 16 are 3 five times and 1, gate|up's 192 rows 32 each (halves of 16), down's 64 as the
// projection's.
TEST_F(LinearRouterMessagesTest, TheRouterAsMessagesGivesTheBitsOfAStoredOne)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (uint32_t nslices : {1u, 6u, 8u}) {
            SCOPED_TRACE(std::string(n == jl::Numerics::ggml ? "ggml" : "native") + " on " +
                         std::to_string(nslices) + " slices");
            const Model m = upload_model(n, nslices);
            const Result stored = run_layer(n, m, nslices, false);
            const Result sent = run_layer(n, m, nslices, true);
            EXPECT_EQ(stored.status, uint32_t{JAL_STATUS_OK});
            EXPECT_EQ(sent.status, uint32_t{JAL_STATUS_OK});
            EXPECT_EQ(sent.x, stored.x);
            const std::vector<float> x0 = jal::test::random_floats(size_t{kTokens} * kEmbd, 76);
            EXPECT_NE(0, std::memcmp(sent.x.data(), x0.data(), sent.x.size())) << "x was added to";
            EXPECT_TRUE(stored.logits_written);
            EXPECT_FALSE(sent.logits_written) << "sent, the logits are not stored";
        }
}

// What cannot go as messages is refused where it is built: y sent from row groups or
// neither stored nor sent; logits or rows received without the routing or the split by
// rows, rows received where the token rows are not loaded as they are (too many pairs).
TEST_F(LinearRouterMessagesTest, RefusesWhatCannotGoAsMessages)
{
    jl::GemmConfig r = router(jl::Numerics::native, true);
    r.recv_x = false, r.row_groups = 2;
    EXPECT_THROW(jl::build_gemm(r), jal::Error);
    r = router(jl::Numerics::native, false);
    r.store_y = false;
    EXPECT_THROW(jl::build_gemm(r), jal::Error);
    jl::ExpertGemmConfig gu = gate_up(jl::Numerics::native, true);
    gu.route = false, gu.send_output = false;
    EXPECT_THROW(jl::build_expert_gemm(gu), jal::Error);
    gu = gate_up(jl::Numerics::native, true);
    gu.split = jl::ExpertSplit::experts, gu.send_output = false, gu.swiglu = false;
    EXPECT_THROW(jl::build_expert_gemm(gu), jal::Error);
    gu = gate_up(jl::Numerics::native, true);
    gu.tokens = 8;  // 32 pairs: not few enough to load the token rows as they are
    EXPECT_FALSE(jl::expert_gemm_token_rows(gu));
    EXPECT_THROW(jl::build_expert_gemm(gu), jal::Error);
    gu.recv_x = false;
    EXPECT_NO_THROW(jl::build_expert_gemm(gu));
}

}  // namespace
