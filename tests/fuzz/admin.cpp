// fuzz-admin: the firmware's admin command handler (firmware/host/admin_commands and
// admin_resources), native build, on the firmware unit tests' fake bus with the fake MMU
// and command processor (tests/unit/firmware), as jal-emu --fw native runs it on its bus.
//
// Input: commands of 66 bytes: the host function (byte % 3: functions 0 and 1 are
// attached, 2 is not), fix-ups (below), then the 64-byte submission entry as is. Fix-ups,
// so that random entries get past the first checks: bit 0 clears flags and reserved
// fields; bit 1 points the data buffer into the function's host memory; bit 2 caps
// data_len at 64 KiB; bit 3 replaces cdw[0] with the result of an earlier command (a
// context or queue id); bit 4 replaces cdw[1..2] with an address an earlier ALLOC_MEMORY
// returned.
//
// Checks: every status is a jal_status; every DMA lies inside the command's data buffer,
// and a reply is no longer than it; only RESET and FW_ACTIVATE (whose boot ROM, on the fake
// bus, accepts every image) ask for a reset and only DEBUG_FAULT for a hang; and once both
// functions detach, everything they created is gone: no context, allocation or queue is
// left, every page is free again, the MMU maps nothing and no page was scrubbed while a
// context still mapped it (the firmware is brought up once and serves every input: see
// firmware() below).
#include <cstdint>
#include <cstring>
#include <vector>

#include "fake_bus.hpp"
#include "fake_mmu_cp.hpp"
#include "firmware/host/admin_commands.hpp"
#include "firmware/host/admin_resources.hpp"
#include "fuzz_check.hpp"
#include "jal/hw/pci.h"
#include "jal/hw/status.h"

namespace {

using namespace jal::fw;

constexpr std::uint64_t kData = 0x120000;  // inside every fake function's host memory
constexpr size_t kCommandBytes = 66;

// The fake bus, checking that every DMA stays inside the current command's buffer.
// (Bus addresses wrap like the 64-bit values they are.)
struct CheckedBus : fake::FakeBus {
    std::uint64_t window_addr = 0, window_len = 0;
    std::uint32_t dma(std::uint32_t function, std::uint64_t host_addr, void* local,
                      std::uint32_t len, bool to_host) override
    {
        const std::uint64_t off = host_addr - window_addr;
        FUZZ_CHECK(off <= window_len && len <= window_len - off);
        return FakeBus::dma(function, host_addr, local, len, to_host);
    }
};

struct Firmware {
    CheckedBus bus;
    fake::FakeMmuCp dev;
    host::EventLog log;
    host::Journal journal{log};
    boot::PostTrail post;
    host::ChipInfo chip;
    slices::SliceManager slices;
    hbm::HbmState hbm;
    power::PowerManager power{slices, journal};
    host::ResourceCommands res{chip, slices, hbm, journal};
    links::LinkManager links{journal};  // no port cabled: the report has headers only
    host::AdminCommands commands{host::AdminDeps{chip, slices, hbm, power, log, post}, &res,
                                 nullptr, &links};
    std::uint32_t free_pages = 0, power_limit = 0;

    Firmware()
    {
        bus.log_writes = false;
        dev.install(bus);
        bus.attach(0);
        bus.attach(1);
        for (auto& ch : hbm.channels) ch.status = JAL_HBM_CH_OK;
        FUZZ_CHECK(slices.release_resets() == JAL_STATUS_OK);
        FUZZ_CHECK(slices.run_bist() == JAL_STATUS_OK);
        FUZZ_CHECK(slices.harvest() == JAL_STATUS_OK);
        chip.state = JAL_CHIP_STATE_READY;
        res.init();
        res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
        free_pages = res.memory().pages().free_pages_total();
        power_limit = power.requested_power_limit();
        bus.detach(0);
        bus.detach(1);
        res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    }
};

jal_admin_sqe fixed_up(const uint8_t* cmd, const std::vector<std::uint32_t>& results,
                       const std::vector<std::uint64_t>& addresses)
{
    const uint8_t fix = cmd[1];
    jal_admin_sqe s;
    std::memcpy(&s, cmd + 2, sizeof s);
    if (fix & 1) s.flags = 0, s.reserved0 = 0, s.reserved1 = 0;
    if (fix & 2) s.data_addr = kData + (s.data_addr & 0xfff8);
    if (fix & 4) s.data_len &= 0xffff;
    if ((fix & 8) && !results.empty()) s.cdw[0] = results[s.cdw[0] % results.size()];
    if ((fix & 16) && !addresses.empty()) {
        const std::uint64_t va = addresses[s.cdw[1] % addresses.size()];
        s.cdw[1] = static_cast<std::uint32_t>(va);
        s.cdw[2] = static_cast<std::uint32_t>(va >> 32);
    }
    return s;
}

bool replies_with_data(std::uint8_t opcode)
{
    return opcode == JAL_ADMIN_IDENTIFY || opcode == JAL_ADMIN_GET_TELEMETRY ||
           opcode == JAL_ADMIN_GET_LOG || opcode == JAL_ADMIN_GET_SLICE_MAP ||
           opcode == JAL_ADMIN_GET_HBM_REPORT || opcode == JAL_ADMIN_GET_LINK_REPORT ||
           opcode == JAL_ADMIN_GET_PLACEMENT || opcode == JAL_ADMIN_QUEUE_STATUS ||
           opcode == JAL_ADMIN_EXPORT_MEMORY || opcode == JAL_ADMIN_IMPORT_PEER;
}

void check_completion(const jal_admin_sqe& s, const host::Completion& c)
{
    FUZZ_CHECK(c.status < JAL_STATUS_COUNT_);
    if (c.after == host::AfterAction::kResetChip)
        FUZZ_CHECK((s.opcode == JAL_ADMIN_RESET || s.opcode == JAL_ADMIN_FW_ACTIVATE) &&
                   c.status == JAL_STATUS_OK);
    if (c.after == host::AfterAction::kHangMainLoop)
        FUZZ_CHECK(s.opcode == JAL_ADMIN_DEBUG_FAULT && c.status == JAL_STATUS_OK);
    if (c.status == JAL_STATUS_OK && replies_with_data(s.opcode))
        FUZZ_CHECK(c.result <= s.data_len);
}

// Bringing the firmware up (slice self-test, page tables) costs far more than a command, so
// one instance serves every input: each input starts with both functions attaching anew
// and ends with both detaching, which must release everything (checked), and the few
// settings a command may change are put back. What carries over is only the event log.
Firmware& firmware()
{
    static Firmware* fw = new Firmware;
    return *fw;
}

void begin_input(Firmware& fw)
{
    fw.bus.attach(0);
    fw.bus.attach(1);
    fw.res.functions_changed(fw.bus.read32(JAL_HOSTIF_FUNC_PRESENT));
}

void end_input(Firmware& fw)
{
    fw.bus.window_addr = fw.bus.window_len = 0;
    fw.bus.detach(0);
    fw.bus.detach(1);
    fw.res.functions_changed(fw.bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    FUZZ_CHECK(fw.res.memory().live_contexts() == 0);
    FUZZ_CHECK(fw.res.memory().live_allocations() == 0);
    FUZZ_CHECK(fw.res.queues().live() == 0);
    FUZZ_CHECK(fw.res.memory().pages().free_pages_total() == fw.free_pages);
    FUZZ_CHECK(fw.dev.mmu.maps.empty());
    FUZZ_CHECK(fw.dev.mmu.scrubbed_while_mapped == 0);  // never scrubbed a page still in use

    FUZZ_CHECK(fw.power.request_power_limit(fw.power_limit) == JAL_STATUS_OK);
    fw.dev.mmu.scrubbed.clear();
    fw.dev.mmu.flushes.clear();
    for (auto& q : fw.dev.cp.q) q.ctrl.clear();
    fw.bus.msis.clear();
    fw.bus.writes.clear();
    fw.bus.console.clear();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size > 64 * kCommandBytes) return 0;
    Firmware& fw = firmware();
    begin_input(fw);
    std::vector<std::uint32_t> results;
    std::vector<std::uint64_t> addresses;
    for (size_t at = 0; at + kCommandBytes <= size; at += kCommandBytes) {
        const std::uint32_t fn = data[at] % 3;
        const jal_admin_sqe s = fixed_up(data + at, results, addresses);
        fw.bus.window_addr = s.data_addr;
        fw.bus.window_len = s.data_len;
        const host::Completion c = fw.commands.execute(fn, s);
        check_completion(s, c);
        results.push_back(c.result);
        if (s.opcode == JAL_ADMIN_ALLOC_MEMORY && c.status == JAL_STATUS_OK) {
            jal_mem_alloc_reply r;
            std::memcpy(&r, fw.bus.host_ptr(fn, s.data_addr), sizeof r);
            addresses.push_back(r.va);
        }
    }
    end_input(fw);
    return 0;
}
