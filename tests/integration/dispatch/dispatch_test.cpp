// Kernel dispatches through a real jal-emu and libjal: a kernel's per-slice results copied
// back and checked against values computed here; malformed code objects and faulting
// kernels fail their packet with a status while the emulator stays healthy; the report's
// modelled time; timing-only mode leaves device memory untouched.
#include <gtest/gtest.h>

#include <jal/hw/isa.h>
#include <jal/hw/queue.h>
#include <jal/isa/code_object.hpp>
#include <jal/jal.hpp>

#include "console_client.hpp"
#include "fixture/emu_process.hpp"

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace jal::runtime;

constexpr auto kWait = std::chrono::seconds(60);  // generous: a loaded machine is slow, never wrong
constexpr uint64_t kPage = JAL_PAGE_SIZE;

uint64_t I(uint8_t op, unsigned a = 0, unsigned b = 0, unsigned c = 0, unsigned d = 0,
           int32_t imm = 0)
{
    return JAL_INSN(op, a, b, c, d, imm);
}
uint64_t LI(unsigned rd, int32_t v)
{
    return I(JAL_OP_LI, rd, 0, 0, 0, v);
}
uint64_t END()
{
    return I(JAL_OP_END);
}

class DispatchTest : public jal::test::EmuTest {
protected:
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.extra_args = {"--fw", "native"};
        o.fuse_slices = "5";  // 63 usable slices: logical 5.. live on physical 6..
        return o;
    }
    void SetUp() override
    {
        EmuTest::SetUp();
        device_ = std::make_unique<Device>(0, emu().socket_dir());
        ctx_ = std::make_unique<Context>(*device_);
        queue_ = std::make_unique<Queue>(*ctx_, 64);
        host_ = std::make_unique<HostBuffer>(*device_, 4 * kPage);
        code_ = std::make_unique<Memory>(*ctx_, kPage, JAL_PLACE_SLICE, 1);
        data_ = std::make_unique<Memory>(*ctx_, 2 * kPage, JAL_PLACE_SLICE, 1);
    }
    void TearDown() override
    {
        data_.reset();
        code_.reset();
        host_.reset();
        queue_.reset();
        ctx_.reset();
        device_.reset();
        EmuTest::TearDown();
    }

    // Host buffer layout: [0, 1 MiB) staging for copies, report at 1 MiB.
    static constexpr size_t kReportOff = 1u << 20;
    jal_dispatch_report report() const
    {
        jal_dispatch_report r;
        std::memcpy(&r, host_->data() + kReportOff, sizeof r);
        return r;
    }

    void to_device(uint64_t va, const void* src, size_t n)
    {
        std::memcpy(host_->data(), src, n);
        Signal s(*device_, 1);
        queue_->copy_to_device(va, *host_, 0, n, &s);
        ASSERT_EQ(s.wait_zero(kWait).status, JAL_STATUS_OK);
    }
    std::vector<std::byte> from_device(uint64_t va, size_t n)
    {
        Signal s(*device_, 1);
        queue_->copy_to_host(*host_, 0, va, n, &s);
        EXPECT_EQ(s.wait_zero(kWait).status, JAL_STATUS_OK);
        return {host_->data(), host_->data() + n};
    }
    void upload(const std::vector<uint8_t>& object)
    {
        to_device(code_->va(), object.data(), object.size());
    }
    void upload(const std::vector<uint64_t>& code, uint32_t args_size = 0)
    {
        upload(jal::isa::encode_code_object("test", code, args_size, JAL_SLICE_L1_BYTES, {}));
    }

    // Dispatches the uploaded code object; returns the completion status.
    jal_status dispatch(uint64_t slice_mask, uint64_t args = 0, uint32_t flags = 0,
                        uint32_t budget_kinsn = 0)
    {
        std::memset(host_->data() + kReportOff, 0xa5, sizeof(jal_dispatch_report));
        jal_dispatch_desc d{};
        d.flags = flags;
        d.code_object = code_->va();
        d.slice_mask = slice_mask;
        d.args = args;
        d.budget_kinsn = budget_kinsn;
        d.report = host_->bus_addr() + kReportOff;
        Signal s(*device_, 1);
        queue_->dispatch(d, &s);
        auto r = s.wait_zero(kWait);
        EXPECT_TRUE(r.satisfied);
        EXPECT_EQ(report().status, static_cast<uint32_t>(r.status));
        return r.status;
    }

    // The same through a raw packet, for fields libjal itself refuses to send.
    jal_status dispatch_raw(uint64_t slice_mask, uint16_t arg, uint64_t reserved = 0,
                            uint64_t times = 0)
    {
        jal_packet_dispatch p{};
        p.header.type = JAL_PACKET_DISPATCH;
        p.header.arg = arg;
        p.code_object = code_->va();
        p.slice_mask = slice_mask;
        p.report = host_->bus_addr() + kReportOff;
        p.reserved = reserved;
        p.times = times;
        Signal s(*device_, 1);
        uint64_t bus = 0;
        EXPECT_EQ(jal_signal_bus_addr(s.get(), &bus), JAL_STATUS_OK);
        p.completion_signal = bus;
        queue_->submit_raw(&p);
        auto r = s.wait_zero(kWait);
        EXPECT_TRUE(r.satisfied);
        // A times record the engine cannot write refuses the packet before it runs: no report.
        if (times == 0) {
            EXPECT_EQ(report().status, static_cast<uint32_t>(r.status));
        }
        return r.status;
    }

    // A trivial kernel that must work after whatever went wrong before.
    void expect_healthy()
    {
        const uint64_t out = data_->va() + kPage;
        upload({LI(1, 0), I(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS), I(JAL_OP_LI, 2, 0, 0, 0, 77),
                I(JAL_OP_ST, 2, 1, 0, 0, 0), END()},
               8);
        ASSERT_EQ(dispatch(1, out), JAL_STATUS_OK);
        uint64_t v;
        std::memcpy(&v, from_device(out, 8).data(), 8);
        EXPECT_EQ(v, 77u);
    }

    std::unique_ptr<Device> device_;
    std::unique_ptr<Context> ctx_;
    std::unique_ptr<Queue> queue_;
    std::unique_ptr<HostBuffer> host_;
    std::unique_ptr<Memory> code_, data_;
};

// Every slice loads its own A (4 x 8 F32) and the shared B (4 x 8), computes A x B^T with
// MMA and stores the 4 x 4 result at out + slice * 64, plus its logical slice id.
std::vector<uint64_t> mma_kernel()
{
    return {
        I(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS),
        I(JAL_OP_LD, 2, 1, 0, 0, 0),   // A base
        I(JAL_OP_LD, 3, 1, 0, 0, 8),   // B
        I(JAL_OP_LD, 4, 1, 0, 0, 16),  // out
        I(JAL_OP_LD, 5, 1, 0, 0, 24),  // ids
        I(JAL_OP_MOVSR, 6, 0, 0, 0, JAL_SR_SLICE),
        I(JAL_OP_MULI, 7, 6, 0, 0, 128),
        I(JAL_OP_ADD, 2, 2, 7),  // A + slice * 128
        I(JAL_OP_MULI, 7, 6, 0, 0, 64),
        I(JAL_OP_ADD, 4, 4, 7),  // out + slice * 64
        I(JAL_OP_MULI, 7, 6, 0, 0, 8),
        I(JAL_OP_ADD, 5, 5, 7),  // ids + slice * 8
        LI(10, 0),
        LI(11, 4),
        LI(12, 8),
        LI(13, 128),
        LI(14, 256),
        I(JAL_OP_TDESC, 0, 10, 11, 12, JAL_TDESC_IMM(0, JAL_DT_F32)),  // A at L1 0
        I(JAL_OP_TDESC, 1, 13, 11, 12, JAL_TDESC_IMM(0, JAL_DT_F32)),  // B at L1 128
        I(JAL_OP_TDESC, 2, 14, 11, 11, JAL_TDESC_IMM(0, JAL_DT_F32)),  // acc 4 x 4 at L1 256
        I(JAL_OP_VFILL, 2, 0, 0, 0, 0),
        I(JAL_OP_TLOAD, 0, 2, 0, 0, 0),
        I(JAL_OP_TLOAD, 1, 3, 0, 0, 0),
        I(JAL_OP_WAIT, 0, 0, 0, 0, 2),
        I(JAL_OP_MMA, 2, 0, 1),
        I(JAL_OP_TSTORE, 2, 4, 0, 0, 1),
        I(JAL_OP_WAIT, 1, 0, 0, 0, 1),
        I(JAL_OP_MOVSR, 8, 0, 0, 0, JAL_SR_LOGICAL_SLICE),
        I(JAL_OP_ST, 8, 5, 0, 0, 0),
        END(),
    };
}

TEST_F(DispatchTest, KernelWritesPerSliceResults)
{
    const unsigned n = 8;
    const uint64_t mask = 0b1011'0110'1001ull;  // 6 slices, not contiguous
    const unsigned slices = static_cast<unsigned>(__builtin_popcountll(mask));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-2, 2);
    std::vector<float> a(n * 32), b(32);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    const uint64_t base = data_->va();
    const uint64_t va_a = base, va_b = base + 8192, va_out = base + 16384, va_ids = base + 32768,
                   va_args = base + 65536;
    to_device(va_a, a.data(), a.size() * 4);
    to_device(va_b, b.data(), b.size() * 4);
    const uint64_t args[4] = {va_a, va_b, va_out, va_ids};
    to_device(va_args, args, sizeof args);
    upload(mma_kernel(), 32);

    ASSERT_EQ(dispatch(mask, va_args), JAL_STATUS_OK);
    const jal_dispatch_report r = report();
    EXPECT_EQ(r.fault_slice, ~0u);
    EXPECT_GT(r.modelled_ns, 0u);
    EXPECT_EQ(r.instructions, slices * mma_kernel().size());
    EXPECT_EQ(r.flops, slices * 2ull * 4 * 4 * 8);
    EXPECT_GT(r.energy_nj, 0u);

    const auto out = from_device(va_out, slices * 64);
    const auto ids = from_device(va_ids, slices * 8);
    unsigned s = 0;
    for (unsigned logical = 0; logical < 64; ++logical) {
        if (!(mask >> logical & 1)) continue;
        uint64_t id;
        std::memcpy(&id, ids.data() + s * 8, 8);
        EXPECT_EQ(id, logical);
        for (unsigned m = 0; m < 4; ++m)
            for (unsigned nn = 0; nn < 4; ++nn) {
                float acc = 0;  // the ISA's F32 MMA: fmaf over k in order
                for (unsigned k = 0; k < 8; ++k)
                    acc = std::fmaf(a[s * 32 + m * 8 + k], b[nn * 8 + k], acc);
                float got;
                std::memcpy(&got, out.data() + s * 64 + (m * 4 + nn) * 4, 4);
                EXPECT_EQ(got, acc) << "slice " << s << " [" << m << "][" << nn << "]";
            }
        ++s;
    }
}

TEST_F(DispatchTest, MalformedCodeObjectsFailBeforeAnySliceRuns)
{
    const uint64_t out = data_->va();
    const std::vector<uint64_t> code = {I(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS), LI(2, 5),
                                        I(JAL_OP_ST, 2, 1), END()};
    auto good = jal::isa::encode_code_object("k", code, 8, JAL_SLICE_L1_BYTES, {});
    const uint64_t marker = 0x1234;
    to_device(out, &marker, 8);

    auto bad_magic = good;
    bad_magic[0] ^= 0xff;
    upload(bad_magic);
    EXPECT_NE(dispatch(1, out), JAL_STATUS_OK);
    EXPECT_EQ(report().fault_slice, ~0u);

    auto bad_crc = good;
    jal_code_object_header h;
    std::memcpy(&h, good.data(), sizeof h);
    bad_crc[h.code_offset + 8] ^= 0x01;  // LI's immediate: still a valid instruction
    upload(bad_crc);
    EXPECT_EQ(dispatch(1, out), JAL_STATUS_INVALID_FIELD);

    upload(jal::isa::encode_code_object("k", std::vector<uint64_t>{I(0xee), END()}, 0,
                                        JAL_SLICE_L1_BYTES, {}));
    EXPECT_EQ(dispatch(1, out), JAL_STATUS_INVALID_OPCODE);

    upload(jal::isa::encode_code_object("k", std::vector<uint64_t>{LI(40, 1), END()}, 0,
                                        JAL_SLICE_L1_BYTES, {}));
    EXPECT_EQ(dispatch(1, out), JAL_STATUS_INVALID_FIELD);

    // None of them ran: the marker is intact.
    uint64_t v;
    std::memcpy(&v, from_device(out, 8).data(), 8);
    EXPECT_EQ(v, marker);

    // Bad packets: no slices, an unusable slice, unknown flags, an unmapped code object.
    upload(good);
    EXPECT_EQ(dispatch_raw(0, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(dispatch(1ull << 63, out),
              JAL_STATUS_INVALID_FIELD);  // one slice is fused: 63 logical ids
    EXPECT_EQ(dispatch_raw(1, 0x80), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(dispatch_raw(1, 0, 1), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(dispatch_raw(1, 0, 0, host_->bus_addr() + 4), JAL_STATUS_INVALID_FIELD);  // unaligned
    EXPECT_EQ(dispatch_raw(1, 0, 0, 8), JAL_STATUS_DMA_FAULT);  // not the client's memory

    upload(good);
    ASSERT_EQ(dispatch(1, out), JAL_STATUS_OK);
    std::memcpy(&v, from_device(out, 8).data(), 8);
    EXPECT_EQ(v, 5u);
}

TEST_F(DispatchTest, FaultingKernelsFailWithTheirStatusAndTheEmulatorStaysHealthy)
{
    struct Case {
        const char* what;
        std::vector<uint64_t> code;
        uint64_t mask;
        uint32_t budget_kinsn;
        jal_status status;
        uint32_t fault_pc;
    };
    const uint64_t unmapped =
        data_->va() + 2 * kPage + 4096;  // the guard page after the allocation
    const std::vector<Case> cases = {
        {"bad address",  // the argument buffer holds an unmapped address
         {I(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS), I(JAL_OP_LD, 1, 1), I(JAL_OP_LD, 4, 1), END()},
         1,
         0,
         JAL_STATUS_PAGE_FAULT,
         2},
        {"tile outside L1",
         {LI(1, static_cast<int32_t>(JAL_SLICE_L1_BYTES - 64)), LI(2, 4), LI(3, 8),
          I(JAL_OP_TDESC, 0, 1, 2, 3, JAL_TDESC_IMM(0, JAL_DT_F32)), END()},
         1,
         0,
         JAL_STATUS_OUT_OF_RANGE,
         3},
        {"divide by zero",
         {LI(1, 3), I(JAL_OP_DIVU, 2, 1, 0), END()},
         0b11,
         0,
         JAL_STATUS_INVALID_FIELD,
         1},
        {"infinite loop",
         {LI(1, 0), I(JAL_OP_ADDI, 1, 1, 0, 0, 1), I(JAL_OP_JMP, 0, 0, 0, 0, -1), END()},
         0b101,
         1,
         JAL_STATUS_TIMEOUT,
         0},
        {"deadlock",  // both slices receive from each other first
         {I(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_SLICE), LI(2, 1), I(JAL_OP_XOR, 3, 1, 2), LI(4, 0),
          LI(5, 1), LI(6, 4), I(JAL_OP_TDESC, 0, 4, 5, 6, JAL_TDESC_IMM(0, JAL_DT_F32)),
          I(JAL_OP_RECV, 0, 3, 0, 0, 0), I(JAL_OP_SEND, 0, 3, 0, 0, 1), END()},
         0b11,
         0,
         JAL_STATUS_DEADLOCK,
         7},
    };
    const uint64_t args = data_->va();
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        to_device(args, &unmapped, 8);
        upload(c.code);
        EXPECT_EQ(dispatch(c.mask, args, 0, c.budget_kinsn), c.status);
        const jal_dispatch_report r = report();
        EXPECT_EQ(r.fault_slice, 0u);
        if (c.status != JAL_STATUS_TIMEOUT) {
            EXPECT_EQ(r.fault_pc, c.fault_pc);
            EXPECT_EQ(r.fault_opcode, JAL_INSN_OPCODE(c.code[c.fault_pc]));
        } else {
            EXPECT_EQ(r.instructions, 2 * 1000u);  // two slices, 1000 each
        }
        if (c.status == JAL_STATUS_PAGE_FAULT) {
            EXPECT_EQ(r.fault_address, unmapped);
        }
        if (c.status == JAL_STATUS_DEADLOCK) {
            // The console shows where each slice stopped.
            fwtest::ConsoleClient console(emu().socket_dir() + "/jal0.console");
            const auto j = console.ask("dispatch");
            EXPECT_EQ(j.at("status"), jal_status_name(JAL_STATUS_DEADLOCK));
            EXPECT_EQ(j.at("status_code"), JAL_STATUS_DEADLOCK);
            ASSERT_EQ(j.at("slices").size(), 2u);
            for (const auto& s : j.at("slices")) {
                EXPECT_EQ(s.at("state"), "blocked");
                EXPECT_EQ(s.at("pc"), 7);
            }
            EXPECT_EQ(j.at("slices")[1].at("x")[1], 1);  // x1 = its slice index
        }
        expect_healthy();
    }
    EXPECT_TRUE(emu().running());
}

TEST_F(DispatchTest, ResettingTheQueueAbortsARunningKernel)
{
    // The kernel marks that it runs, then loops endlessly under the default budget (268 M
    // instructions a slice, many seconds); resetting the queue stops it at once.
    const uint64_t flag = data_->va() + 4096;
    const uint64_t zero = 0;
    to_device(flag, &zero, 8);
    upload(std::vector<uint64_t>{I(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS), LI(2, 99),
                                 I(JAL_OP_ST, 2, 1), I(JAL_OP_ADDI, 3, 3, 0, 0, 1),
                                 I(JAL_OP_JMP, 0, 0, 0, 0, -1), END()},
           8);
    jal_dispatch_desc d{};
    d.code_object = code_->va();
    d.slice_mask = 0b111;
    d.args = flag;
    d.report = host_->bus_addr() + kReportOff;
    Signal s(*device_, 1);
    queue_->dispatch(d, &s);
    // Watch the flag through another queue (this one is busy with the kernel).
    Queue watcher(*ctx_, 16);
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    uint64_t seen = 0;
    while (seen != 99 && std::chrono::steady_clock::now() < deadline) {
        Signal c(*device_, 1);
        watcher.copy_to_host(*host_, 0, flag, 8, &c);
        ASSERT_EQ(c.wait_zero(kWait).status, JAL_STATUS_OK);
        std::memcpy(&seen, host_->data(), 8);
    }
    ASSERT_EQ(seen, 99u);
    queue_->reset();
    auto r = s.wait_zero(kWait);
    ASSERT_TRUE(r.satisfied);
    EXPECT_EQ(r.status, JAL_STATUS_ABORTED);
    EXPECT_EQ(report().status, static_cast<uint32_t>(JAL_STATUS_ABORTED));
    EXPECT_GT(report().instructions, 3u);
    expect_healthy();
}

TEST_F(DispatchTest, TimingOnlyComputesTimeButLeavesMemoryUntouched)
{
    const uint64_t base = data_->va();
    const uint64_t va_a = base, va_b = base + 8192, va_out = base + 16384, va_ids = base + 32768,
                   va_args = base + 65536;
    std::vector<float> a(8 * 32, 1.5f), b(32, 2.0f);
    to_device(va_a, a.data(), a.size() * 4);
    to_device(va_b, b.data(), b.size() * 4);
    const uint64_t args[4] = {va_a, va_b, va_out, va_ids};
    to_device(va_args, args, sizeof args);
    std::vector<std::byte> pattern(8 * 64 + 64, std::byte{0x5a});
    to_device(va_out, pattern.data(), pattern.size());
    to_device(va_ids, pattern.data(), 64);
    upload(mma_kernel(), 32);

    ASSERT_EQ(dispatch(0xff, va_args, JAL_DISPATCH_F_TIMING_ONLY), JAL_STATUS_OK);
    const jal_dispatch_report timed = report();
    EXPECT_GT(timed.modelled_ns, 0u);
    EXPECT_EQ(from_device(va_out, pattern.size()), pattern);
    const auto ids = from_device(va_ids, 64);
    EXPECT_EQ(std::vector<std::byte>(ids.begin(), ids.end()),
              std::vector<std::byte>(pattern.begin(), pattern.begin() + 64));

    // The real run takes the same modelled time and does write.
    ASSERT_EQ(dispatch(0xff, va_args), JAL_STATUS_OK);
    EXPECT_EQ(report().modelled_ns, timed.modelled_ns);
    EXPECT_EQ(report().flops, timed.flops);
    EXPECT_NE(from_device(va_out, pattern.size()), pattern);
}

}  // namespace
