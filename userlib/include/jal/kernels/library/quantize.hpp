// quantize.hpp: F32 activations (M×K) to Q8_0, MXFP8 (E4M3/E5M2), MXFP4 or BF16, as a pass
// of its own: when several slices read the same activations (a GEMM split over slices),
// quantizing once and placing the result replicated saves every slice the F32 read.
//
// Split: slice s converts rows slice_range(M, slices, s) of x (place them locally).
// Blocks of rows stream through two F32 buffers: load block j+1, convert and store block j.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/linear.hpp>

namespace jal::kernels::linear {

struct QuantizeConfig {
    uint32_t m = 1;
    uint32_t k = 0;  // a multiple of 32 for block formats
    jal_dtype out = JAL_DT_Q8_0;
    jal_cvt_mode mode = JAL_CVT_OCP;  // MXFP4 only: OCP or ggml rounding
};

// Arguments: x (address), x_stride, out (address), out_stride.
JAL_API CodeObject build_quantize(const QuantizeConfig& c);
JAL_API std::string quantize_name(const QuantizeConfig& c);

// Argument words: x M×K F32, out M×K of config.out.
JAL_API std::vector<uint64_t> quantize_args(const QuantizeConfig& c, const TensorRef& x,
                                            const TensorRef& out);

JAL_API jal_dispatch_report quantize(Launcher& launcher, const Program& program,
                                     const QuantizeConfig& c, const TensorRef& x,
                                     const TensorRef& out, const DispatchOptions& options = {});

}  // namespace jal::kernels::linear
