// The fault matrix (docs/reliability.md, "Fault model"): every fault `jalctl debug inject`
// and the bring-up console can inject, while two contexts copy and dispatch. For each:
// no completion lost or doubled, the faulting work fails with its status, the other
// context carries on, memory comes back, and the log and telemetry say what happened.
// Native firmware (the image runs the same sources; tests/integration/firmware covers it).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <jal/chip_function.hpp>
#include <jal/hw/admin.h>
#include <jal/hw/events.h>
#include <jal/hw/isa.h>
#include <jal/hw/mgmt.h>
#include <jal/hw/queue.h>
#include <jal/hw/telemetry.h>
#include <jal/isa/code_object.hpp>
#include <jal/jal.hpp>

#include "console_client.hpp"
#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

using namespace std::chrono_literals;
using namespace jal::runtime;

// Bounds on conditions, never sleeps: they only keep a broken build from hanging the suite.
constexpr auto kWait = 60s;
constexpr uint64_t kPage = JAL_PAGE_SIZE;
constexpr uint32_t kPagesPerChannel = JAL_HBM_CHANNEL_BYTES / JAL_PAGE_SIZE;
constexpr size_t kChunk = 64 * 1024;  // one copy
constexpr size_t kChunks = 8;         // copies per round trip, in flight together

uint64_t I(uint8_t op, unsigned a = 0, unsigned b = 0, unsigned c = 0, unsigned d = 0,
           int32_t imm = 0)
{
    return JAL_INSN(op, a, b, c, d, imm);
}

// Reads the word at args and stores it plus one at args + 8: a dispatch that reads memory.
std::vector<uint8_t> increment_kernel()
{
    const std::vector<uint64_t> code = {I(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS),
                                        I(JAL_OP_LD, 2, 1, 0, 0, 0), I(JAL_OP_ADDI, 2, 2, 0, 0, 1),
                                        I(JAL_OP_ST, 2, 1, 0, 0, 8), I(JAL_OP_END)};
    return jal::isa::encode_code_object("inc", code, 16, JAL_SLICE_L1_BYTES, {});
}

// Stores 1 at args + 8, then spins until the word at args is not 0: a dispatch that is
// running for as long as the host wants, and says when it has started.
std::vector<uint8_t> spin_kernel()
{
    const std::vector<uint64_t> code = {I(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS),
                                        I(JAL_OP_LI, 2, 0, 0, 0, 1),
                                        I(JAL_OP_ST, 2, 1, 0, 0, 8),
                                        I(JAL_OP_LD, 3, 1, 0, 0, 0),
                                        I(JAL_OP_BEQ, 3, 0, 0, 0, -1),
                                        I(JAL_OP_END)};
    return jal::isa::encode_code_object("spin", code, 16, JAL_SLICE_L1_BYTES, {});
}

// One client's work: a context with a queue, code, a data page and a host buffer.
struct Client {
    Client(Device& dev, uint64_t slice_mask)
        : device(dev), ctx(dev), queue(ctx, 256), host(dev, 4 * kPage),
          code(ctx, kPage, JAL_PLACE_SLICE, slice_mask),
          data(ctx, kPage, JAL_PLACE_SLICE, slice_mask)
    {
        const auto obj = increment_kernel();
        std::memcpy(host.data(), obj.data(), obj.size());
        Signal s(dev, 1);
        queue.copy_to_device(code.va(), host, 0, obj.size(), &s);
        EXPECT_EQ(s.wait_zero(kWait).status, JAL_STATUS_OK);
    }

    // kChunks copies to the device and back with one counting signal each way. The signal
    // must end at exactly 0: a lost completion never gets there, a doubled one passes it.
    // Returns the first failing status, or OK with the data checked.
    jal_status round_trip(uint8_t seed)
    {
        for (size_t i = 0; i < kChunks * kChunk; ++i)
            host.data()[i] = static_cast<std::byte>(seed + i * 7);
        for (jal_copy_dir dir : {JAL_COPY_H2D, JAL_COPY_D2H}) {
            Signal s(device, kChunks);
            for (size_t c = 0; c < kChunks; ++c) {
                if (dir == JAL_COPY_H2D)
                    queue.copy_to_device(data.va() + c * kChunk, host, c * kChunk, kChunk, &s);
                else
                    queue.copy_to_host(host, kPage + c * kChunk, data.va() + c * kChunk, kChunk,
                                       &s);
            }
            const WaitResult r = s.wait_zero(kWait);
            EXPECT_TRUE(r.satisfied) << "lost completion";
            EXPECT_EQ(s.value(), 0) << "a completion counted twice";
            if (r.status != JAL_STATUS_OK) return r.status;
        }
        EXPECT_EQ(std::memcmp(host.data(), host.data() + kPage, kChunks * kChunk), 0);
        return JAL_STATUS_OK;
    }

    // Runs the increment kernel on `slice_mask` over the word at `va`; returns its status
    // (the completion's, checked against the report).
    jal_status dispatch(uint64_t slice_mask, uint64_t va, jal_dispatch_report* out = nullptr)
    {
        const size_t report_off = 3 * kPage;
        jal_dispatch_desc d{};
        d.code_object = code.va();
        d.slice_mask = slice_mask;
        d.args = va;
        d.report = host.bus_addr() + report_off;
        Signal s(device, 1);
        queue.dispatch(d, &s);
        const WaitResult r = s.wait_zero(kWait);
        EXPECT_TRUE(r.satisfied) << "lost completion";
        EXPECT_EQ(s.value(), 0) << "a completion counted twice";
        jal_dispatch_report rep;
        std::memcpy(&rep, host.data() + report_off, sizeof rep);
        EXPECT_EQ(rep.status, static_cast<uint32_t>(r.status));
        if (out) *out = rep;
        return r.status;
    }

    Device& device;
    Context ctx;
    Queue queue;
    HostBuffer host;
    Memory code, data;
};

class FaultMatrix : public jal::test::EmuTest {
protected:
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.extra_args = {"--fw", "native"};
        return o;
    }
    void SetUp() override
    {
        EmuTest::SetUp();
        admin_.emplace(open_ready());
        free0_ = admin_->usage().pages_free;
        device_ = std::make_unique<Device>(0, emu().socket_dir());
        victim_ = std::make_unique<Client>(*device_, 1ull << kVictimSlice);
        bystander_ = std::make_unique<Client>(*device_, 1ull << kBystanderSlice);
        ASSERT_EQ(victim_->round_trip(1), JAL_STATUS_OK);
        ASSERT_EQ(bystander_->round_trip(2), JAL_STATUS_OK);
        log_start_ = admin_->event_log().next_seq;
    }
    void TearDown() override
    {
        victim_.reset();
        bystander_.reset();
        device_.reset();
        admin_.reset();
        EmuTest::TearDown();
    }

    // DEBUG_FAULT through the management path, as `jalctl debug inject` sends it.
    jal_status inject(uint32_t kind, uint32_t a0 = 0, uint32_t a1 = 0)
    {
        jal_admin_sqe sqe{};
        sqe.opcode = JAL_ADMIN_DEBUG_FAULT;
        sqe.cdw[0] = kind;
        sqe.cdw[1] = a0;
        sqe.cdw[2] = a1;
        return admin_->admin_execute_raw(sqe).completion.status;
    }

    // Events logged since the test's setup with `code`.
    std::vector<jal_log_event> events(uint16_t code)
    {
        std::vector<jal_log_event> out;
        for (const jal_log_event& e : admin_->event_log(log_start_).events)
            if (e.code == code) out.push_back(e);
        return out;
    }
    void expect_injected(uint32_t kind, uint32_t a0, uint32_t a1 = 0)
    {
        const auto ev = events(JAL_EVENT_DEBUG_FAULT);
        ASSERT_FALSE(ev.empty()) << "no debug_fault event";
        EXPECT_EQ(ev.back().args[0], kind);
        EXPECT_EQ(ev.back().args[1], a0);
        EXPECT_EQ(ev.back().args[2], a1);
    }
    // Nothing went astray in the firmware's bookkeeping of pages and mappings.
    void expect_no_mmu_errors() { EXPECT_TRUE(events(JAL_EVENT_MMU_ERROR).empty()); }
    // Both clients let go of everything: every context, queue, allocation and page comes
    // back, less `retired` pages.
    void expect_memory_reclaimed(uint32_t retired = 0)
    {
        victim_.reset();
        bystander_.reset();
        const jal_usage u = admin_->usage();
        EXPECT_EQ(u.contexts, 0u);
        EXPECT_EQ(u.queues, 0u);
        EXPECT_EQ(u.allocations, 0u);
        EXPECT_EQ(u.pages_free, free0_ - retired);
        expect_no_mmu_errors();
    }

    // The unrelated context: its copies and a dispatch still work.
    void expect_bystander_unharmed()
    {
        EXPECT_EQ(bystander_->round_trip(9), JAL_STATUS_OK);
        EXPECT_EQ(bystander_->dispatch(1ull << kBystanderSlice, bystander_->data.va()),
                  JAL_STATUS_OK);
    }

    bool until(const std::function<bool()>& done)
    {
        const auto give_up = std::chrono::steady_clock::now() + kWait;
        while (std::chrono::steady_clock::now() < give_up) {
            if (done()) return true;
            std::this_thread::yield();
        }
        return false;
    }

    // HBM channel and page (in the channel) of a client's data page.
    static std::pair<uint32_t, uint32_t> where(const Memory& m)
    {
        const uint64_t phys = m.placement().at(0).phys;
        return {
            jal_hbm_channel_of(phys),
            static_cast<uint32_t>((phys - jal_hbm_channel_base(jal_hbm_channel_of(phys))) / kPage)};
    }

    static constexpr uint32_t kVictimSlice = 2, kBystanderSlice = 5;
    std::optional<jal::ChipFunction> admin_;
    std::unique_ptr<Device> device_;
    std::unique_ptr<Client> victim_, bystander_;
    uint32_t log_start_ = 0;
    uint32_t free0_ = 0;  // pages free before the clients allocated theirs
};

TEST_F(FaultMatrix, AFailedSliceFailsItsDispatchAndOnlyThat)
{
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_SLICE_FAIL, kVictimSlice), JAL_STATUS_OK);
    jal_dispatch_report rep{};
    EXPECT_EQ(victim_->dispatch(1ull << kVictimSlice, victim_->data.va(), &rep),
              JAL_STATUS_HW_FAILED);
    EXPECT_EQ(rep.fault_slice, 0u);
    expect_bystander_unharmed();
    // The slice was reset with the failed dispatch: the next one on it runs.
    EXPECT_EQ(victim_->dispatch(1ull << kVictimSlice, victim_->data.va()), JAL_STATUS_OK);
    EXPECT_EQ(victim_->round_trip(3), JAL_STATUS_OK);
    const jal_queue_status qs = victim_->queue.status();
    EXPECT_EQ(qs.errors, 1u);
    EXPECT_EQ(qs.last_error, static_cast<uint32_t>(JAL_STATUS_HW_FAILED));
    expect_injected(JAL_DEBUG_FAULT_SLICE_FAIL, kVictimSlice);
    expect_memory_reclaimed();
}

TEST_F(FaultMatrix, AHungSliceTimesItsDispatchOut)
{
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_SLICE_HANG, kVictimSlice), JAL_STATUS_OK);
    jal_dispatch_report rep{};
    EXPECT_EQ(victim_->dispatch(1ull << kVictimSlice, victim_->data.va(), &rep),
              JAL_STATUS_TIMEOUT);
    EXPECT_GE(rep.modelled_ns, uint64_t{JAL_SLICE_HANG_TIMEOUT_US} * 1000);
    expect_bystander_unharmed();
    EXPECT_EQ(victim_->dispatch(1ull << kVictimSlice, victim_->data.va()), JAL_STATUS_OK);
    expect_injected(JAL_DEBUG_FAULT_SLICE_HANG, kVictimSlice);
    expect_memory_reclaimed();
}

// A slice fault injected while a dispatch runs on the slice, with the other context's
// copies in flight: the running dispatch fails (the fault is no longer armed for the next),
// its one completion arrives, and everything else goes on.
class SliceFaultsMidDispatch : public FaultMatrix,
                               public ::testing::WithParamInterface<uint32_t> {};

TEST_P(SliceFaultsMidDispatch, TheRunningDispatchFailsAndNothingElse)
{
    Client& v = *victim_;
    const uint64_t slice = 1ull << kVictimSlice;
    Memory spin(v.ctx, kPage, JAL_PLACE_SLICE, slice), flag(v.ctx, kPage, JAL_PLACE_SLICE, slice);
    HostBuffer hb(*device_, 2 * kPage);
    Queue side(v.ctx, 64);  // reads and writes the flag while the victim's queue is busy
    auto side_copy = [&](bool to_device, uint64_t va, size_t off) {
        Signal s(*device_, 1);
        if (to_device)
            side.copy_to_device(va, hb, off, 8, &s);
        else
            side.copy_to_host(hb, off, va, 8, &s);
        return s.wait_zero(kWait).status;
    };
    const auto obj = spin_kernel();
    std::memcpy(hb.data(), obj.data(), obj.size());
    {
        Signal s(*device_, 2);
        side.copy_to_device(spin.va(), hb, 0, obj.size(), &s);
        std::memset(hb.data() + kPage, 0, 16);
        side.copy_to_device(flag.va(), hb, kPage, 16, &s);
        ASSERT_EQ(s.wait_zero(kWait).status, JAL_STATUS_OK);
    }

    jal_dispatch_desc d{};
    d.code_object = spin.va();
    d.slice_mask = slice;
    d.args = flag.va();
    d.report = hb.bus_addr() + kPage + 64;
    Signal done(*device_, 1);
    v.queue.dispatch(d, &done);
    auto bystander = std::async(std::launch::async, [&] { return bystander_->round_trip(12); });
    // The kernel has started once it stored its mark: inject then, and only then let it end.
    ASSERT_TRUE(until([&] {
        uint64_t mark = 0;
        EXPECT_EQ(side_copy(false, flag.va() + 8, kPage + 8), JAL_STATUS_OK);
        std::memcpy(&mark, hb.data() + kPage + 8, 8);
        return mark == 1;
    })) << "the spinning kernel never started";
    ASSERT_EQ(inject(GetParam(), kVictimSlice), JAL_STATUS_OK);
    const uint64_t one = 1;
    std::memcpy(hb.data() + kPage, &one, 8);
    ASSERT_EQ(side_copy(true, flag.va(), kPage), JAL_STATUS_OK);

    const WaitResult r = done.wait_zero(kWait);
    EXPECT_TRUE(r.satisfied) << "lost completion";
    EXPECT_EQ(done.value(), 0) << "a completion counted twice";
    const jal_status want =
        GetParam() == JAL_DEBUG_FAULT_SLICE_HANG ? JAL_STATUS_TIMEOUT : JAL_STATUS_HW_FAILED;
    EXPECT_EQ(r.status, want);
    jal_dispatch_report rep;
    std::memcpy(&rep, hb.data() + kPage + 64, sizeof rep);
    EXPECT_EQ(rep.status, static_cast<uint32_t>(want));
    EXPECT_EQ(rep.fault_slice, 0u);
    // The slice's fault, not the kernel's (an exhausted budget would name LD or BEQ).
    EXPECT_EQ(rep.fault_opcode, 0u);
    EXPECT_EQ(rep.fault_pc, 0u);
    EXPECT_EQ(bystander.get(), JAL_STATUS_OK);

    // The fault was taken by the running dispatch: the next one on the slice runs.
    EXPECT_EQ(v.dispatch(slice, v.data.va()), JAL_STATUS_OK);
    expect_bystander_unharmed();
    expect_injected(GetParam(), kVictimSlice);
}

INSTANTIATE_TEST_SUITE_P(Kinds, SliceFaultsMidDispatch,
                         ::testing::Values(uint32_t{JAL_DEBUG_FAULT_SLICE_FAIL},
                                           uint32_t{JAL_DEBUG_FAULT_SLICE_HANG}),
                         [](const auto& info) {
                             return std::string(info.param == JAL_DEBUG_FAULT_SLICE_FAIL ? "Fail"
                                                                                         : "Hang");
                         });

TEST_F(FaultMatrix, SliceFaultsOutsideTheChipAreRefused)
{
    EXPECT_EQ(inject(JAL_DEBUG_FAULT_SLICE_FAIL, 64), JAL_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(inject(JAL_DEBUG_FAULT_HBM_LANE, JAL_HBM_CHANNELS, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(inject(JAL_DEBUG_FAULT_ECC_UNCORRECTED, 0, kPagesPerChannel),
              JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(inject(JAL_DEBUG_FAULT_COUNT), JAL_STATUS_INVALID_FIELD);
    EXPECT_TRUE(events(JAL_EVENT_DEBUG_FAULT).empty());
}

TEST_F(FaultMatrix, ADeadLaneIsRepairedWithASpareAndTheDataStays)
{
    const auto [channel, page] = where(victim_->data);
    const auto before = admin_->hbm_report(channel, 1).channels.at(0);
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_HBM_LANE, channel, 9), JAL_STATUS_OK);
    const auto after = admin_->hbm_report(channel, 1).channels.at(0);
    EXPECT_EQ(after.status, JAL_HBM_CH_REPAIRED);
    EXPECT_EQ(after.dead_lanes, before.dead_lanes + 1);
    EXPECT_TRUE(after.lanes[9].flags & JAL_HBM_LANE_DEAD);
    EXPECT_EQ(events(JAL_EVENT_HBM_CHANNEL_REPAIRED).size(), 1u);
    // What the round trip of the setup left on the device is still there.
    EXPECT_EQ(victim_->dispatch(1ull << kVictimSlice, victim_->data.va()), JAL_STATUS_OK);
    EXPECT_EQ(victim_->round_trip(4), JAL_STATUS_OK);
    expect_bystander_unharmed();
    expect_injected(JAL_DEBUG_FAULT_HBM_LANE, channel, 9);
    expect_memory_reclaimed();
}

TEST_F(FaultMatrix, AChannelOutOfSparesLeavesServiceWithItsCapacity)
{
    const auto [channel, page] = where(victim_->data);
    const jal_usage u0 = admin_->usage();
    const uint32_t ok0 = admin_->identify().hbm_channels_ok;
    // Four spares: the fifth dead lane fails the channel.
    for (uint32_t lane = 0; lane < JAL_HBM_SPARE_LANES + 1; ++lane)
        ASSERT_EQ(inject(JAL_DEBUG_FAULT_HBM_LANE, channel, lane * 3), JAL_STATUS_OK);
    EXPECT_EQ(admin_->hbm_report(channel, 1).channels.at(0).status, JAL_HBM_CH_FAILED);
    EXPECT_EQ(events(JAL_EVENT_HBM_CHANNEL_FAILED).size(), 1u);
    EXPECT_EQ(admin_->identify().hbm_channels_ok, ok0 - 1);
    const jal_usage u1 = admin_->usage();
    EXPECT_EQ(u1.pages_total, u0.pages_total - kPagesPerChannel);
    expect_bystander_unharmed();
    // The victim's pages on the failed channel go nowhere when freed; nothing is stray.
    uint32_t on_channel = 0;
    for (const Memory* m : {&victim_->code, &victim_->data})
        on_channel += where(*m).first == channel;
    const uint32_t free_before = admin_->usage().pages_free;
    victim_.reset();
    const jal_usage u2 = admin_->usage();
    EXPECT_EQ(u2.pages_free, free_before + 2 - on_channel);
    EXPECT_EQ(u2.pages_total, u1.pages_total);
    expect_no_mmu_errors();
}

TEST_F(FaultMatrix, CorrectableErrorsAreCountedPerChannelAndChipWide)
{
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_ECC_CORRECTED, 17, 3), JAL_STATUS_OK);
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_ECC_CORRECTED, 18, 2), JAL_STATUS_OK);
    const auto rep = admin_->hbm_report(17, 2).channels;
    EXPECT_EQ(rep.at(0).ecc_corrected, 3u);
    EXPECT_EQ(rep.at(1).ecc_corrected, 2u);
    EXPECT_EQ(rep.at(0).ecc_uncorrected, 0u);
    EXPECT_TRUE(until([&] { return admin_->telemetry().ecc_corrected == 5; }));
    EXPECT_EQ(victim_->round_trip(5), JAL_STATUS_OK);
    expect_bystander_unharmed();
    expect_injected(JAL_DEBUG_FAULT_ECC_CORRECTED, 18, 2);
    expect_memory_reclaimed();
}

TEST_F(FaultMatrix, AnUncorrectableErrorPoisonsThePageAndRetiresIt)
{
    const auto [channel, page] = where(victim_->data);
    const uint64_t phys = victim_->data.placement().at(0).phys;
    const jal_usage u0 = admin_->usage();
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_ECC_UNCORRECTED, channel, page), JAL_STATUS_OK);

    // Copies and dispatches that read the page fail with the status; writes still land.
    EXPECT_EQ(victim_->round_trip(6), JAL_STATUS_ECC_UNCORRECTED);
    EXPECT_EQ(victim_->dispatch(1ull << kVictimSlice, victim_->data.va()),
              JAL_STATUS_ECC_UNCORRECTED);
    expect_bystander_unharmed();

    const auto rep = admin_->hbm_report(channel, 1).channels.at(0);
    EXPECT_EQ(rep.ecc_uncorrected, 1u);
    EXPECT_EQ(rep.retired_pages, 1u);
    EXPECT_TRUE(until([&] { return admin_->telemetry().retired_pages == 1; }));
    const auto retired = events(JAL_EVENT_PAGE_RETIRED);
    ASSERT_EQ(retired.size(), 1u);
    EXPECT_EQ(retired[0].args[0], channel);
    EXPECT_EQ(retired[0].args[1], page);
    EXPECT_EQ(retired[0].args[2], 1u) << "the page was in use";
    EXPECT_EQ(admin_->usage().pages_total, u0.pages_total - 1);

    // Freed, the page does not come back; the rest does, and no new allocation gets it.
    victim_.reset();
    const jal_usage u1 = admin_->usage();
    EXPECT_EQ(u1.pages_free, u0.pages_free + 1) << "code page back, data page retired";
    expect_no_mmu_errors();
    {
        Client again(*device_, 1ull << kVictimSlice);
        EXPECT_NE(again.data.placement().at(0).phys, phys);
        EXPECT_NE(again.code.placement().at(0).phys, phys);
        EXPECT_EQ(again.round_trip(7), JAL_STATUS_OK);
    }
    expect_memory_reclaimed(1);
}

TEST_F(FaultMatrix, AmbientAndLoadChangeAtRunTime)
{
    const double p0 = admin_->telemetry().power_mw;
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_AMBIENT, static_cast<uint32_t>(int32_t{45000})),
              JAL_STATUS_OK);
    EXPECT_TRUE(until([&] { return admin_->telemetry().temp_ambient_mc == 45000; }));
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_LOAD, 400), JAL_STATUS_OK);
    EXPECT_TRUE(until([&] { return admin_->telemetry().power_mw > p0 + 100'000; }));
    // Work goes on under the load; then the load ends and the power falls back.
    EXPECT_EQ(victim_->round_trip(8), JAL_STATUS_OK);
    expect_bystander_unharmed();
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_LOAD, 0), JAL_STATUS_OK);
    EXPECT_TRUE(until([&] { return admin_->telemetry().power_mw < p0 + 50'000; }));
    const auto injected = events(JAL_EVENT_DEBUG_FAULT);
    ASSERT_EQ(injected.size(), 3u);
    EXPECT_EQ(injected[0].args[0], static_cast<uint32_t>(JAL_DEBUG_FAULT_AMBIENT));
    EXPECT_EQ(injected[0].args[1], 45000u);
    EXPECT_EQ(injected[1].args[0], static_cast<uint32_t>(JAL_DEBUG_FAULT_LOAD));
    EXPECT_EQ(injected[1].args[1], 400u);
    expect_injected(JAL_DEBUG_FAULT_LOAD, 0);
    expect_memory_reclaimed();
}

// A hot inlet under a heavy load, at run time: the limiters throttle the clock and the
// thermal one holds the junction below its limit (no trip), work goes on throttled, and the
// throttling ends with the load.
TEST_F(FaultMatrix, AHotInletUnderLoadThrottlesAndWorkGoesOn)
{
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_AMBIENT, 60000), JAL_STATUS_OK);
    ASSERT_EQ(inject(JAL_DEBUG_FAULT_LOAD, 1000), JAL_STATUS_OK);
    EXPECT_TRUE(until([&] { return admin_->telemetry().limiter == JAL_LIMITER_THERMAL; }));
    const jal_telemetry hot = admin_->telemetry();
    EXPECT_LT(hot.clock_mhz, JAL_CLOCK_MAX_MHZ);
    EXPECT_LT(hot.temp_junction_mc, JAL_TEMP_CRITICAL_MC);
    EXPECT_GE(hot.throttle_events, 1u);
    EXPECT_FALSE(events(JAL_EVENT_THROTTLE_BEGIN).empty());
    EXPECT_EQ(victim_->round_trip(13), JAL_STATUS_OK);
    EXPECT_EQ(victim_->dispatch(1ull << kVictimSlice, victim_->data.va()), JAL_STATUS_OK);
    expect_bystander_unharmed();

    ASSERT_EQ(inject(JAL_DEBUG_FAULT_LOAD, 0), JAL_STATUS_OK);
    EXPECT_TRUE(until([&] { return !events(JAL_EVENT_THROTTLE_END).empty(); }));
    EXPECT_TRUE(until([&] { return admin_->telemetry().limiter == JAL_LIMITER_NONE; }));
    EXPECT_TRUE(events(JAL_EVENT_THERMAL_TRIP).empty());
    EXPECT_EQ(admin_->status().state, jal::DeviceState::ready);
    expect_memory_reclaimed();
}

// A crash and a hang both end in a watchdog reset: clients learn it (DEVICE_RESET), the
// chip comes back, and the log still has the previous boot's events, the fault included.
class FirmwareFaults : public FaultMatrix, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(FirmwareFaults, TheWatchdogRecoversAndTheLogKeepsThePreviousBoot)
{
    const uint32_t boots = admin_->identify().boot_count;
    const uint32_t seq = admin_->event_log().next_seq;
    ASSERT_EQ(inject(GetParam()), JAL_STATUS_OK);
    // The client's next wait ends with DEVICE_RESET (no sleep: the wait is the condition).
    Signal gate(*device_, 1), done(*device_, 1);
    const Signal* deps[] = {&gate};
    EXPECT_THROW(
        {
            victim_->queue.barrier_and(deps, &done);
            (void)done.wait_zero(kWait);
        },
        jal::Error);

    jal::ChipFunction again = jal::ChipFunction::open(0, emu().open_options());
    ASSERT_EQ(again.wait_ready(jal::test::kBootTimeout).state, jal::DeviceState::ready);
    EXPECT_EQ(again.identify().boot_count, boots + 1);
    const jal::EventLog log = again.event_log();
    auto find = [&](uint16_t code, uint32_t from) {
        return std::find_if(log.events.begin(), log.events.end(), [&](const jal_log_event& e) {
            return e.code == code && e.seq >= from;
        });
    };
    const auto fault = find(JAL_EVENT_DEBUG_FAULT, seq);
    ASSERT_NE(fault, log.events.end()) << "the previous boot's fault is not in the log";
    EXPECT_EQ(fault->args[0], GetParam());
    const auto recovery = find(JAL_EVENT_WATCHDOG_RECOVERY, fault->seq);
    ASSERT_NE(recovery, log.events.end());
    const auto boot = find(JAL_EVENT_BOOT_START, fault->seq);
    ASSERT_NE(boot, log.events.end());
    EXPECT_EQ(boot->args[0], static_cast<uint32_t>(JAL_RESET_CAUSE_WATCHDOG));

    // The old handles are stale; a new device works.
    bystander_.reset();
    victim_.reset();
    device_ = std::make_unique<Device>(0, emu().socket_dir());
    Client fresh(*device_, 1ull << kVictimSlice);
    EXPECT_EQ(fresh.round_trip(10), JAL_STATUS_OK);
    EXPECT_EQ(fresh.dispatch(1ull << kVictimSlice, fresh.data.va()), JAL_STATUS_OK);
}

INSTANTIATE_TEST_SUITE_P(Kinds, FirmwareFaults,
                         ::testing::Values(uint32_t{JAL_DEBUG_FAULT_CRASH},
                                           uint32_t{JAL_DEBUG_FAULT_HANG_MAIN_LOOP}),
                         [](const auto& info) {
                             return std::string(info.param == JAL_DEBUG_FAULT_CRASH ? "Crash"
                                                                                    : "Hang");
                         });

// The bring-up console queues the same faults; the firmware injects and logs them.
TEST_F(FaultMatrix, TheConsoleInjectsThroughTheFirmware)
{
    fwtest::ConsoleClient console(emu().socket_dir() + "/jal0.console");
    const auto [channel, page] = where(victim_->data);
    const auto reply = console.ask("inject ecc-corrected " + std::to_string(channel) + " 4");
    ASSERT_TRUE(reply["ok"].get<bool>()) << reply.dump();
    EXPECT_TRUE(until([&] { return !events(JAL_EVENT_DEBUG_FAULT).empty(); }));
    const auto ev = events(JAL_EVENT_DEBUG_FAULT);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].args[0], static_cast<uint32_t>(JAL_DEBUG_FAULT_ECC_CORRECTED));
    EXPECT_EQ(ev[0].args[3], static_cast<uint32_t>(JAL_FAULT_BY_CONSOLE));
    EXPECT_EQ(admin_->hbm_report(channel, 1).channels.at(0).ecc_corrected, 4u);

    const auto bad = console.ask("inject slice-fail");
    EXPECT_FALSE(bad["ok"].get<bool>());
    EXPECT_NE(bad["error"].get<std::string>().find("usage"), std::string::npos) << bad.dump();
    EXPECT_FALSE(console.ask("inject melt 3")["ok"].get<bool>());

    ASSERT_TRUE(console.ask("inject slice-fail " + std::to_string(kVictimSlice))["ok"].get<bool>());
    EXPECT_TRUE(until([&] { return events(JAL_EVENT_DEBUG_FAULT).size() == 2; }));
    EXPECT_EQ(victim_->dispatch(1ull << kVictimSlice, victim_->data.va()), JAL_STATUS_HW_FAILED);
    expect_bystander_unharmed();
    expect_memory_reclaimed();
}

// jalctl debug inject: the same faults from the command line, explained, checked, logged.
TEST_F(FaultMatrix, JalctlInjectsChecksItsArgumentsAndTheLogDecodesIt)
{
    auto jalctl = [&](std::vector<std::string> args) {
        args.insert(args.begin(), jal::test::bin_path("jalctl"));
        return jal::test::run_command(args, {emu().env()});
    };
    const auto help = jalctl({"debug", "inject", "--help"});
    EXPECT_EQ(help.exit_code, 0);
    for (const char* name : {"slice-fail", "slice-hang", "hbm-lane", "ecc-corrected",
                             "ecc-uncorrected", "ambient", "load", "crash", "hang-main-loop"})
        EXPECT_NE(help.out.find(name), std::string::npos) << name << "\n" << help.out;

    const auto unknown = jalctl({"debug", "inject", "melt"});
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(unknown.err.find("unknown fault 'melt'"), std::string::npos) << unknown.err;
    const auto range = jalctl({"debug", "inject", "hbm-lane", "3", "68"});
    EXPECT_EQ(range.exit_code, 2);
    EXPECT_NE(range.err.find("lane 68 is out of range (0-67)"), std::string::npos) << range.err;
    EXPECT_EQ(jalctl({"debug", "inject", "ecc-uncorrected", "3"}).exit_code, 2);
    EXPECT_TRUE(events(JAL_EVENT_DEBUG_FAULT).empty()) << "a refused command injects nothing";

    const auto ok = jalctl({"--json", "debug", "inject", "ecc-corrected", "3", "2"});
    ASSERT_EQ(ok.exit_code, 0) << ok.err;
    const auto doc = nlohmann::json::parse(ok.out);
    EXPECT_EQ(doc["fault"], "ecc_corrected");
    EXPECT_EQ(doc["args"], nlohmann::json({3, 2, 0}));
    EXPECT_EQ(doc["watchdog_reset_expected"], false);
    EXPECT_EQ(admin_->hbm_report(3, 1).channels.at(0).ecc_corrected, 2u);

    const auto log = jalctl({"--json", "log"});
    ASSERT_EQ(log.exit_code, 0) << log.err;
    bool found = false;
    const auto log_doc = nlohmann::json::parse(log.out);
    for (const auto& e : log_doc["events"])
        if (e["name"] == "debug_fault") {
            found = true;
            EXPECT_EQ(e["fields"]["kind"], "ecc_corrected");
            EXPECT_EQ(e["fields"]["arg0"], 3);
            EXPECT_EQ(e["fields"]["arg1"], 2);
        }
    EXPECT_TRUE(found) << log.out;
}

}  // namespace
