// argmax.hpp: for each of M rows of F32 logits (V wide), the index of the largest value
// (the lowest index on ties) and that value.
//
// Split: slice s scans columns slice_range(V, slices, s) of every row (place them locally),
// in tiles through two buffers (VREDMAX and VARGMAX per tile, the best tile by VARGMAX over
// the tile maxima, so ties keep the lowest index). Each slice then SENDs its (max, index)
// per row to slice 0, which picks the best slice the same way and writes the results.
// At most 64 slices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/linear.hpp>

namespace jal::kernels::linear {

struct ArgmaxConfig {
    uint32_t rows = 1;
    uint32_t vocab = 0;
};

// Arguments: logits (address), logits_stride, out_index (address of `rows` I32),
// out_value (address of `rows` F32).
JAL_API CodeObject build_argmax(const ArgmaxConfig& c);
JAL_API std::string argmax_name(const ArgmaxConfig& c);

// Argument words: logits rows×vocab F32, out_index rows×1 I32, out_value rows×1 F32.
JAL_API std::vector<uint64_t> argmax_args(const ArgmaxConfig& c, const TensorRef& logits,
                                          const TensorRef& out_index, const TensorRef& out_value);

JAL_API jal_dispatch_report argmax(Launcher& launcher, const Program& program,
                                   const ArgmaxConfig& c, const TensorRef& logits,
                                   const TensorRef& out_index, const TensorRef& out_value,
                                   const DispatchOptions& options = {});

}  // namespace jal::kernels::linear
