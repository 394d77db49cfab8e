// What the model runtimes of every architecture share beyond the weight upload (upload.hpp):
// the chip's element type of a GGUF tensor, a batch's report as chip totals, a tray's
// exchange, slice masks, the program cache, and a step's logits a row.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <jal/hw/isa.h>
#include <jal/kernels/dispatch.hpp>
#include <jal/model/gguf.hpp>
#include <jal/model/runtime.hpp>

namespace jal::model::detail {

// The element type the chip's kernels take for a tensor of type t; throws INVALID_FIELD
// naming the tensor for a type they do not take.
jal_dtype chip_dtype(TensorType t, std::string_view name);

// The batch's totals (its modelled time: each lane region's slowest) and each dispatch's
// figures added to by_kernel under its label.
ChipTotals batch_totals(const jal::kernels::BatchReport& r,
                        std::map<std::string, ChipTotals>& by_kernel);

// The exchange between a tray's chips a pass of `rows` rows adds (RuntimeOptions::
// tray_allreduce_ns): two all-reduces a layer of the rows' residual stream (`row_bytes` a
// row) and one of a value and an index for each of the `out_rows` sampled rows. Zero
// without a tray or without the cost function.
ChipTotals tray_exchange(const RuntimeOptions& o, uint32_t n_layer, uint64_t row_bytes,
                         uint32_t rows, uint32_t out_rows);

// The mask of `count` slices from slice `first` on.
inline uint64_t mask_of(uint32_t first, uint32_t count)
{
    const uint64_t m = count >= 64 ? ~0ull : (1ull << count) - 1;
    return m << first;
}

// A runtime's loaded programs, by key.
using ProgramCache = std::map<std::string, std::unique_ptr<jal::kernels::Program>>;

// The program under `key`, built (build()) and loaded on first use: interleaved over the
// slices of all_mask, as every dispatch slice fetches it and no slice is to be the hot spot.
const jal::kernels::Program& cached_program(ProgramCache& programs, const std::string& key,
                                            const std::function<jal::kernels::CodeObject()>& build,
                                            const runtime::Device& device,
                                            runtime::Context& context, runtime::Queue& queue,
                                            uint64_t all_mask);

// A dispatch's options in a runtime's graph: on the slices of `mask`, labelled `what` (the
// by-kernel figures), timing only or not, on lane `lane` of a batch (-1: its own queue).
jal::kernels::DispatchOptions graph_dispatch(uint64_t mask, bool timing_only, const char* what,
                                             int lane = -1);

// Splits `logits` (rows of `vocab`) into one vector a row.
std::vector<std::vector<float>> split_rows(const std::vector<float>& logits, uint32_t rows,
                                           uint32_t vocab);

}  // namespace jal::model::detail
