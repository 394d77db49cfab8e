// What the model runtimes of every architecture share beyond the weight upload (upload.hpp):
// the chip's element type of a GGUF tensor, and a batch's report as chip totals.
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

}  // namespace jal::model::detail
