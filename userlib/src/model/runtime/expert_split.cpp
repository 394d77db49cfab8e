#include "expert_split.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

#include <jal/isa/numerics.hpp>
#include <jal/kernels/library/expert_gemm.hpp>

namespace jal::model::detail {

double expected_active_experts(const ExpertGemmShape& g)
{
    const double E = g.experts;
    return E * (1 - std::pow(1 - double(g.k) / E, double(g.tokens)));
}

double busiest_slice_bytes_by_experts(const ExpertGemmShape& g)
{
    // The active experts spread over the slices holding experts; the busiest holds the
    // ceiling of its share, and gathers the input rows of that share of the pairs.
    const double holders = std::min(g.slices, g.experts);
    const double active = expected_active_experts(g);
    const double expert_bytes = double(g.row_bytes) * g.n;
    const double pairs = double(g.tokens) * g.k;
    return std::ceil(active / holders) * expert_bytes +
           std::ceil(pairs / holders) * double(g.kdim) * 4;
}

double busiest_slice_bytes_by_rows(const ExpertGemmShape& g)
{
    // Every slice reads its ceil(N / slices) rows of each active expert and every input row.
    const double rows = std::ceil(double(g.n) / g.slices);
    const double inputs = g.per_pair ? double(g.tokens) * g.k : double(g.tokens);
    return expected_active_experts(g) * rows * double(g.row_bytes) + inputs * double(g.kdim) * 4;
}

namespace {

bool rows_split_pays_uncached(const ExpertGemmShape& g, jal_dtype weight)
{
    jal::kernels::linear::ExpertGemmConfig c;
    c.tokens = g.tokens, c.k = g.k, c.experts = g.experts, c.n = g.n, c.kdim = g.kdim;
    c.weight = weight, c.input_per_pair = g.per_pair;
    if (!jal::kernels::linear::expert_gemm_streams(c, g.slices)) return false;
    return busiest_slice_bytes_by_rows(g) < busiest_slice_bytes_by_experts(g);
}

}  // namespace

// The runtime asks this for every expert GEMM of every step, and the answer needs the
// kernel's plan (which names the kernel): remembered per shape, a handful in a run.
bool rows_split_pays(const ExpertGemmShape& g, jal_dtype weight)
{
    using Key = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint64_t,
                           bool, jal_dtype>;
    static std::mutex m;
    static std::map<Key, bool> known;
    const Key key{g.tokens, g.k, g.experts, g.slices, g.n, g.kdim, g.row_bytes, g.per_pair, weight};
    {
        std::lock_guard lock(m);
        if (auto it = known.find(key); it != known.end()) return it->second;
    }
    const bool pays = rows_split_pays_uncached(g, weight);
    std::lock_guard lock(m);
    if (known.size() >= 4096) known.clear();  // bounded, whatever shapes a caller sweeps
    known.emplace(key, pays);
    return pays;
}

uint32_t striped_ff_share(uint32_t n_ff, uint32_t chips, jal_dtype weight, uint32_t slices)
{
    // The block formats keep a row's blocks whole on one chip (down's columns), and gate|up's
    // 2·share rows give every one of the chip's slices an even number (whole gate | up pairs:
    // the SwiGLU in gate|up's epilogue, docs/model-runtime.md "Expert split").
    const auto block =
        static_cast<uint32_t>(std::max<size_t>(1, jal::numerics::element_block(weight)));
    const uint32_t unit = std::lcm(block, std::max(slices, 1u));
    const uint32_t share = (n_ff + chips - 1) / chips;
    return std::min(n_ff, (share + unit - 1) / unit * unit);
}

}  // namespace jal::model::detail
