// elementwise.hpp: out = a (op) b over rows of F32: the residual add (b the same shape as
// a) and bias or scale rows (b one row, applied to every row of a).
//
// Slice s of n works on rows [s*ceil(rows/n), (s+1)*ceil(rows/n)) of a, b and out; with a
// broadcast row every slice reads all of b (place it replicated).
#pragma once

#include <cstdint>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/tensor.hpp>

namespace jal::kernels {

enum class ElementwiseOp { add, mul };

struct JAL_API ElementwiseConfig {
    ElementwiseOp op = ElementwiseOp::add;
    uint32_t cols = 0;
    bool broadcast_b = false;  // b is one row (1 x cols) applied to every row of a
    uint32_t block_rows = 0;   // 0 = as many as fit (<= 64)
    uint32_t rows_per_block() const;
};

// Arguments, in order: a (address), a_stride, b (address), b_stride (ignored when
// broadcast), out (address; may equal a or b), out_stride, rows.
JAL_API CodeObject build_elementwise(const ElementwiseConfig& config);

// Argument words for a, b (a's shape, or one row when broadcast) and out (rows from a).
JAL_API std::vector<uint64_t> elementwise_args(const ElementwiseConfig& config, const TensorRef& a,
                                               const TensorRef& b, const TensorRef& out);

// Runs build_elementwise(config)'s program. Throws jal::Error on a bad
// tensor (as elementwise_args) or a failed dispatch (Launcher::run).
JAL_API jal_dispatch_report elementwise(Launcher& launcher, const Program& program,
                                        const ElementwiseConfig& config, const TensorRef& a,
                                        const TensorRef& b, const TensorRef& out,
                                        const DispatchOptions& options = {});

}  // namespace jal::kernels
