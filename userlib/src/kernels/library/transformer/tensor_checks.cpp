// tensor_checks.cpp: TensorRef checks shared by the transformer host calls.
#include "tensor_checks.hpp"

#include <fmt/format.h>

#include <jal/error.hpp>

namespace jal::kernels::transformer_detail {

namespace {

uint64_t element_bytes(jal_dtype dt)
{
    switch (dt) {
    case JAL_DT_F32:
    case JAL_DT_I32:
        return 4;
    case JAL_DT_BF16:
    case JAL_DT_F16:
        return 2;
    default:
        return 0;  // block formats: the transformer kernels take none
    }
}

}  // namespace

uint64_t stride_of(const TensorRef& t)
{
    return t.row_stride ? t.row_stride : uint64_t{t.cols} * element_bytes(t.dtype);
}

void check_tensor(const TensorRef& t, jal_dtype dtype, uint32_t cols, uint32_t rows,
                  const std::string& kernel, const char* name)
{
    auto fail = [&](const std::string& what) {
        throw Error(JAL_STATUS_INVALID_FIELD, fmt::format("{}: tensor {}: {}", kernel, name, what));
    };
    if (t.va == 0) fail("no device address");
    if (t.dtype != dtype)
        fail(fmt::format("dtype {} where the kernel takes {}", static_cast<int>(t.dtype),
                         static_cast<int>(dtype)));
    if (cols && t.cols != cols)
        fail(fmt::format("{} columns where the kernel was built for {}", t.cols, cols));
    if (t.rows < rows) fail(fmt::format("{} rows where {} are needed", t.rows, rows));
    if (stride_of(t) < uint64_t{t.cols} * element_bytes(dtype))
        fail(fmt::format("row stride {} is shorter than a row", t.row_stride));
}

Args args_of(const std::vector<uint64_t>& words)
{
    Args a;
    for (uint64_t w : words) a.u64(w);
    return a;
}

}  // namespace jal::kernels::transformer_detail
