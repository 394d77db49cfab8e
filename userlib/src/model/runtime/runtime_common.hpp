// What the model runtimes of every architecture share beyond the weight upload (upload.hpp):
// the chip's element type of a GGUF tensor, a batch's report as chip totals, and a tray's
// exchange.
#pragma once

#include <map>
#include <string>
#include <string_view>

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

}  // namespace jal::model::detail
