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

}  // namespace jal::model::detail
