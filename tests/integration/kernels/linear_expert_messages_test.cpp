// A decode step's expert GEMMs handing rows over as messages (expert_gemm.hpp,
// send_output / recv_input): gate|up (routing and norm fused, SwiGLU in halves) sends its
// routing to its own slice and its rows to every slice, and the down projection (combine
// fused) receives both, in one staged program with no barrier between the two. The residual rows
// it leaves must be the bits of the same two kernels storing and gathering the rows.
#include <cstring>
#include <optional>
#include <span>
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
// columns), down's 64 over 7 are 10 six times and 4; over 8, 24 and 8 each.
TEST_F(LinearExpertMessagesTest, RowsAsMessagesGiveTheBitsOfStoredRows)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (uint32_t nslices : {1u, 7u, 8u}) {
            SCOPED_TRACE(std::string(n == jl::Numerics::ggml ? "ggml" : "native") + " on " +
                         std::to_string(nslices) + " slices");
            const Model m = upload_model(n, nslices);
            uint32_t status[2] = {};
            const std::vector<uint8_t> stored = run_pair(n, m, nslices, false, &status[0]);
            const std::vector<uint8_t> sent = run_pair(n, m, nslices, true, &status[1]);
            EXPECT_EQ(status[0], uint32_t{JAL_STATUS_OK});
            EXPECT_EQ(status[1], uint32_t{JAL_STATUS_OK});
            EXPECT_EQ(sent, stored);
            const std::vector<float> x0 = jal::test::random_floats(size_t{kTokens} * kEmbd, 76);
            EXPECT_NE(0, std::memcmp(sent.data(), x0.data(), sent.size())) << "x was added to";
        }
}

// Down's first W tile issued by gate|up (prefetch_n / w0_prefetched): gate|up gathers it
// into the top of L1 once its own tiles are issued, and down multiplies what it finds there
// instead of loading it. Nothing else writes that region, so a tile that was not issued, or
// not as down's own load would have gathered it (its rows, the sorted experts), would give
// other bits than the messages path without it.
TEST_F(LinearExpertMessagesTest, DownsFirstTileIssuedByGateUpGivesTheSameBits)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (uint32_t nslices : {1u, 7u, 8u}) {
            SCOPED_TRACE(std::string(n == jl::Numerics::ggml ? "ggml" : "native") + " on " +
                         std::to_string(nslices) + " slices");
            const Model m = upload_model(n, nslices);
            uint32_t status[2] = {};
            const std::vector<uint8_t> loaded = run_pair(n, m, nslices, true, &status[0]);
            const std::vector<uint8_t> issued =
                run_pair(n, m, nslices, true, &status[1], nullptr, true);
            EXPECT_EQ(status[0], uint32_t{JAL_STATUS_OK});
            EXPECT_EQ(status[1], uint32_t{JAL_STATUS_OK});
            EXPECT_EQ(issued, loaded);
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

}  // namespace
