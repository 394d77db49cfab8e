// GET_MEMORY_INFO (interface 1.6): what jal_device_memory_info and jalctl report as device
// memory used and free. Pages are counted from the page allocator's per-slice counters, so
// the answer costs 64 reads, not a walk of the allocations (except the asking function's
// share, which sums its allocations: at most JAL_MAX_ALLOCATIONS entries of 8 bytes).
#include "firmware/host/admin_resources.hpp"
#include "jal/hw/status.h"

namespace jal::fw::host {

Completion ResourceCommands::memory_info(std::uint32_t fn, ReplyWriter& out)
{
    const memory::PageAllocator& pages = mem_.pages();
    jal_memory_info info{};
    info.page_size = JAL_PAGE_SIZE;
    info.allocations = mem_.live_allocations();
    info.contexts = mem_.live_contexts();
    info.bytes_function = mem_.pages_of(fn) * JAL_PAGE_SIZE;
    // Logical ids number the enabled slices densely in physical order (as the allocator's).
    jal_memory_slice_info* entry = info.slice;
    const std::uint64_t enabled = mem_.enabled_slices();
    for (std::uint32_t phys = 0; phys < JAL_NUM_SLICES; ++phys) {
        if (!(enabled >> phys & 1)) continue;
        entry->pages_total = pages.capacity(phys);
        entry->pages_free = pages.free_pages(phys);
        info.bytes_total += std::uint64_t{entry->pages_total} * JAL_PAGE_SIZE;
        info.bytes_free += std::uint64_t{entry->pages_free} * JAL_PAGE_SIZE;
        ++entry;
        ++info.slices;
    }
    out.put(&info, sizeof info);
    if (out.finish() != JAL_STATUS_OK)
        return Completion{0, JAL_STATUS_DMA_FAULT, AfterAction::kNone};
    return Completion{out.written(), JAL_STATUS_OK, AfterAction::kNone};
}

}  // namespace jal::fw::host
