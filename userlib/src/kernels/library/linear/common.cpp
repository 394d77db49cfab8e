// What the linear kernels share on the host side: numerics modes, the slice split, shard
// tables (linear.hpp).
#include <jal/kernels/library/linear.hpp>

#include <algorithm>

#include <jal/isa/numerics.hpp>

namespace jal::kernels::linear {

const char* numerics_name(Numerics n)
{
    switch (n) {
    case Numerics::native:
        return "native";
    case Numerics::ggml:
        return "ggml";
    case Numerics::fast:
        return "fast";
    }
    return "?";
}

jal_dtype activation_dtype(jal_dtype weight, Numerics numerics)
{
    // The matrix engine multiplies Q8_0 only by Q8_0 (an integer block dot, docs/numerics.md),
    // so Q8_0 weights meet activations rounded to Q8_0 in every mode, as in llama.cpp.
    if (weight == JAL_DT_Q8_0) return JAL_DT_Q8_0;
    switch (numerics) {
    case Numerics::native:
        return JAL_DT_F32;
    case Numerics::ggml:
        // llama.cpp's vec_dot_type: Q8_0 for MXFP4, BF16 for BF16, F16 for F16, F32 for F32;
        // it has no MXFP8 type, so those weights meet F32 activations (as native).
        if (weight == JAL_DT_MXFP4) return JAL_DT_Q8_0;
        if (weight == JAL_DT_BF16 || weight == JAL_DT_F16) return weight;
        return JAL_DT_F32;
    case Numerics::fast:
        if (weight == JAL_DT_F32)
            return JAL_DT_BF16;  // the matrix engine has no F32 rate worth having
        return weight;
    }
    return JAL_DT_F32;
}

bool weight_dtype_supported(jal_dtype weight)
{
    switch (weight) {
    case JAL_DT_MXFP4:
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_BF16:
    case JAL_DT_F16:
    case JAL_DT_Q8_0:
    case JAL_DT_F32:
        return true;
    default:
        return false;
    }
}

jal_cvt_mode activation_cvt_mode(Numerics numerics)
{
    return numerics == Numerics::ggml ? JAL_CVT_GGML : JAL_CVT_OCP;
}

Range slice_range(uint32_t total, uint32_t slices, uint32_t slice)
{
    if (slices == 0) return {};
    uint64_t chunk = (uint64_t{total} + slices - 1) / slices;
    uint64_t begin = std::min<uint64_t>(chunk * slice, total);
    uint64_t end = std::min<uint64_t>(begin + chunk, total);
    return {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)};
}

std::vector<uint64_t> shard_table(const TensorRef& t, uint32_t slices)
{
    uint64_t stride = t.row_stride ? t.row_stride : packed_row_bytes(t.dtype, t.cols);
    std::vector<uint64_t> out(slices);
    for (uint32_t s = 0; s < slices; s++)
        out[s] = t.va + stride * slice_range(t.rows, slices, s).begin;
    return out;
}

uint64_t packed_row_bytes(jal_dtype dtype, uint32_t cols)
{
    return jal::numerics::row_bytes(dtype, cols);
}

}  // namespace jal::kernels::linear
