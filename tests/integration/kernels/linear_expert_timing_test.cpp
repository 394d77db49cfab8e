// A timing-only dispatch of the expert GEMM split by rows, or split by experts with every
// expert active, is charged what a real run with the model runtime's uniform ids costs (its
// ids read as zeros there, so the kernel spreads the pairs evenly over uniform_active()
// experts): same bytes, same modelled time to 1 %.
// GPT-OSS-120B's gate|up and down shapes on 64 slices, each slice's rows in its own HBM.
#include "linear_fixture.hpp"
#include <jal/kernels/library/expert_gemm.hpp>
namespace jl = jal::kernels::linear;
using jal::kernels::TensorRef;
class ExpertTimingTest : public jal::test::LinearKernelTest {};
TEST_F(ExpertTimingTest, SplitByRowsTimingOnlyCostsWhatARealRunDoes)
{
    const uint32_t S = 64, E = 128, K = 2880;
    for (uint32_t N : {5760u, 2880u})
        for (uint32_t tokens : {1u, 4u, 16u, 64u})
            for (auto split : {jl::ExpertSplit::rows, jl::ExpertSplit::experts}) {
                // Split by experts the kernel spreads the pairs itself only when every expert
                // is active (64 tokens); split by rows it streams only small batches.
                if ((split == jl::ExpertSplit::experts) != (tokens == 64)) continue;
                jl::ExpertGemmConfig c{.tokens = tokens,
                                       .k = 4,
                                       .experts = E,
                                       .n = N,
                                       .kdim = K,
                                       .input_per_pair = N == 2880,
                                       .split = split,
                                       .rms_norm = N == 5760};
                if (split == jl::ExpertSplit::rows) {
                    ASSERT_TRUE(jl::expert_gemm_streams(c, S));
                }
                const uint64_t row = jl::packed_row_bytes(c.weight, K);
                std::vector<uint64_t> tab(S);
                uint64_t usable = slices(S);
                uint32_t si = 0;
                for (uint32_t b = 0; b < 64; b++)
                    if (usable & (1ull << b)) {
                        uint64_t units = split == jl::ExpertSplit::rows
                                             ? uint64_t{E} * jl::slice_range(N, S, si).size()
                                             : uint64_t{jl::slice_range(E, S, si).size()} * N;
                        memories.push_back(std::make_unique<jal::runtime::Memory>(
                            *context, std::max<uint64_t>(row * units, 64), JAL_PLACE_SLICE,
                            1ull << b));
                        tab[si++] = memories.back()->va();
                    }
                uint64_t table = upload(tab);
                TensorRef w{
                    .va = tab[0], .rows = N * E, .cols = K, .row_stride = row, .dtype = c.weight};
                std::vector<int32_t> ids;
                for (uint32_t p = 0; p < tokens * 4; p++) {
                    uint32_t t = p / 4, j = p % 4;
                    ids.push_back((j * 32 + t % 32) % E);
                }
                TensorRef tids{.va = upload(ids), .rows = tokens, .cols = 4, .dtype = JAL_DT_I32};
                auto sp = [&](uint64_t bytes, jal_placement pl) {
                    memories.push_back(std::make_unique<jal::runtime::Memory>(
                        *context, std::max<uint64_t>(bytes, 64), pl, usable));
                    return memories.back()->va();
                };
                uint32_t xr = c.input_per_pair ? tokens * 4 : tokens;
                TensorRef x{.va = sp(uint64_t{xr} * K * 4, JAL_PLACE_INTERLEAVED),
                            .rows = xr,
                            .cols = K,
                            .dtype = JAL_DT_F32};
                TensorRef bias{.va = sp(uint64_t{E} * N * 4, JAL_PLACE_REPLICATED),
                               .rows = E,
                               .cols = N,
                               .dtype = JAL_DT_F32};
                TensorRef y{.va = sp(uint64_t{tokens} * 4 * N * 4, JAL_PLACE_INTERLEAVED),
                            .rows = tokens * 4,
                            .cols = N,
                            .dtype = JAL_DT_F32};
                TensorRef nw{.va = sp(K * 4, JAL_PLACE_REPLICATED),
                             .rows = 1,
                             .cols = K,
                             .dtype = JAL_DT_F32};
                auto code = jl::build_expert_gemm(c);
                auto args = jl::expert_gemm_args(c, x, tids, table, w, bias, y, nw);
                auto rep = run(code, args, usable, false);
                auto rep2 = run(code, args, usable, true);
                SCOPED_TRACE(jl::expert_gemm_name(c));
                EXPECT_EQ(rep2.hbm_bytes, rep.hbm_bytes);
                EXPECT_NEAR(double(rep2.modelled_ns), double(rep.modelled_ns),
                            0.01 * rep.modelled_ns);
                EXPECT_EQ(rep2.flops, rep.flops);
                memories.clear();
            }
}
