// Admin queues and command validation, against the fake bus's host functions.
#include <gtest/gtest.h>

#include <cstring>

#include "fake_bus.hpp"
#include "firmware/host/admin_commands.hpp"
#include "firmware/host/admin_queues.hpp"
#include "jal/hw/pci.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"

using namespace jal::fw;

namespace {

constexpr std::uint64_t kSq = 0x100000, kCq = 0x110000, kData = 0x120000;

struct AdminTest : ::testing::Test {
    fake::FakeBus bus;
    host::EventLog log;
    host::Journal journal{log};
    boot::PostTrail post;
    host::ChipInfo chip;
    slices::SliceManager slices;
    hbm::HbmState hbm;
    power::PowerManager power{slices, journal};
    host::AdminCommands commands{host::AdminDeps{chip, slices, hbm, power, log, post}};
    host::AdminQueues queues{commands, journal};
    std::uint32_t sq_tail = 0, cq_head = 0, expected_phase = 1, sq_size = 8, cq_size = 8;
    std::uint16_t next_cid = 100;

    void SetUp() override { bus.attach(0); }

    // One superloop's worth of event handling (what Firmware::poll_once does).
    host::AfterAction pump()
    {
        if (bus.events & JAL_EV_FUNC) queues.set_present(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
        queues.note_events(bus.func_events);
        bus.func_events = 0;
        bus.events = 0;
        return queues.service();
    }

    void enable(std::uint64_t sq = kSq, std::uint64_t cq = kCq)
    {
        bus.host_write(0, JAL_FN_SQ_BASE_LO, static_cast<std::uint32_t>(sq));
        bus.host_write(0, JAL_FN_SQ_BASE_HI, static_cast<std::uint32_t>(sq >> 32));
        bus.host_write(0, JAL_FN_CQ_BASE_LO, static_cast<std::uint32_t>(cq));
        bus.host_write(0, JAL_FN_CQ_BASE_HI, static_cast<std::uint32_t>(cq >> 32));
        bus.host_write(0, JAL_FN_QSIZE, sq_size | cq_size << 16);
        bus.host_write(0, JAL_FN_CTRL, JAL_ADMIN_CTRL_ENABLE);
        (void)pump();
    }
    std::uint32_t admin_status() const { return bus.reg(JAL_HOSTIF_FN(0, JAL_FN_ADMIN_STATUS)); }

    jal_admin_sqe sqe(std::uint8_t opcode, std::uint32_t len = 0, std::uint64_t addr = kData)
    {
        jal_admin_sqe s{};
        s.opcode = opcode;
        s.cid = next_cid++;
        s.data_addr = len ? addr : 0;
        s.data_len = len;
        return s;
    }
    // Queues an entry (does not ring the doorbell).
    void put(const jal_admin_sqe& s)
    {
        std::memcpy(bus.host_ptr(0, kSq + sq_tail * 64), &s, 64);
        sq_tail = (sq_tail + 1) % sq_size;
    }
    void ring() { bus.host_write(0, JAL_FN_SQ_TAIL, sq_tail); }
    jal_admin_cqe cqe_at(std::uint32_t i)
    {
        jal_admin_cqe c;
        std::memcpy(&c, bus.host_ptr(0, kCq + i * 16), 16);
        return c;
    }
    // Consumes the next completion the way a host does: check phase, advance head.
    bool take(jal_admin_cqe& out)
    {
        out = cqe_at(cq_head);
        if ((out.flags & 1) != expected_phase) return false;
        if (++cq_head == cq_size) {
            cq_head = 0;
            expected_phase ^= 1;
        }
        bus.host_write(0, JAL_FN_CQ_HEAD, cq_head);
        return true;
    }
    jal_admin_cqe run(const jal_admin_sqe& s)
    {
        put(s);
        ring();
        (void)pump();
        jal_admin_cqe c{};
        EXPECT_TRUE(take(c)) << "no completion";
        EXPECT_EQ(c.cid, s.cid);
        return c;
    }
};

TEST_F(AdminTest, EnableWithValidRegistersGoesReady)
{
    enable();
    EXPECT_EQ(admin_status(), JAL_ADMIN_STATUS_READY);
}

TEST_F(AdminTest, EnableWithBadRegistersReportsInvalidField)
{
    enable(kSq + 16, kCq);  // SQ not 64-byte aligned
    EXPECT_EQ(admin_status(), JAL_ADMIN_STATUS_ERROR | JAL_STATUS_INVALID_FIELD << 16);
    bus.host_write(0, JAL_FN_CTRL, 0);
    (void)pump();
    EXPECT_EQ(admin_status(), 0u);
    enable(kSq, kCq + 8);  // CQ not 16-byte aligned
    EXPECT_EQ(admin_status() & 0xff, JAL_ADMIN_STATUS_ERROR);
    bus.host_write(0, JAL_FN_CTRL, 0);
    sq_size = 1;
    enable();
    EXPECT_EQ(admin_status() & 0xff, JAL_ADMIN_STATUS_ERROR);
    bus.host_write(0, JAL_FN_CTRL, 0);
    sq_size = 8;
    cq_size = 4097;
    enable();
    EXPECT_EQ(admin_status() & 0xff, JAL_ADMIN_STATUS_ERROR);
    bus.host_write(0, JAL_FN_CTRL, 0);
    cq_size = 8;
    enable(0, kCq);
    EXPECT_EQ(admin_status() & 0xff, JAL_ADMIN_STATUS_ERROR);
}

TEST_F(AdminTest, IdentifyCompletesWithDataPhaseAndInterrupt)
{
    enable();
    chip.chip_index = 3;
    const auto c = run(sqe(JAL_ADMIN_IDENTIFY, 512));
    EXPECT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, 512u);
    EXPECT_EQ(c.sq_head, 1);
    jal_identify id;
    std::memcpy(&id, bus.host_ptr(0, kData), sizeof id);
    EXPECT_EQ(id.struct_size, 512u);
    EXPECT_STREQ(id.model, "Jalapeno-EMU");
    EXPECT_STREQ(id.serial, "JALEMU-0003");
    EXPECT_EQ(id.power_limit_max_mw, JAL_POWER_LIMIT_MAX_MW);
    EXPECT_EQ(id.hbm_bytes_total, JAL_HBM_TOTAL_BYTES);
    ASSERT_EQ(bus.msis.size(), 1u);
    EXPECT_EQ(bus.msis[0], 0u << 16 | JAL_MSIX_VECTOR_ADMIN);
    EXPECT_EQ(queues.completed(), 1u);
}

TEST_F(AdminTest, EachMalformedCommandGetsItsStatusAndTheNextStillWorks)
{
    enable();
    auto bad_opcode = sqe(0x42);
    EXPECT_EQ(run(bad_opcode).status, JAL_STATUS_INVALID_OPCODE);
    auto flags = sqe(JAL_ADMIN_IDENTIFY, 512);
    flags.flags = 1;
    EXPECT_EQ(run(flags).status, JAL_STATUS_INVALID_FIELD);
    auto r0 = sqe(JAL_ADMIN_IDENTIFY, 512);
    r0.reserved0 = 1;
    EXPECT_EQ(run(r0).status, JAL_STATUS_INVALID_FIELD);
    auto r1 = sqe(JAL_ADMIN_IDENTIFY, 512);
    r1.reserved1 = 7;
    EXPECT_EQ(run(r1).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(run(sqe(JAL_ADMIN_IDENTIFY, 511)).status, JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(run(sqe(JAL_ADMIN_GET_TELEMETRY, 255)).status, JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(run(sqe(JAL_ADMIN_GET_SLICE_MAP, 607)).status, JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(run(sqe(JAL_ADMIN_GET_LOG, 31)).status, JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(run(sqe(JAL_ADMIN_IDENTIFY, JAL_ADMIN_DATA_MAX + 1)).status,
              JAL_STATUS_INVALID_LENGTH);
    const auto fault = run(sqe(JAL_ADMIN_IDENTIFY, 512, 0xdead0000));
    EXPECT_EQ(fault.status, JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(fault.result, 0u);
    const auto ok = run(sqe(JAL_ADMIN_IDENTIFY, 512));
    EXPECT_EQ(ok.status, JAL_STATUS_OK);
    EXPECT_EQ(admin_status(), JAL_ADMIN_STATUS_READY);
}

TEST_F(AdminTest, FeaturesGetSetAndRangeChecked)
{
    enable();
    auto get = sqe(JAL_ADMIN_GET_FEATURE);
    get.cdw[0] = JAL_FEATURE_POWER_LIMIT;
    EXPECT_EQ(run(get).result, JAL_POWER_TDP_MW);
    auto set = sqe(JAL_ADMIN_SET_FEATURE);
    set.cdw[0] = JAL_FEATURE_POWER_LIMIT;
    set.cdw[1] = 400000;
    const auto c = run(set);
    EXPECT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, 400000u);
    EXPECT_EQ(power.requested_power_limit(), 400000u);
    set.cdw[1] = JAL_POWER_LIMIT_MIN_MW - 1;
    set.cid = next_cid++;
    EXPECT_EQ(run(set).status, JAL_STATUS_INVALID_FIELD);
    set.cdw[1] = JAL_POWER_LIMIT_MAX_MW + 1;
    set.cid = next_cid++;
    EXPECT_EQ(run(set).status, JAL_STATUS_INVALID_FIELD);
    auto unknown = sqe(JAL_ADMIN_GET_FEATURE);
    unknown.cdw[0] = 99;
    EXPECT_EQ(run(unknown).status, JAL_STATUS_INVALID_FIELD);
    get.cid = next_cid++;
    EXPECT_EQ(run(get).result, 400000u);
}

TEST_F(AdminTest, CompletionPhaseFlipsWhenTheRingWraps)
{
    cq_size = 4;
    enable();
    for (int i = 0; i < 10; ++i) {
        auto s = sqe(JAL_ADMIN_GET_FEATURE);
        s.cdw[0] = JAL_FEATURE_POWER_LIMIT;
        const auto c = run(s);  // run() checks the expected phase
        EXPECT_EQ(c.status, JAL_STATUS_OK);
    }
    EXPECT_EQ(expected_phase, 1u ^ ((10 / 4) & 1));
}

TEST_F(AdminTest, FullCompletionRingHoldsBackUntilTheHostConsumes)
{
    cq_size = 4;
    enable();
    for (int i = 0; i < 6; ++i) {
        auto s = sqe(JAL_ADMIN_GET_FEATURE);
        s.cdw[0] = JAL_FEATURE_POWER_LIMIT;
        put(s);
    }
    ring();
    (void)pump();
    EXPECT_EQ(queues.completed(), 3u) << "one slot always stays free";
    (void)pump();
    EXPECT_EQ(queues.completed(), 3u);
    jal_admin_cqe c;
    ASSERT_TRUE(take(c));
    ASSERT_TRUE(take(c));
    (void)pump();
    EXPECT_EQ(queues.completed(), 5u);
    ASSERT_TRUE(take(c));
    ASSERT_TRUE(take(c));
    ASSERT_TRUE(take(c));
    (void)pump();
    EXPECT_EQ(queues.completed(), 6u);
    ASSERT_TRUE(take(c));
    EXPECT_EQ(c.sq_head, 6);
    EXPECT_FALSE(take(c));
}

TEST_F(AdminTest, CommandsPerWakeAreBounded)
{
    sq_size = cq_size = 64;
    enable();
    for (int i = 0; i < 40; ++i) {
        auto s = sqe(JAL_ADMIN_GET_FEATURE);
        s.cdw[0] = JAL_FEATURE_POWER_LIMIT;
        put(s);
    }
    ring();
    (void)pump();
    EXPECT_EQ(queues.completed(), host::AdminQueues::kMaxCommandsPerWake);
    EXPECT_NE(queues.pending(), 0u) << "unfinished work is remembered";
    (void)queues.service();
    (void)queues.service();
    EXPECT_EQ(queues.completed(), 40u);
}

TEST_F(AdminTest, AnEnableThatRacesTheFirmwaresReadsIsNotServedTwice)
{
    // The host re-enables (CTRL = 0, registers, CTRL = ENABLE) while the firmware is between
    // reading the generation and reading CTRL, and submits as soon as it sees READY. The
    // firmware must not serve that command under the stale generation and then restart the
    // queue from slot 0 (which left its completion ring one entry behind the host's forever).
    bus.host_write(0, JAL_FN_CTRL, 0);
    (void)pump();
    bus.host_write(0, JAL_FN_SQ_BASE_LO, static_cast<std::uint32_t>(kSq));
    bus.host_write(0, JAL_FN_CQ_BASE_LO, static_cast<std::uint32_t>(kCq));
    bus.host_write(0, JAL_FN_QSIZE, sq_size | cq_size << 16);
    bool enabled_in_between = false, submitted = false;
    const std::uint32_t gen_reg = JAL_HOSTIF_FN(0, JAL_FN_GENERATION);
    const std::uint32_t tail_reg = JAL_HOSTIF_FN(0, JAL_FN_SQ_TAIL);
    bus.read_hook = [&](std::uint32_t addr, std::uint32_t& value) {
        if (addr == gen_reg && !enabled_in_between) {
            enabled_in_between = true;
            value = bus.reg(gen_reg);
            bus.host_write(0, JAL_FN_CTRL, JAL_ADMIN_CTRL_ENABLE);
            return true;
        }
        if (addr == tail_reg && !submitted && admin_status() == JAL_ADMIN_STATUS_READY) {
            submitted = true;
            put(sqe(JAL_ADMIN_IDENTIFY, 512));
            ring();
        }
        return false;
    };
    (void)pump();
    bus.read_hook = nullptr;
    for (int i = 0; i < 3 && admin_status() != JAL_ADMIN_STATUS_READY; ++i) (void)pump();
    ASSERT_EQ(admin_status(), JAL_ADMIN_STATUS_READY);
    if (!submitted) {
        put(sqe(JAL_ADMIN_IDENTIFY, 512));
        ring();
    }
    for (int i = 0; i < 3 && queues.completed() == 0; ++i) (void)pump();
    jal_admin_cqe c;
    ASSERT_TRUE(take(c)) << "the first command completes";
    EXPECT_EQ(c.status, JAL_STATUS_OK);
    // Every later command completes too, each once, in the slot the host expects.
    for (int i = 0; i < 3; ++i) {
        auto s = sqe(JAL_ADMIN_GET_FEATURE);
        s.cdw[0] = JAL_FEATURE_POWER_LIMIT;
        put(s);
        ring();
        (void)pump();
        ASSERT_TRUE(take(c)) << "command " << i + 1 << " after the racing enable";
        EXPECT_EQ(c.cid, s.cid);
    }
    EXPECT_EQ(queues.completed(), 4u) << "no command served twice";
}

TEST_F(AdminTest, ACommandTheHostGaveUpOnIsNotPostedIntoTheQueueItEnabledSince)
{
    // The host timed the command out and re-enabled its queue with new rings while the
    // firmware ran it. Posting the late completion would write into freed memory and fail the
    // new queue with DMA_FAULT, so the firmware drops it and serves the new queue.
    enable();
    constexpr std::uint64_t kNewCq = 0x130000;
    const std::uint32_t gen_reg = JAL_HOSTIF_FN(0, JAL_FN_GENERATION);
    int generation_reads = 0;
    bus.read_hook = [&](std::uint32_t addr, std::uint32_t&) {
        // The second look in this wake is the one after the command ran.
        if (addr == gen_reg && ++generation_reads == 2) {
            bus.host_write(0, JAL_FN_CTRL, 0);
            bus.host_write(0, JAL_FN_SQ_TAIL, 0);
            bus.host_write(0, JAL_FN_CQ_HEAD, 0);
            bus.host_write(0, JAL_FN_CQ_BASE_LO, static_cast<std::uint32_t>(kNewCq));
            bus.host_write(0, JAL_FN_CTRL, JAL_ADMIN_CTRL_ENABLE);
        }
        return false;
    };
    put(sqe(JAL_ADMIN_IDENTIFY, 512));
    ring();
    (void)pump();
    bus.read_hook = nullptr;
    ASSERT_GE(generation_reads, 2);
    EXPECT_EQ(cqe_at(0).flags & 1, 0u) << "the late completion reached the old ring";
    for (int i = 0; i < 3 && admin_status() != JAL_ADMIN_STATUS_READY; ++i) (void)pump();
    ASSERT_EQ(admin_status(), JAL_ADMIN_STATUS_READY) << "the new queue was failed";

    // The new queue starts from slot 0 of both rings.
    sq_tail = 0;
    auto s = sqe(JAL_ADMIN_GET_FEATURE);
    s.cdw[0] = JAL_FEATURE_POWER_LIMIT;
    put(s);
    ring();
    (void)pump();
    jal_admin_cqe c;
    std::memcpy(&c, bus.host_ptr(0, kNewCq), sizeof c);
    EXPECT_EQ(c.flags & 1, 1u) << "no completion in the new ring";
    EXPECT_EQ(c.cid, s.cid);
    EXPECT_EQ(c.status, JAL_STATUS_OK);
}

TEST_F(AdminTest, TailBeyondQueueSizeIsAnError)
{
    enable();
    bus.host_write(0, JAL_FN_SQ_TAIL, sq_size);
    (void)pump();
    EXPECT_EQ(admin_status(), JAL_ADMIN_STATUS_ERROR | JAL_STATUS_INVALID_FIELD << 16);
}

TEST_F(AdminTest, UnreadableSubmissionRingIsADmaFault)
{
    enable(0x7000000, kCq);  // aligned but not host memory
    EXPECT_EQ(admin_status(), JAL_ADMIN_STATUS_READY);
    bus.host_write(0, JAL_FN_SQ_TAIL, 1);
    (void)pump();
    EXPECT_EQ(admin_status(), JAL_ADMIN_STATUS_ERROR | JAL_STATUS_DMA_FAULT << 16);
    // Disable + re-enable with good registers recovers.
    bus.host_write(0, JAL_FN_CTRL, 0);
    bus.host_write(0, JAL_FN_SQ_TAIL, 0);
    enable();
    EXPECT_EQ(admin_status(), JAL_ADMIN_STATUS_READY);
    EXPECT_EQ(run(sqe(JAL_ADMIN_IDENTIFY, 512)).status, JAL_STATUS_OK);
}

// A buffer whose end wraps past 2^64 is no host memory. (Found by fuzz-admin: the fake bus
// compared ends, which wrapped, and wrote far outside the function's memory.)
TEST_F(AdminTest, DataBufferWrappingTheAddressSpaceIsADmaFault)
{
    enable();
    const auto c = run(sqe(JAL_ADMIN_IDENTIFY, 512, ~std::uint64_t{0} - 255));
    EXPECT_EQ(c.status, JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(c.result, 0u);
    EXPECT_EQ(run(sqe(JAL_ADMIN_IDENTIFY, 512)).status, JAL_STATUS_OK);
}

TEST_F(AdminTest, DetachedFunctionIsDroppedQuietly)
{
    enable();
    put(sqe(JAL_ADMIN_IDENTIFY, 512));
    ring();
    bus.fns[0].present = false;  // gone before the firmware gets to it
    (void)pump();
    EXPECT_EQ(queues.completed(), 0u);
    bus.detach(0);
    (void)pump();
    bus.attach(0);
    (void)pump();
    sq_tail = cq_head = 0;
    bus.host_write(0, JAL_FN_SQ_TAIL, 0);
    bus.host_write(0, JAL_FN_CQ_HEAD, 0);
    enable();
    EXPECT_EQ(run(sqe(JAL_ADMIN_IDENTIFY, 512)).status, JAL_STATUS_OK);
}

TEST_F(AdminTest, ResetCompletesFirstThenAsksForTheReset)
{
    enable();
    auto bad = sqe(JAL_ADMIN_RESET);
    bad.cdw[0] = 5;
    EXPECT_EQ(run(bad).status, JAL_STATUS_INVALID_FIELD);
    auto s = sqe(JAL_ADMIN_RESET);
    s.cdw[0] = JAL_RESET_CHIP;
    put(s);
    auto after = sqe(JAL_ADMIN_IDENTIFY, 512);
    put(after);
    ring();
    EXPECT_EQ(pump(), host::AfterAction::kResetChip);
    jal_admin_cqe c;
    ASSERT_TRUE(take(c));
    EXPECT_EQ(c.cid, s.cid);
    EXPECT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_FALSE(take(c)) << "nothing after the reset command runs";

    auto hang = sqe(JAL_ADMIN_DEBUG_FAULT);
    hang.cdw[0] = JAL_DEBUG_FAULT_HANG_MAIN_LOOP;
    EXPECT_EQ(commands.execute(0, hang).after, host::AfterAction::kHangMainLoop);
}

TEST_F(AdminTest, LogPagesReportCountsSequencesAndLoss)
{
    enable();
    for (std::uint32_t i = 0; i < host::EventLog::kEntries + 10; ++i)
        log.add(i, JAL_SRC_BOOT, JAL_SEV_INFO, 1, "x", {});
    const std::uint32_t next = log.next_seq();
    auto s = sqe(JAL_ADMIN_GET_LOG, 32 + 64 * 3);
    s.cdw[0] = JAL_LOG_EVENTS;
    s.cdw[1] = 0;
    const auto c = run(s);
    ASSERT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, 32u + 3 * 64);
    jal_log_page page;
    std::memcpy(&page, bus.host_ptr(0, kData), sizeof page);
    EXPECT_EQ(page.log_id, static_cast<std::uint32_t>(JAL_LOG_EVENTS));
    EXPECT_EQ(page.entry_size, 64u);
    EXPECT_EQ(page.count, 3u);
    EXPECT_EQ(page.lost, log.oldest_seq());
    EXPECT_EQ(page.first_seq, log.oldest_seq());
    EXPECT_GE(page.next_seq, next);
    jal_log_event e;
    std::memcpy(&e, bus.host_ptr(0, kData + 32), sizeof e);
    EXPECT_EQ(e.seq, page.first_seq);

    auto t = sqe(JAL_ADMIN_GET_LOG, 4096);
    t.cdw[0] = JAL_LOG_POST_TRAIL;
    post.record(5, 0x10, 0, 0);
    post.record(6, 0x20, 1, 0);
    const auto pc = run(t);
    EXPECT_EQ(pc.result, 32u + 2 * 16);
    auto u = sqe(JAL_ADMIN_GET_LOG, 4096);
    u.cdw[0] = 9;
    EXPECT_EQ(run(u).status, JAL_STATUS_INVALID_FIELD);
}

TEST_F(AdminTest, LargeLogReplyIsStreamedInChunks)
{
    enable();
    for (std::uint32_t i = 0; i < host::EventLog::kEntries; ++i)
        log.add(i, JAL_SRC_BOOT, JAL_SEV_INFO, 1, "y", {});
    auto s = sqe(JAL_ADMIN_GET_LOG, 64 * 1024);
    s.cdw[0] = JAL_LOG_EVENTS;
    s.cdw[1] = log.oldest_seq();
    const auto c = run(s);
    EXPECT_EQ(c.result, 32u + 64 * host::EventLog::kEntries);
    jal_log_event last;
    std::memcpy(&last, bus.host_ptr(0, kData + 32 + 64 * (host::EventLog::kEntries - 1)),
                sizeof last);
    EXPECT_EQ(last.seq, log.oldest_seq() + host::EventLog::kEntries - 1);
}

TEST_F(AdminTest, HbmReportRangeAndTruncation)
{
    enable();
    auto s = sqe(JAL_ADMIN_GET_HBM_REPORT, 32 + 576 * 2 + 100);
    s.cdw[0] = 190;
    s.cdw[1] = 5;
    const auto c = run(s);
    EXPECT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, 32u + 576 * 2);
    jal_hbm_report_header h;
    std::memcpy(&h, bus.host_ptr(0, kData), sizeof h);
    EXPECT_EQ(h.first_channel, 190u);
    EXPECT_EQ(h.count, 2u);
    jal_hbm_channel_report r;
    std::memcpy(&r, bus.host_ptr(0, kData + 32 + 576), sizeof r);
    EXPECT_EQ(r.stack, 5);
    auto big = sqe(JAL_ADMIN_GET_HBM_REPORT, 32 + 576 * 192);
    big.cdw[0] = 0;
    big.cdw[1] = 192;
    EXPECT_EQ(run(big).result, 32u + 576 * 192);
    auto oor = sqe(JAL_ADMIN_GET_HBM_REPORT, 4096);
    oor.cdw[0] = 192;
    EXPECT_EQ(run(oor).status, JAL_STATUS_OUT_OF_RANGE);
}

TEST_F(AdminTest, HbmReportCarriesEccCountsAndRetiredPagesPerChannel)
{
    enable();
    // The PHY's per-channel counters: read back for whichever channel is selected.
    std::uint32_t selected = 0;
    bus.write_hook = [&](std::uint32_t addr, std::uint32_t value) {
        if (addr == JAL_HBM_CH_SEL) selected = value;
    };
    bus.read_hook = [&](std::uint32_t addr, std::uint32_t& value) {
        if (addr == JAL_HBM_ECC_CORRECTED)
            value = selected * 10;
        else if (addr == JAL_HBM_ECC_UNCORRECTED)
            value = selected == 41 ? 2 : 0;
        else
            return false;
        return true;
    };
    hbm.count_retired(41);
    auto s = sqe(JAL_ADMIN_GET_HBM_REPORT, 32 + 576 * 2);
    s.cdw[0] = 40;
    s.cdw[1] = 2;
    ASSERT_EQ(run(s).status, JAL_STATUS_OK);
    jal_hbm_channel_report r40, r41;
    std::memcpy(&r40, bus.host_ptr(0, kData + 32), sizeof r40);
    std::memcpy(&r41, bus.host_ptr(0, kData + 32 + 576), sizeof r41);
    EXPECT_EQ(r40.ecc_corrected, 400u);
    EXPECT_EQ(r40.ecc_uncorrected, 0u);
    EXPECT_EQ(r40.retired_pages, 0u);
    EXPECT_EQ(r41.ecc_corrected, 410u);
    EXPECT_EQ(r41.ecc_uncorrected, 2u);
    EXPECT_EQ(r41.retired_pages, 1u);
    EXPECT_EQ(hbm.retired_total, 1u);
    bus.read_hook = nullptr;
    bus.write_hook = nullptr;
}

}  // namespace
