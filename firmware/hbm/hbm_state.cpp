#include "firmware/hbm/hbm_state.hpp"

namespace jal::fw::hbm {

std::uint32_t HbmState::count(std::uint8_t status) const
{
    std::uint32_t n = 0;
    for (const auto& c : channels) n += c.status == status;
    return n;
}

std::uint32_t HbmState::usable_in_slice(std::uint32_t slice) const
{
    std::uint32_t n = 0;
    for (std::uint32_t k = 0; k < JAL_HBM_CHANNELS_PER_SLICE; ++k)
        n += channels[slice * JAL_HBM_CHANNELS_PER_SLICE + k].usable();
    return n;
}

void HbmState::build_report(std::uint32_t channel, jal_hbm_channel_report& out) const
{
    const ChannelTrained& c = channels[channel];
    out = jal_hbm_channel_report{};
    out.status = c.status;
    out.stack = static_cast<std::uint8_t>(jal_hbm_stack_of_channel(channel));
    out.vref = c.vref;
    out.dead_lanes = c.dead_lanes;
    for (std::uint32_t k = 0; k < JAL_HBM_SPARE_LANES; ++k) out.repair[k] = c.repair[k];
    out.memtest_errors = c.memtest_errors;
    out.training_us = c.training_us;
    out.retired_pages = retired_pages[channel];
    for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
        const LaneTrained& t = c.lanes[l];
        jal_hbm_lane_report& r = out.lanes[l];
        r.read_delay = t.rd_delay;
        r.read_width = t.rd_width;
        r.read_margin = t.rd_width ? static_cast<std::uint8_t>((t.rd_width - 1) / 2) : 0;
        r.write_delay = t.wr_delay;
        r.write_width = t.wr_width;
        r.write_margin = t.wr_width ? static_cast<std::uint8_t>((t.wr_width - 1) / 2) : 0;
        r.flags = t.flags;
    }
}

}  // namespace jal::fw::hbm
