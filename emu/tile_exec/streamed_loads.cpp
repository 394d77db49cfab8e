#include "emu/tile_exec/streamed_loads.hpp"

#include <algorithm>
#include <optional>

namespace jal::emu::exec {

void StreamedLoads::add(const StreamedLoad& l)
{
    loads_.push_back(l);
    granules_ |= granule_mask(l.span);
}

// Rows [a, b) of l as a load of their own.
StreamedLoad StreamedLoads::piece(const StreamedLoad& l, std::uint32_t a, std::uint32_t b) const
{
    StreamedLoad p = l;
    p.l1_addr = l.l1_addr + a * l.l1_stride;
    p.rows = b - a;
    p.va = l.va + a * l.src_stride;
    p.span = {p.l1_addr,
              static_cast<std::uint32_t>(p.l1_addr + (p.rows - 1) * l.l1_stride + l.row_bytes)};
    return p;
}

// Rows [first, last) of l overlap r: each ends after r.lo and starts before r.hi (none:
// r is clear of l, or falls between two of its rows).
StreamedLoads::Rows StreamedLoads::rows_in(const StreamedLoad& l, L1Range r)
{
    if (!l.span.overlaps(r)) return {0, 0};
    const std::uint64_t stride = l.rows == 1 ? l.row_bytes : l.l1_stride;
    const std::uint64_t first =
        r.lo < l.l1_addr + l.row_bytes ? 0 : (r.lo - l.l1_addr - l.row_bytes) / stride + 1;
    const std::uint64_t last =
        r.hi <= l.l1_addr ? 0
                          : std::min<std::uint64_t>(l.rows, (r.hi - l.l1_addr - 1) / stride + 1);
    return {static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(std::max(first, last))};
}

void StreamedLoads::regranule()
{
    granules_ = 0;
    for (const StreamedLoad& l : loads_) granules_ |= granule_mask(l.span);
}

void StreamedLoads::drop(L1Range r)
{
    if (!may_overlap(r)) return;
    std::erase_if(loads_, [&](const StreamedLoad& l) {
        const Rows rows = rows_in(l, r);
        return rows.first < rows.last;
    });
    regranule();
}

std::uint32_t StreamedLoads::copy_in(L1Range r, std::byte* l1, DeviceMemory::Access* mem,
                                     const DeviceMemory& memory, std::uint32_t slice,
                                     std::uint64_t& fault_va)
{
    if (!may_overlap(r)) return JAL_STATUS_OK;
    std::optional<DeviceMemory::Access> own;
    if (!mem) mem = &own.emplace(memory);
    Traffic ignore;  // the load was charged for these bytes
    // Loads [0, n) are looked at; the pieces cut from them go after them, and the loads
    // cut are dropped.
    const std::size_t n = loads_.size();
    std::size_t keep = 0;
    std::uint32_t st = JAL_STATUS_OK;
    for (std::size_t k = 0; k < n; ++k) {
        const StreamedLoad l = loads_[k];
        const Rows rows = rows_in(l, r);
        if (rows.first >= rows.last) {
            loads_[keep++] = l;
            continue;
        }
        for (std::uint32_t row = rows.first; row < rows.last && st == JAL_STATUS_OK; ++row)
            st = mem->read(l.va + row * l.src_stride,
                           l1 + l.l1_addr + std::uint64_t{row} * l.l1_stride, l.row_bytes, slice,
                           ignore, fault_va);
        if (rows.first > 0) loads_.push_back(piece(l, 0, rows.first));
        if (rows.last < l.rows) loads_.push_back(piece(l, rows.last, l.rows));
    }
    loads_.erase(loads_.begin() + static_cast<std::ptrdiff_t>(keep),
                 loads_.begin() + static_cast<std::ptrdiff_t>(n));
    regranule();
    return st;
}

bool StreamedLoads::inside(const Tile& t, std::uint64_t row_bytes, StreamedSource& src) const
{
    for (const StreamedLoad& l : loads_) {
        if (t.addr < l.l1_addr || t.rows == 0) continue;
        const std::uint64_t off = t.addr - l.l1_addr;
        const std::uint64_t row = l.rows == 1 ? 0 : off / l.l1_stride;
        const std::uint64_t col = off - row * l.l1_stride;
        if (row + t.rows > l.rows || col + row_bytes > l.row_bytes) continue;
        if (t.rows > 1 && t.stride != l.l1_stride) continue;
        src = {l.va + row * l.src_stride + col, l.src_stride};
        return true;
    }
    return false;
}

}  // namespace jal::emu::exec
