// Chip::name_trace_tracks: how jal-emu --trace's UI names this chip's two processes and
// their tracks (docs/emulator.md, "Traces"); Chip::trace_admin_queue: the admin track's
// spans, from the firmware's DMA of the host's admin rings.
#include "emu/chip/chip.hpp"

#include <fmt/format.h>

namespace jal::emu {

void Chip::name_trace_tracks()
{
    TraceWriter& w = *trace_.writer;
    const std::uint32_t c = config_.index;
    w.name_process(modelled_pid(c), fmt::format("chip {}: slices (modelled time)", c),
                   static_cast<int>(2 * c));
    for (int s = 0; s < JAL_NUM_SLICES; ++s)
        w.name_thread(modelled_pid(c), s, fmt::format("slice {:02}", s));
    static constexpr const char* kTracks[kOpTracks] = {"stalls", "dma", "matrix", "vector",
                                                       "network"};
    for (std::uint32_t s = 0; s < JAL_NUM_SLICES; ++s)
        if (trace_.op_slices >> s & 1)
            for (std::uint32_t k = 0; k < kOpTracks; ++k)
                w.name_thread(modelled_pid(c), op_tid(s, k),
                              fmt::format("slice {:02} {}", s, kTracks[k]));
    w.name_process(wall_pid(c), fmt::format("chip {}: queues and firmware (wall clock)", c),
                   static_cast<int>(2 * c + 1));
    w.name_thread(wall_pid(c), kFirmwareTid, "firmware");
    w.name_thread(wall_pid(c), kAdminTid, "admin");
    for (int q = 0; q < JAL_MAX_USER_QUEUES; ++q)
        w.name_thread(wall_pid(c), q, fmt::format("queue {}", q));
}

void Chip::trace_admin_queue()
{
    admin_trace_ = std::make_unique<AdminTrace>(trace_);
    host_.on_admin_fetch = [t = admin_trace_.get()](std::uint32_t fn, const jal_admin_sqe& sqe) {
        t->fetched(fn, sqe);
    };
    host_.on_admin_complete = [t = admin_trace_.get()](std::uint32_t fn, const jal_admin_cqe& cqe) {
        t->completed(fn, cqe);
    };
}

}  // namespace jal::emu
