#include "emu/tile_exec/tile.hpp"

namespace jal::emu::exec {

L1Range Tile::span() const
{
    if (!valid()) return {};
    const std::uint64_t end = addr + std::uint64_t{rows - 1} * stride + row_bytes(dtype, cols);
    return {addr, static_cast<std::uint32_t>(end)};
}

bool dtype_known(std::uint32_t dt)
{
    return dt >= JAL_DT_F32 && dt <= JAL_DT_I32;
}

bool dtype_blocked(std::uint32_t dt)
{
    return dt == JAL_DT_MXFP8_E4M3 || dt == JAL_DT_MXFP8_E5M2 || dt == JAL_DT_MXFP4 ||
           dt == JAL_DT_Q8_0;
}

std::uint64_t row_bytes(std::uint32_t dt, std::uint64_t cols)
{
    switch (dt) {
    case JAL_DT_F32:
    case JAL_DT_I32:
        return cols * 4;
    case JAL_DT_BF16:
    case JAL_DT_F16:
        return cols * 2;
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
        return cols / JAL_MX_BLOCK * sizeof(jal_block_mxfp8);
    case JAL_DT_MXFP4:
        return cols / JAL_MX_BLOCK * sizeof(jal_block_mxfp4);
    case JAL_DT_Q8_0:
        return cols / JAL_MX_BLOCK * sizeof(jal_block_q8_0);
    default:
        return 0;
    }
}

std::uint32_t make_tile(std::uint64_t addr, std::uint64_t rows, std::uint64_t cols,
                        std::uint32_t imm, std::uint32_t l1_limit, Tile& out,
                        std::uint64_t& bad_addr)
{
    const std::uint32_t dt = JAL_TDESC_DTYPE(imm);
    std::uint64_t stride = JAL_TDESC_STRIDE(imm);
    if (!dtype_known(dt) || rows == 0 || cols == 0) return JAL_STATUS_INVALID_FIELD;
    if (dtype_blocked(dt) && cols % JAL_MX_BLOCK) return JAL_STATUS_INVALID_FIELD;
    // Anything larger than L1 in either dimension cannot fit; this also keeps the
    // arithmetic below far from overflow.
    if (rows > JAL_SLICE_L1_BYTES || cols > JAL_SLICE_L1_BYTES * 2ull) {
        bad_addr = addr;
        return JAL_STATUS_OUT_OF_RANGE;
    }
    const std::uint64_t rb = row_bytes(dt, cols);
    if (stride == 0) stride = rb;
    if (stride < rb) return JAL_STATUS_INVALID_FIELD;
    const std::uint64_t end = addr + (rows - 1) * stride + rb;
    if (addr >= l1_limit || end > l1_limit) {
        bad_addr = addr >= l1_limit ? addr : end;
        return JAL_STATUS_OUT_OF_RANGE;
    }
    out = {static_cast<std::uint32_t>(addr), static_cast<std::uint32_t>(rows),
           static_cast<std::uint32_t>(cols), static_cast<std::uint32_t>(stride), dt};
    return JAL_STATUS_OK;
}

}  // namespace jal::emu::exec
