// A decode step's expert GEMMs handing rows over as messages (expert_gemm.hpp,
// send_output / recv_input): gate|up (routing and norm fused, SwiGLU in halves) sends its
// routing to its own slice and its rows to every slice, and the down projection (combine
// fused) receives both, in one staged program with no barrier between the two. The residual rows
// it leaves must be the bits of the same two kernels storing and gathering the rows. Also
// the residual handed on to the next q·k·v, and (LinearRouterMessagesTest) the router's
// logits and the output projection's residual handed to gate|up.
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "linear_fixture.hpp"

#include <jal/isa/code_object.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/stages.hpp>

namespace jl = jal::kernels::linear;
using jal::kernels::TensorRef;
using jal::test::HostMatrix;

namespace {

class LinearExpertMessagesTest : public jal::test::LinearKernelTest {
protected:
    static constexpr uint32_t kTokens = 2, kK = 4, kExperts = 16, kEmbd = 64, kFf = 96;
    static constexpr uint32_t kQkv = 80;  // the next layer's q·k·v columns

    struct Model {
        uint64_t logits, norm, gu_w, gu_table, gu_bias, dn_w, dn_table, dn_bias;
    };

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
                .send_output = messages};
    }
    static jl::ExpertGemmConfig down(jl::Numerics n, bool messages)
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
                .recv_input = messages,
                .send_residual = messages};
    }
    // The next layer's q·k·v: the residual rows normed on the way in, BF16 weights (x
    // converted through a staging block) or F32 ones (loaded as is).
    static jl::GemmConfig qkv(jl::Numerics n, jal_dtype weight, bool messages)
    {
        return {.m = kTokens,
                .n = kQkv,
                .k = kEmbd,
                .weight = weight,
                .numerics = n,
                .bias = true,
                .rms_norm = true,
                .recv_x = messages};
    }

    Model upload_model(jl::Numerics n, uint32_t nslices)
    {
        Model m{};
        std::vector<float> logits = jal::test::random_floats(size_t{kTokens} * kExperts, 70, 3.0f);
        logits[3] = logits[11];  // a tie
        m.logits = upload(logits);
        m.norm = upload(jal::test::random_floats(kEmbd, 71));
        const jl::ExpertGemmConfig gu = gate_up(n, false), dn = down(n, false);
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

    // The q·k·v stage after the pair: its weights, bias and output.
    struct Next {
        jl::GemmConfig c;
        uint64_t w = 0, table = 0, bias = 0, y = 0;
    };
    Next next_gemm(jl::Numerics n, jal_dtype weight, uint32_t nslices)
    {
        Next q{.c = qkv(n, weight, false)};
        HostMatrix w = jal::test::quantized(
            jal::test::random_floats(size_t{kQkv} * kEmbd, 77, 0.5f), kQkv, kEmbd, weight);
        q.w = upload(w.bytes);
        q.table = upload(jl::shard_table(w.ref(q.w), nslices));
        q.bias = upload(jal::test::random_floats(kQkv, 78));
        q.y = output(size_t{kTokens} * kQkv * 4);
        return q;
    }

    // Both GEMMs as one staged program (then q·k·v, if given); returns the residual rows
    // after it (and the report).
    // (prefetch: gate|up issues down's first W tile, which down finds in L1.)
    std::vector<uint8_t> run_pair(jl::Numerics n, const Model& m, uint32_t nslices, bool messages,
                                  uint32_t* status = nullptr, const Next* next = nullptr,
                                  bool prefetch = false)
    {
        jl::ExpertGemmConfig gu = gate_up(n, messages);
        jl::ExpertGemmConfig dn = down(n, messages);
        dn.send_residual = messages && next;
        if (prefetch) {
            gu.prefetch_n = dn.n, gu.prefetch_kdim = dn.kdim, gu.prefetch_weight = dn.weight;
            dn.w0_prefetched = true;
        }
        const std::vector<float> x0 = jal::test::random_floats(size_t{kTokens} * kEmbd, 76);
        const uint64_t x_va = upload(x0);
        const uint32_t pairs = kTokens * kK;
        const uint64_t ids = output(pairs * 4), wts = output(pairs * 4),
                       act = output(size_t{pairs} * kFf * 4);
        const TensorRef x{.va = x_va, .rows = kTokens, .cols = kEmbd, .dtype = JAL_DT_F32};
        const TensorRef ids_ref{.va = ids, .rows = kTokens, .cols = kK, .dtype = JAL_DT_I32};
        const TensorRef wts_ref{.va = wts, .rows = kTokens, .cols = kK, .dtype = JAL_DT_F32};
        const TensorRef act_ref{.va = act, .rows = pairs, .cols = kFf, .dtype = JAL_DT_F32};
        // Not written with the combine fused, as in the model runtime.
        const TensorRef eo{.va = output(size_t{pairs} * kEmbd * 4),
                           .rows = pairs,
                           .cols = kEmbd,
                           .dtype = JAL_DT_F32};
        const TensorRef logits{
            .va = m.logits, .rows = kTokens, .cols = kExperts, .dtype = JAL_DT_F32};
        const TensorRef norm{.va = m.norm, .rows = 1, .cols = kEmbd, .dtype = JAL_DT_F32};
        const TensorRef gu_w{
            .va = m.gu_w, .rows = kExperts * gu.n, .cols = kEmbd, .dtype = gu.weight};
        const TensorRef dn_w{
            .va = m.dn_w, .rows = kExperts * dn.n, .cols = kFf, .dtype = dn.weight};
        const TensorRef gu_b{.va = m.gu_bias, .rows = kExperts, .cols = gu.n, .dtype = JAL_DT_F32};
        const TensorRef dn_b{.va = m.dn_bias, .rows = kExperts, .cols = dn.n, .dtype = JAL_DT_F32};
        jal::kernels::Program p_gu(*device, *context, *queue, jl::build_expert_gemm(gu));
        jal::kernels::Program p_dn(*device, *context, *queue, jl::build_expert_gemm(dn));
        EXPECT_EQ(p_dn.after_messages(), messages);
        jal::kernels::Launcher staged(*device, *context, *queue, {.stages = true});
        const uint64_t mask = slices(nslices);
        auto args = [](const std::vector<uint64_t>& w) { return jal::kernels::Args(w); };
        staged.add(p_gu,
                   args(jl::expert_gemm_args(gu, x, ids_ref, m.gu_table, gu_w, gu_b, act_ref, norm,
                                             logits, wts_ref, {}, m.dn_table)),
                   {.slice_mask = mask});
        staged.add(p_dn,
                   args(jl::expert_gemm_args(dn, act_ref, ids_ref, m.dn_table, dn_w, dn_b, eo, {},
                                             logits, wts_ref, x)),
                   {.slice_mask = mask});
        std::optional<jal::kernels::Program> p_q;
        if (next) {
            jl::GemmConfig c = next->c;
            c.recv_x = messages;
            p_q.emplace(*device, *context, *queue, jl::build_gemm(c));
            EXPECT_EQ(p_q->after_messages(), messages);
            const TensorRef w{.va = next->w, .rows = kQkv, .cols = kEmbd, .dtype = c.weight};
            const TensorRef b{.va = next->bias, .rows = 1, .cols = kQkv, .dtype = JAL_DT_F32};
            const TensorRef y{.va = next->y, .rows = kTokens, .cols = kQkv, .dtype = JAL_DT_F32};
            staged.add(*p_q, args(jl::gemm_args(c, x, next->table, w, b, y, norm)),
                       {.slice_mask = mask});
        }
        const auto r = staged.run_batch();
        EXPECT_EQ(r.dispatches.size(), 1u) << "one staged program";
        if (status) *status = r.dispatches.empty() ? 0 : r.dispatches[0].report.status;
        return read(x_va, size_t{kTokens} * kEmbd * 4);
    }
};

// Shares: gate|up's 192 rows over 7 slices are 28 six times and 24 (halves of 14 and 12
// columns), down's 64 over 7 are 10 six times and 4; over 8, 24 and 8 each. Also with
// down's first W tile issued by gate|up (prefetch_n / w0_prefetched): gate|up gathers it
// into the top of L1 once its own tiles are issued and down multiplies what it finds
// there. Nothing else writes that region, so a tile not issued as down's own load would
// gather it (its rows, the sorted experts) gives other bits.
TEST_F(LinearExpertMessagesTest, RowsAsMessagesGiveTheBitsOfStoredRows)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (uint32_t nslices : {1u, 7u, 8u}) {
            SCOPED_TRACE(std::string(n == jl::Numerics::ggml ? "ggml" : "native") + " on " +
                         std::to_string(nslices) + " slices");
            const Model m = upload_model(n, nslices);
            uint32_t status[3] = {};
            const std::vector<uint8_t> stored = run_pair(n, m, nslices, false, &status[0]);
            const std::vector<uint8_t> sent = run_pair(n, m, nslices, true, &status[1]);
            const std::vector<uint8_t> issued =
                run_pair(n, m, nslices, true, &status[2], nullptr, true);
            for (uint32_t st : status) EXPECT_EQ(st, uint32_t{JAL_STATUS_OK});
            EXPECT_EQ(sent, stored);
            EXPECT_EQ(issued, stored) << "down's first W tile issued by gate|up";
            const std::vector<float> x0 = jal::test::random_floats(size_t{kTokens} * kEmbd, 76);
            EXPECT_NE(0, std::memcmp(sent.data(), x0.data(), sent.size())) << "x was added to";
        }
}

// The residual as messages (send_residual / gemm.hpp's recv_x): the down projection also
// sends the residual columns it stores to every slice, and the next layer's q·k·v (norm
// fused) receives its x from them instead of loading it, starting without a barrier. Its
// output must be the bits of the same GEMM loading the stored rows; BF16 weights (x
// converted through a staging block) and F32 ones (x used as received). Over 7 slices
// down's shares are 10 columns six times and 4.
TEST_F(LinearExpertMessagesTest, ResidualAsMessagesGivesTheBitsOfAStoredOne)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (jal_dtype weight : {JAL_DT_BF16, JAL_DT_F32})
            for (uint32_t nslices : {1u, 7u, 8u}) {
                SCOPED_TRACE(std::string(n == jl::Numerics::ggml ? "ggml" : "native") + " dtype " +
                             std::to_string(weight) + " on " + std::to_string(nslices) + " slices");
                const Model m = upload_model(n, nslices);
                const Next q = next_gemm(n, weight, nslices);
                uint32_t status[2] = {};
                const std::vector<uint8_t> stored_x =
                    run_pair(n, m, nslices, false, &status[0], &q);
                const std::vector<uint8_t> stored = read(q.y, size_t{kTokens} * kQkv * 4);
                const std::vector<uint8_t> sent_x = run_pair(n, m, nslices, true, &status[1], &q);
                const std::vector<uint8_t> sent = read(q.y, size_t{kTokens} * kQkv * 4);
                EXPECT_EQ(status[0], uint32_t{JAL_STATUS_OK});
                EXPECT_EQ(status[1], uint32_t{JAL_STATUS_OK});
                EXPECT_EQ(sent_x, stored_x) << "the residual is still stored";
                EXPECT_EQ(sent, stored);
                EXPECT_NE(sent, std::vector<uint8_t>(sent.size(), 0)) << "q·k·v was written";
            }
}

// What cannot hand rows over is refused where it is built or linked: a receiver without
// the combine or the split by rows, a sender without the SwiGLU or the routing; a receiver
// on its own (no stage before it) or after a stage on other slices.
TEST_F(LinearExpertMessagesTest, RefusesWhatCannotHandRowsOver)
{
    jl::ExpertGemmConfig dn = down(jl::Numerics::native, true);
    dn.combine = false;  // it would store y, which it has no argument for
    EXPECT_THROW(jl::build_expert_gemm(dn), jal::Error);
    dn = down(jl::Numerics::native, true);
    dn.split = jl::ExpertSplit::experts;
    EXPECT_THROW(jl::build_expert_gemm(dn), jal::Error);
    jl::ExpertGemmConfig gu = gate_up(jl::Numerics::native, true);
    gu.swiglu = false;
    EXPECT_THROW(jl::build_expert_gemm(gu), jal::Error);
    gu = gate_up(jl::Numerics::native, true);
    gu.route = false;  // no routing to send the receiver
    EXPECT_THROW(jl::build_expert_gemm(gu), jal::Error);
    dn = down(jl::Numerics::native, false);
    dn.send_residual = true;  // nothing to say its receivers follow it on the same slices
    EXPECT_THROW(jl::build_expert_gemm(dn), jal::Error);
    jl::GemmConfig q = qkv(jl::Numerics::native, JAL_DT_BF16, true);
    q.row_groups = 2;
    EXPECT_THROW(jl::build_gemm(q), jal::Error);
    q = qkv(jl::Numerics::native, JAL_DT_BF16, true);
    q.x_dtype = JAL_DT_BF16, q.rms_norm = false;  // x received as stored: F32 only
    EXPECT_THROW(jl::build_gemm(q), jal::Error);

    const jal::kernels::CodeObject rx = jl::build_expert_gemm(down(jl::Numerics::native, true));
    const jal::kernels::CodeObject tx = jl::build_expert_gemm(gate_up(jl::Numerics::native, true));
    ASSERT_TRUE(rx.after_messages);
    const auto words = [](const jal::kernels::CodeObject& co) {
        return jal::isa::read_code_object_unchecked(co.bytes).code;
    };
    const std::vector<uint64_t> rx_code = words(rx), tx_code = words(tx);
    jal::kernels::Stage first{.code = tx_code, .l1_bytes = tx.l1_bytes, .slices = 0b11};
    jal::kernels::Stage second{
        .code = rx_code, .l1_bytes = rx.l1_bytes, .slices = 0b11, .after_messages = true};
    const std::vector<jal::kernels::StageSection> alone = {{{{second}}}};
    EXPECT_THROW(jal::kernels::link_stages("alone", alone, 64), jal::Error);
    second.slices = 0b111;
    const std::vector<jal::kernels::StageSection> other = {{{{first, second}}}};
    EXPECT_THROW(jal::kernels::link_stages("other slices", other, 64), jal::Error);
    second.slices = 0b11;
    const std::vector<jal::kernels::StageSection> same = {{{{first, second}}}};
    EXPECT_NO_THROW(jal::kernels::link_stages("same slices", same, 64));
}

// The router as messages (gemm.hpp's send_y, store_y, recv_x; expert_gemm.hpp's
// recv_logits, recv_x): in one staged program, the output projection (the residual add in
// its epilogue) sends its columns of the residual rows to every slice twice, the router
// (norm fused) receives its x from the first copy and sends its logits instead of storing
// them, and gate|up (routing and norm fused) receives the second copy and the logits
// instead of loading them, with no barrier between the three; the down projection takes
// gate|up's rows as messages in both runs. The residual rows the four leave must be the
// bits of the same kernels storing and loading, and the router's logits must not be
// stored where they are sent. Beside the attention (Mode::beside, the runtime's path) the
// projection runs on all slices but the first and sends one copy, unstored, to every
// dispatch slice (ISA 1.3 peers); the router receives from those named by a mask and
// forwards the rows to gate|up on its slice, which hands down the columns its combine adds.
class LinearRouterMessagesTest : public LinearExpertMessagesTest {
protected:
    enum class Mode { stored, sent, beside };
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
    // gate|up sending its rows (and, with messages, receiving its logits and x).
    static jl::ExpertGemmConfig receiving_gate_up(jl::Numerics n, bool messages)
    {
        jl::ExpertGemmConfig c = gate_up(n, true);
        c.recv_logits = messages, c.recv_x = messages;
        return c;
    }

    struct Dense {
        uint64_t w = 0, table = 0, bias = 0;
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

    struct Layer {
        Model moe;  // the norm and the experts (its logits unused: the router computes them)
        Dense wo, router;
        Dense wo_beside;  // the same Wo split over all slices but the first
    };
    Layer upload_layer(jl::Numerics n, uint32_t nslices)
    {
        return {.moe = upload_model(n, nslices),
                .wo = dense(kEmbd, kAttn, 80, nslices),
                .router = dense(kExperts, kEmbd, 82, nslices),
                .wo_beside = dense(kEmbd, kAttn, 80, std::max(nslices - 1, 1u))};
    }

    struct Result {
        std::vector<uint8_t> x;
        bool logits_written = false;
        uint32_t status = 0;
    };

    // The four kernels as one staged program on `nslices` slices.
    Result run_layer(jl::Numerics n, const Layer& m, uint32_t nslices, Mode mode)
    {
        const bool messages = mode != Mode::stored, beside = mode == Mode::beside;
        jl::GemmConfig po = projection(n, messages), pr = router(n, messages);
        jl::ExpertGemmConfig gu = receiving_gate_up(n, messages);
        jl::ExpertGemmConfig dn = down(n, true);
        dn.send_residual = false;
        if (beside) {
            po.send_y = 1, po.store_y = false;
            pr.x_senders = true, pr.forward_x = true;
            gu.x_from_self = true, gu.send_x_columns = true;
            dn.recv_x_columns = true;
        }
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
        const TensorRef norm{.va = m.moe.norm, .rows = 1, .cols = kEmbd, .dtype = JAL_DT_F32};
        const TensorRef wo{.va = m.wo.w, .rows = kEmbd, .cols = kAttn, .dtype = JAL_DT_BF16};
        const TensorRef bo{.va = m.wo.bias, .rows = 1, .cols = kEmbd, .dtype = JAL_DT_F32};
        const TensorRef wr{.va = m.router.w, .rows = kExperts, .cols = kEmbd, .dtype = JAL_DT_BF16};
        const TensorRef br{.va = m.router.bias, .rows = 1, .cols = kExperts, .dtype = JAL_DT_F32};
        const TensorRef gu_w{
            .va = m.moe.gu_w, .rows = kExperts * gu.n, .cols = kEmbd, .dtype = gu.weight};
        const TensorRef dn_w{
            .va = m.moe.dn_w, .rows = kExperts * dn.n, .cols = kFf, .dtype = dn.weight};
        const TensorRef gu_b{
            .va = m.moe.gu_bias, .rows = kExperts, .cols = gu.n, .dtype = JAL_DT_F32};
        const TensorRef dn_b{
            .va = m.moe.dn_bias, .rows = kExperts, .cols = dn.n, .dtype = JAL_DT_F32};
        jal::kernels::Program p_o(*device, *context, *queue, jl::build_gemm(po));
        jal::kernels::Program p_r(*device, *context, *queue, jl::build_gemm(pr));
        jal::kernels::Program p_gu(*device, *context, *queue, jl::build_expert_gemm(gu));
        jal::kernels::Program p_dn(*device, *context, *queue, jl::build_expert_gemm(dn));
        EXPECT_EQ(p_r.after_messages(), messages);
        EXPECT_EQ(p_r.dispatch_senders(), beside);
        EXPECT_EQ(p_gu.after_messages(), messages);
        jal::kernels::Launcher staged(*device, *context, *queue, {.stages = true});
        const jal::kernels::DispatchOptions on{.slice_mask = slices(nslices)};
        // Beside: the projection leaves out the first slice (dispatch slice 0).
        const uint64_t all = slices(nslices), lowest = all & ~(all - 1);
        const jal::kernels::DispatchOptions projection_on{.slice_mask =
                                                              beside ? all & ~lowest : all};
        const uint64_t senders = ((uint64_t{1} << nslices) - 1) & ~uint64_t{1};
        auto args = [](const std::vector<uint64_t>& w) { return jal::kernels::Args(w); };
        staged.add(
            p_o, args(jl::gemm_args(po, attn, beside ? m.wo_beside.table : m.wo.table, wo, bo, x)),
            projection_on);
        std::vector<uint64_t> router_args =
            jl::gemm_args(pr, x, m.router.table, wr, br, logits, norm);
        if (beside) router_args.push_back(senders);
        staged.add(p_r, args(router_args), on);
        staged.add(p_gu,
                   args(jl::expert_gemm_args(gu, x, ids, m.moe.gu_table, gu_w, gu_b, act, norm,
                                             logits, wts)),
                   on);
        staged.add(p_dn,
                   args(jl::expert_gemm_args(dn, act, ids, m.moe.dn_table, dn_w, dn_b, {}, {}, {},
                                             wts, x)),
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

// Shares over 6 slices: the projection's 64 columns are 11 five times and 9 (beside, over
// 5: 13 four times and 12), the router's 16 are 3 five times and 1, gate|up's 192 rows 32
// each (halves of 16), down's 64 as the projection's.
TEST_F(LinearRouterMessagesTest, TheRouterAsMessagesGivesTheBitsOfAStoredOne)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (uint32_t nslices : {1u, 6u, 8u}) {
            SCOPED_TRACE(std::string(n == jl::Numerics::ggml ? "ggml" : "native") + " on " +
                         std::to_string(nslices) + " slices");
            const Layer m = upload_layer(n, nslices);
            const Result stored = run_layer(n, m, nslices, Mode::stored);
            EXPECT_EQ(stored.status, uint32_t{JAL_STATUS_OK});
            EXPECT_TRUE(stored.logits_written);
            const std::vector<float> x0 = jal::test::random_floats(size_t{kTokens} * kEmbd, 76);
            for (Mode mode : {Mode::sent, Mode::beside}) {
                if (mode == Mode::beside && nslices == 1) continue;  // nothing beside
                SCOPED_TRACE(mode == Mode::sent ? "sent" : "beside");
                const Result sent = run_layer(n, m, nslices, mode);
                EXPECT_EQ(sent.status, uint32_t{JAL_STATUS_OK});
                EXPECT_EQ(sent.x, stored.x);
                EXPECT_NE(0, std::memcmp(sent.x.data(), x0.data(), sent.x.size()))
                    << "x was added to";
                EXPECT_FALSE(sent.logits_written) << "sent, the logits are not stored";
            }
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
    jl::ExpertGemmConfig gu = receiving_gate_up(jl::Numerics::native, true);
    gu.route = false, gu.send_output = false;
    EXPECT_THROW(jl::build_expert_gemm(gu), jal::Error);
    gu = receiving_gate_up(jl::Numerics::native, true);
    gu.split = jl::ExpertSplit::experts, gu.send_output = false, gu.swiglu = false;
    EXPECT_THROW(jl::build_expert_gemm(gu), jal::Error);
    gu = receiving_gate_up(jl::Numerics::native, true);
    gu.tokens = 8;  // 32 pairs: not few enough to load the token rows as they are
    EXPECT_FALSE(jl::expert_gemm_token_rows(gu));
    EXPECT_THROW(jl::build_expert_gemm(gu), jal::Error);
    gu.recv_x = false;
    EXPECT_NO_THROW(jl::build_expert_gemm(gu));
}

}  // namespace
