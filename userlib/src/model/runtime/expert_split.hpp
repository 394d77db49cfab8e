// Which layout an expert GEMM reads (docs/model-runtime.md, "Expert split"): split by
// experts, a slice streams whole experts, so at small batch the few selected experts are
// read by a few slices while the rest wait; split by rows, every slice streams its share
// of each selected expert, but every slice also reads every input row. The runtime takes
// the layout whose busiest slice reads fewer bytes (decode is bound by HBM bandwidth).
#pragma once

#include <cstdint>

#include <jal/hw/isa.h>

namespace jal::model::detail {

struct ExpertGemmShape {
    uint32_t tokens = 1, k = 1, experts = 1, slices = 1;
    uint32_t n = 0, kdim = 0;
    uint64_t row_bytes = 0;  // of one weight row
    bool per_pair = false;   // one input row per pair (down projection), else per token
};

// Expected distinct experts when `tokens` tokens each pick k of E uniformly.
double expected_active_experts(const ExpertGemmShape& g);
// Bytes the busiest slice reads: the selected experts' weights it holds and the input rows
// it gathers.
double busiest_slice_bytes_by_experts(const ExpertGemmShape& g);
double busiest_slice_bytes_by_rows(const ExpertGemmShape& g);
// Whether the GEMM (weights of type `weight`) is split by rows: the kernel can stream that
// way (linear::expert_gemm_streams) and its busiest slice then reads fewer bytes.
bool rows_split_pays(const ExpertGemmShape& g, jal_dtype weight);

// The striped share of n_ff the busiest chip holds: whole blocks of the format, and an even
// number of gate|up rows on each of its `slices` slices.
// (RuntimeOptions::tray_experts, striped).
uint32_t striped_ff_share(uint32_t n_ff, uint32_t chips, jal_dtype weight, uint32_t slices);

// Whether a runtime's expert matrix m (its row_shards, experts, n, kdim, row_bytes and dtype)
// is read split by rows by a GEMM of `tokens` tokens, k experts each, on `slices` slices:
// when that layout is kept (row shards) and it pays (rows_split_pays).
template <class Matrix>
bool splits_by_rows(const Matrix& m, uint32_t tokens, uint32_t k, uint32_t slices, bool per_pair)
{
    if (m.row_shards.empty()) return false;
    return rows_split_pays({.tokens = tokens,
                            .k = k,
                            .experts = m.experts,
                            .slices = slices,
                            .n = m.n,
                            .kdim = m.kdim,
                            .row_bytes = m.row_bytes,
                            .per_pair = per_pair},
                           m.dtype);
}

}  // namespace jal::model::detail
