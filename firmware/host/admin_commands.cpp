#include "firmware/host/admin_commands.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/host/admin_firmware.hpp"
#include "firmware/host/admin_links.hpp"
#include "firmware/host/admin_resources.hpp"
#include "firmware/host/debug_faults.hpp"

#include "firmware/util/text.hpp"
#include "firmware/version.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"
#include "jal/hw/version.h"

namespace jal::fw::host {

namespace {

// Smallest data_len each data-carrying command accepts (its fixed reply, or the header of
// a variable one); 0 for commands without data.
std::uint32_t min_data_len(std::uint8_t opcode)
{
    switch (opcode) {
    case JAL_ADMIN_IDENTIFY:
        return sizeof(jal_identify);
    case JAL_ADMIN_GET_TELEMETRY:
        return sizeof(jal_telemetry);
    case JAL_ADMIN_GET_SLICE_MAP:
        return sizeof(jal_slice_map);
    case JAL_ADMIN_GET_LOG:
        return sizeof(jal_log_page);
    case JAL_ADMIN_GET_HBM_REPORT:
        return sizeof(jal_hbm_report_header);
    case JAL_ADMIN_GET_LINK_REPORT:
        return sizeof(jal_link_report_header);
    default:
        if (is_firmware_command(opcode)) return firmware_min_data_len(opcode);
        return ResourceCommands::min_data_len(opcode);
    }
}

bool known_opcode(std::uint8_t opcode)
{
    switch (opcode) {
    case JAL_ADMIN_IDENTIFY:
    case JAL_ADMIN_GET_FEATURE:
    case JAL_ADMIN_SET_FEATURE:
    case JAL_ADMIN_GET_TELEMETRY:
    case JAL_ADMIN_GET_LOG:
    case JAL_ADMIN_GET_SLICE_MAP:
    case JAL_ADMIN_GET_HBM_REPORT:
    case JAL_ADMIN_GET_LINK_REPORT:
    case JAL_ADMIN_RESET:
    case JAL_ADMIN_DEBUG_FAULT:
        return true;
    default:
        return is_firmware_command(opcode) || ResourceCommands::handles(opcode);
    }
}

Completion fail(std::uint32_t status)
{
    return Completion{0, status, AfterAction::kNone};
}

// A reply that went out whole: result = bytes written, or a DMA fault with result 0.
Completion sent(ReplyWriter& out)
{
    const std::uint32_t status = out.finish();
    if (status != JAL_STATUS_OK) return fail(JAL_STATUS_DMA_FAULT);
    return Completion{out.written(), JAL_STATUS_OK, AfterAction::kNone};
}

}  // namespace

std::uint64_t AdminCommands::hbm_bytes_usable() const
{
    std::uint64_t bytes = 0;
    for (std::uint32_t ch = 0; ch < JAL_HBM_CHANNELS; ++ch)
        if (d_.hbm.channels[ch].usable() && ((d_.slices.enabled() >> jal_slice_of_channel(ch)) & 1))
            bytes += JAL_HBM_CHANNEL_BYTES;
    // Less the MMU's export table (interface 1.8) on a chip with fabric ports.
    if (resources_ && resources_->memory().pages().export_table_reserved()) bytes -= JAL_PAGE_SIZE;
    return bytes;
}

Completion AdminCommands::execute(std::uint32_t fn, const jal_admin_sqe& sqe)
{
    if (!known_opcode(sqe.opcode)) return fail(JAL_STATUS_INVALID_OPCODE);
    if (sqe.flags != 0 || sqe.reserved0 != 0 || sqe.reserved1 != 0)
        return fail(JAL_STATUS_INVALID_FIELD);
    if (sqe.data_len > JAL_ADMIN_DATA_MAX || sqe.data_len < min_data_len(sqe.opcode))
        return fail(JAL_STATUS_INVALID_LENGTH);

    ReplyWriter out(fn, sqe.data_addr, sqe.data_len, staging_);
    switch (sqe.opcode) {
    case JAL_ADMIN_IDENTIFY:
        return identify(out);
    case JAL_ADMIN_GET_FEATURE:
        return get_feature(sqe);
    case JAL_ADMIN_SET_FEATURE:
        return set_feature(sqe);
    case JAL_ADMIN_GET_TELEMETRY:
        return telemetry(out);
    case JAL_ADMIN_GET_LOG:
        return get_log(sqe, out);
    case JAL_ADMIN_GET_SLICE_MAP:
        return slice_map(out);
    case JAL_ADMIN_GET_HBM_REPORT:
        return hbm_report(sqe, out);
    case JAL_ADMIN_GET_LINK_REPORT:
        return link_report(sqe, out);
    case JAL_ADMIN_RESET:
        if (sqe.cdw[0] != JAL_RESET_CHIP) return fail(JAL_STATUS_INVALID_FIELD);
        return Completion{0, JAL_STATUS_OK, AfterAction::kResetChip};
    case JAL_ADMIN_DEBUG_FAULT:
        return debug_fault(fn, sqe);
    default:
        if (is_firmware_command(sqe.opcode)) return firmware_command(fn, sqe);
        if (ResourceCommands::handles(sqe.opcode))
            return resources_ ? resources_->execute(fn, sqe, out) : fail(JAL_STATUS_UNSUPPORTED);
        return fail(JAL_STATUS_INVALID_OPCODE);
    }
}

Completion AdminCommands::debug_fault(std::uint32_t fn, const jal_admin_sqe& sqe)
{
    for (std::uint32_t i = 1 + JAL_FAULT_ARGS; i < 10; ++i)
        if (sqe.cdw[i] != 0) return fail(JAL_STATUS_INVALID_FIELD);
    if (faults_) return faults_->inject(fn, sqe.cdw[0], {sqe.cdw[1], sqe.cdw[2], sqe.cdw[3]});
    if (sqe.cdw[0] != JAL_DEBUG_FAULT_HANG_MAIN_LOOP) return fail(JAL_STATUS_INVALID_FIELD);
    return Completion{0, JAL_STATUS_OK, AfterAction::kHangMainLoop};
}

Completion AdminCommands::identify(ReplyWriter& out)
{
    jal_identify id{};
    id.struct_size = sizeof(jal_identify);
    id.if_version = JAL_HW_VERSION;
    id.fw_version = kFwVersion;
    id.state = d_.chip.state;
    util::copy_string(id.fw_build, kFwBuild);
    util::copy_string(id.model, kModelName);
    util::LineBuffer serial;
    serial.str("JALEMU-");
    if (d_.chip.chip_index < 1000) serial.ch('0');
    if (d_.chip.chip_index < 100) serial.ch('0');
    if (d_.chip.chip_index < 10) serial.ch('0');
    serial.dec(d_.chip.chip_index);
    util::copy_string(id.serial, serial.c_str());
    id.chip_index = d_.chip.chip_index;
    id.boot_count = d_.chip.boot_count;
    id.slices_total = JAL_NUM_SLICES;
    id.slices_enabled = d_.slices.enabled_count();
    id.slices_enabled_mask = d_.slices.enabled();
    id.hbm_stacks = JAL_HBM_STACKS;
    id.hbm_channels_total = JAL_HBM_CHANNELS;
    id.hbm_channels_ok = d_.hbm.usable_count();
    id.hbm_bytes_total = JAL_HBM_TOTAL_BYTES;
    id.hbm_bytes_usable = hbm_bytes_usable();
    id.power_limit_mw = d_.power.requested_power_limit();
    id.power_limit_min_mw = JAL_POWER_LIMIT_MIN_MW;
    id.power_limit_max_mw = JAL_POWER_LIMIT_MAX_MW;
    id.tdp_mw = JAL_POWER_TDP_MW;
    id.clock_min_mhz = JAL_CLOCK_MIN_MHZ;
    id.clock_max_mhz = JAL_CLOCK_MAX_MHZ;
    id.temp_limit_mc = static_cast<std::uint32_t>(JAL_TEMP_LIMIT_MC);
    out.put(&id, sizeof id);
    return sent(out);
}

Completion AdminCommands::get_feature(const jal_admin_sqe& sqe)
{
    if (sqe.cdw[0] == JAL_FEATURE_POWER_LIMIT_PERSISTENT)
        return Completion{d_.power.persistent_limit(), JAL_STATUS_OK, AfterAction::kNone};
    if (sqe.cdw[0] != JAL_FEATURE_POWER_LIMIT) return fail(JAL_STATUS_INVALID_FIELD);
    return Completion{d_.power.requested_power_limit(), JAL_STATUS_OK, AfterAction::kNone};
}

Completion AdminCommands::set_feature(const jal_admin_sqe& sqe)
{
    if (sqe.cdw[0] == JAL_FEATURE_POWER_LIMIT_PERSISTENT) {
        const std::uint32_t status = d_.power.request_persistent_limit(sqe.cdw[1]);
        if (status != JAL_STATUS_OK) return fail(status);
        return Completion{d_.power.persistent_limit(), JAL_STATUS_OK, AfterAction::kNone};
    }
    if (sqe.cdw[0] != JAL_FEATURE_POWER_LIMIT) return fail(JAL_STATUS_INVALID_FIELD);
    const std::uint32_t status = d_.power.request_power_limit(sqe.cdw[1]);
    if (status != JAL_STATUS_OK) return fail(status);
    return Completion{d_.power.requested_power_limit(), JAL_STATUS_OK, AfterAction::kNone};
}

Completion AdminCommands::telemetry(ReplyWriter& out)
{
    jal_telemetry t = d_.power.telemetry();
    if (links_) {
        t.links_degraded = links_->degraded_count();
        t.link_retrains = links_->retrains_total();
    }
    out.put(&t, sizeof t);
    return sent(out);
}

Completion AdminCommands::get_log(const jal_admin_sqe& sqe, ReplyWriter& out)
{
    const std::uint32_t log_id = sqe.cdw[0];
    const std::uint32_t want = sqe.cdw[1];
    jal_log_page page{};
    page.log_id = log_id;
    const std::uint32_t room = (sqe.data_len - static_cast<std::uint32_t>(sizeof page));
    std::uint32_t oldest, next, entry_size;
    if (log_id == JAL_LOG_EVENTS) {
        oldest = d_.events.oldest_seq();
        next = d_.events.next_seq();
        entry_size = sizeof(jal_log_event);
    } else if (log_id == JAL_LOG_POST_TRAIL) {
        oldest = 0;
        next = d_.post.count();
        entry_size = sizeof(jal_post_entry);
    } else {
        return fail(JAL_STATUS_INVALID_FIELD);
    }
    // Entries the reader asked for that the ring has already overwritten are lost.
    const std::uint32_t first = want < oldest ? oldest : want > next ? next : want;
    page.lost = want < oldest ? oldest - want : 0;
    const std::uint32_t available = next - first;
    const std::uint32_t fits = room / entry_size;
    page.entry_size = entry_size;
    page.count = available < fits ? available : fits;
    page.first_seq = first;
    page.next_seq = next;
    out.put(&page, sizeof page);
    for (std::uint32_t i = 0; i < page.count; ++i) {
        if (log_id == JAL_LOG_EVENTS)
            out.put(&d_.events.at(first + i), entry_size);
        else
            out.put(&d_.post.at(first + i), entry_size);
    }
    return sent(out);
}

Completion AdminCommands::slice_map(ReplyWriter& out)
{
    jal_slice_map map;
    d_.slices.build_map(map);
    out.put(&map, sizeof map);
    return sent(out);
}

Completion AdminCommands::hbm_report(const jal_admin_sqe& sqe, ReplyWriter& out)
{
    const std::uint32_t first = sqe.cdw[0];
    if (first >= JAL_HBM_CHANNELS) return fail(JAL_STATUS_OUT_OF_RANGE);
    std::uint32_t count = sqe.cdw[1];
    if (count > JAL_HBM_CHANNELS - first) count = JAL_HBM_CHANNELS - first;
    const std::uint32_t fits =
        (sqe.data_len - static_cast<std::uint32_t>(sizeof(jal_hbm_report_header))) /
        sizeof(jal_hbm_channel_report);
    if (count > fits) count = fits;

    jal_hbm_report_header hdr{};
    hdr.first_channel = first;
    hdr.count = count;
    hdr.channels_ok = d_.hbm.usable_count();
    hdr.channels_failed = d_.hbm.count(JAL_HBM_CH_FAILED);
    hdr.stacks_failed_mask = d_.hbm.stacks_failed_mask;
    out.put(&hdr, sizeof hdr);
    // One channel at a time: the reports are rebuilt from the compact training state.
    jal_hbm_channel_report rep;
    for (std::uint32_t i = 0; i < count; ++i) {
        d_.hbm.build_report(first + i, rep);
        // The PHY counts ECC errors per channel since power-on.
        hal::write32(JAL_HBM_CH_SEL, first + i);
        rep.ecc_corrected = hal::read32(JAL_HBM_ECC_CORRECTED);
        rep.ecc_uncorrected = hal::read32(JAL_HBM_ECC_UNCORRECTED);
        if (!out.put(&rep, sizeof rep)) break;
    }
    return sent(out);
}

Completion AdminCommands::link_report(const jal_admin_sqe& sqe, ReplyWriter& out)
{
    if (!links_) return fail(JAL_STATUS_UNSUPPORTED);
    const std::uint32_t status = write_link_report(*links_, sqe, out);
    if (status != JAL_STATUS_OK) return fail(status);
    return sent(out);
}

}  // namespace jal::fw::host
