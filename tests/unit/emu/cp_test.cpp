// The command processor driven in-process, as firmware and a host would: a chip whose
// management core is not running, one attached host function with a memfd as its memory,
// CP and MMU registers written through the peripheral bus, doorbells rung through the
// function's doorbell memfd and kick eventfd.
#include "emu/chip/chip.hpp"
#include "jal/emu/protocol.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/queue.h"
#include "jal/hw/status.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu/transport/connection.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
constexpr std::uint64_t kPage = JAL_PAGE_SIZE;
constexpr std::uint64_t kVa = JAL_VA_BASE;
constexpr std::uint64_t kBus = 0x7000'0000'0000ull;  // where the device sees host memory
constexpr std::size_t kHostBytes = 48u << 20;
constexpr std::size_t kRingOff = 0, kRptrOff = 1u << 20, kSigOff = 2u << 20, kDataOff = 4u << 20;
constexpr std::uint32_t kSignals = 4096;
constexpr std::uint32_t kCtx = 1, kOtherCtx = 2;
constexpr std::uint32_t kNoSignalYet = JAL_STATUS_OK;  // hosts start signals with status 0

std::uint64_t slice_pa(std::uint32_t slice, std::uint32_t page = 0)
{
    return slice * JAL_HBM_SLICE_BYTES + page * kPage;
}

using Packet = std::array<std::byte, JAL_PACKET_SIZE>;

template <typename T>
Packet as_packet(const T& p)
{
    static_assert(sizeof(T) == JAL_PACKET_SIZE);
    Packet out;
    std::memcpy(out.data(), &p, sizeof p);
    return out;
}

struct Queue {
    std::uint32_t id;
    std::uint32_t size;
    std::byte* ring;
    std::uint64_t* rptr;
    std::atomic<std::uint64_t> write{0};
};

class CpTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        chip_ = std::make_unique<jal::emu::Chip>(jal::emu::ChipConfig{});
        fn_ = chip_->host().attach();
        ASSERT_GE(fn_, 0);
        memfd_ = memfd_create("cp-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        ASSERT_EQ(ftruncate(memfd_, kHostBytes), 0);
        ASSERT_EQ(fcntl(memfd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
        ASSERT_EQ(chip_->host().memory(fn_).map(kBus, kHostBytes, memfd_, 0), JAL_STATUS_OK);
        // The host side works through the emulator's own mappings of its memory and of the
        // doorbell page (a client maps the memfds; here both sides are one process): the
        // same bytes, and one address each, so ThreadSanitizer pairs the two sides'
        // release stores and acquire loads (docs/reliability.md, "Thread safety").
        host_ = jal::emu::HostMemory::Pin(chip_->host().memory(fn_)).at(kBus, kHostBytes);
        ASSERT_NE(host_, nullptr);
        db_ = chip_->host().doorbells(fn_);
        ASSERT_TRUE(db_);
        doorbells_ = db_->mapping();
        kickfd_ = dup(db_->kickfd());
        // Context 1: 8 pages on slice 4; pages 8..9 replicated on slices 7 and 12.
        for (std::uint32_t i = 0; i < 8; ++i)
            ASSERT_EQ(mmu_map(kCtx, kVa + i * kPage, slice_pa(4, i)), JAL_STATUS_OK);
        for (std::uint32_t i = 8; i < 10; ++i) {
            ASSERT_EQ(mmu_map(kCtx, kVa + i * kPage, slice_pa(7, i)), JAL_STATUS_OK);
            ASSERT_EQ(mmu_map(kCtx, kVa + i * kPage, slice_pa(12, i), JAL_MMU_F_ADD_REPLICA),
                      JAL_STATUS_OK);
        }
        // Context 2 owns memory at a VA context 1 does not map.
        ASSERT_EQ(mmu_map(kOtherCtx, kVa + 100 * kPage, slice_pa(20)), JAL_STATUS_OK);
    }
    void TearDown() override
    {
        db_.reset();
        chip_.reset();
        close(memfd_);
        close(kickfd_);
    }

    void w(std::uint32_t addr, std::uint32_t v) { chip_->bus().write32(addr, v); }
    std::uint32_t r(std::uint32_t addr) { return chip_->bus().read32(addr); }
    std::uint64_t bus(const void* p) const
    {
        return kBus + (static_cast<const std::byte*>(p) - host_);
    }

    std::uint32_t mmu_map(std::uint32_t ctx, std::uint64_t va, std::uint64_t pa,
                          std::uint32_t flags = 0)
    {
        w(JAL_MMU_CTX, ctx);
        w(JAL_MMU_VA_LO, static_cast<std::uint32_t>(va));
        w(JAL_MMU_VA_HI, static_cast<std::uint32_t>(va >> 32));
        w(JAL_MMU_PA_LO, static_cast<std::uint32_t>(pa));
        w(JAL_MMU_PA_HI, static_cast<std::uint32_t>(pa >> 32));
        w(JAL_MMU_FLAGS, flags);
        w(JAL_MMU_CMD, JAL_MMU_CMD_MAP);
        return r(JAL_MMU_STATUS);
    }

    // What the firmware's CREATE_QUEUE does. Each queue gets its own ring and read index.
    std::unique_ptr<Queue> create_queue(std::uint32_t id, std::uint32_t size = 64,
                                        std::uint32_t ctx = kCtx, std::uint32_t vector = 1,
                                        std::uint32_t space = 0)
    {
        auto q = std::make_unique<Queue>();
        q->id = id;
        q->size = size;
        q->ring = host_ + kRingOff + id * 0x10000;  // room for 1024 packets each
        q->rptr = reinterpret_cast<std::uint64_t*>(host_ + kRptrOff + id * 64);
        std::memset(q->ring, 0, std::size_t{size} * JAL_PACKET_SIZE);
        program(id, ctx, bus(q->ring), size, bus(q->rptr), vector);
        w(JAL_CP_Q_SPACE, space);
        w(JAL_CP_Q_CTRL, JAL_CP_CTRL_ENABLE);
        return q;
    }
    // A host-window command of this function (what the firmware's HOST_WINDOW does).
    std::uint32_t window(std::uint32_t cmd, std::uint32_t space, std::uint64_t base,
                         std::uint64_t size)
    {
        w(JAL_CP_WIN_FUNC, static_cast<std::uint32_t>(fn_));
        w(JAL_CP_WIN_SPACE, space);
        w(JAL_CP_WIN_BASE_LO, static_cast<std::uint32_t>(base));
        w(JAL_CP_WIN_BASE_HI, static_cast<std::uint32_t>(base >> 32));
        w(JAL_CP_WIN_SIZE_LO, static_cast<std::uint32_t>(size));
        w(JAL_CP_WIN_SIZE_HI, static_cast<std::uint32_t>(size >> 32));
        w(JAL_CP_WIN_CMD, cmd);
        return r(JAL_CP_WIN_STATUS);
    }
    void program(std::uint32_t id, std::uint32_t ctx, std::uint64_t ring, std::uint32_t size,
                 std::uint64_t rptr, std::uint32_t vector)
    {
        w(JAL_CP_QSEL, id);
        w(JAL_CP_Q_CTX, ctx);
        w(JAL_CP_Q_FUNC, static_cast<std::uint32_t>(fn_));
        w(JAL_CP_Q_RING_LO, static_cast<std::uint32_t>(ring));
        w(JAL_CP_Q_RING_HI, static_cast<std::uint32_t>(ring >> 32));
        w(JAL_CP_Q_SIZE, size);
        w(JAL_CP_Q_RPTR_LO, static_cast<std::uint32_t>(rptr));
        w(JAL_CP_Q_RPTR_HI, static_cast<std::uint32_t>(rptr >> 32));
        w(JAL_CP_Q_VECTOR, vector);
    }
    std::uint32_t qreg(std::uint32_t id, std::uint32_t addr)
    {
        w(JAL_CP_QSEL, id);
        return r(addr);
    }
    std::uint64_t qreg64(std::uint32_t id, std::uint32_t lo_addr)
    {
        w(JAL_CP_QSEL, id);
        const std::uint64_t lo = r(lo_addr);
        return lo | (std::uint64_t{r(lo_addr + 4)} << 32);
    }
    void ctrl(std::uint32_t id, std::uint32_t c)
    {
        w(JAL_CP_QSEL, id);
        w(JAL_CP_Q_CTRL, c);
    }

    std::uint64_t* db_word(std::uint32_t q, std::uint32_t off)
    {
        return reinterpret_cast<std::uint64_t*>(doorbells_ + std::size_t{q} * JAL_DOORBELL_STRIDE +
                                                off);
    }
    // The host protocol of queue.h.
    void ring_doorbell(std::uint32_t q, std::uint64_t write_index)
    {
        __atomic_store_n(db_word(q, JAL_DOORBELL_WRITE_INDEX), write_index, __ATOMIC_RELEASE);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (__atomic_load_n(db_word(q, JAL_DOORBELL_NEED_WAKEUP), __ATOMIC_ACQUIRE)) {
            const std::uint64_t one = 1;
            ASSERT_EQ(::write(kickfd_, &one, sizeof one), 8);
            ++kicks_;
        }
    }
    // Reserve, wait for room, body, header last (release), doorbell.
    std::uint64_t submit(Queue& q, const Packet& p, bool ring = true)
    {
        const std::uint64_t idx = q.write.fetch_add(1);
        while (idx - __atomic_load_n(q.rptr, __ATOMIC_ACQUIRE) >= q.size) std::this_thread::yield();
        write_slot(q, idx, p);
        if (ring) ring_doorbell(q.id, idx + 1);
        return idx;
    }
    void write_slot(Queue& q, std::uint64_t idx, const Packet& p)
    {
        std::byte* slot = q.ring + (idx & (q.size - 1)) * JAL_PACKET_SIZE;
        std::memcpy(slot + 4, p.data() + 4, JAL_PACKET_SIZE - 4);
        std::uint32_t h;
        std::memcpy(&h, p.data(), 4);
        __atomic_store_n(reinterpret_cast<std::uint32_t*>(slot), h, __ATOMIC_RELEASE);
    }
    // The host's view of its memory after the device mapped it again (a new address).
    void remap_host(Queue& q)
    {
        ASSERT_EQ(chip_->host().memory(fn_).map(kBus, kHostBytes, memfd_, 0), JAL_STATUS_OK);
        host_ = jal::emu::HostMemory::Pin(chip_->host().memory(fn_)).at(kBus, kHostBytes);
        ASSERT_NE(host_, nullptr);
        q.ring = host_ + kRingOff + q.id * 0x10000;
        q.rptr = reinterpret_cast<std::uint64_t*>(host_ + kRptrOff + q.id * 64);
    }

    jal_signal* signal(std::uint32_t i, std::int64_t value = 1)
    {
        auto* s = reinterpret_cast<jal_signal*>(host_ + kSigOff + i * sizeof(jal_signal));
        s->status = kNoSignalYet;
        s->reserved = 0;
        __atomic_store_n(&s->value, value, __ATOMIC_RELEASE);
        return s;
    }
    // Waits until the signal's value is at most `until`; returns its status.
    std::uint32_t wait(const jal_signal* s, std::int64_t until = 0,
                       std::chrono::milliseconds timeout = 10s)
    {
        const auto end = std::chrono::steady_clock::now() + timeout;
        while (__atomic_load_n(&s->value, __ATOMIC_ACQUIRE) > until) {
            if (std::chrono::steady_clock::now() > end) {
                ADD_FAILURE() << "signal timed out";
                return 0xffffffffu;
            }
            std::this_thread::yield();
        }
        return __atomic_load_n(&s->status, __ATOMIC_RELAXED);
    }
    bool done(const jal_signal* s) const
    {
        return __atomic_load_n(&s->value, __ATOMIC_ACQUIRE) <= 0;
    }
    // Polls `holds` (yielding between looks) until it is true or `timeout` passes.
    template <class Pred>
    bool eventually(Pred holds, std::chrono::milliseconds timeout = 10s)
    {
        const auto end = std::chrono::steady_clock::now() + timeout;
        while (!holds()) {
            if (std::chrono::steady_clock::now() > end) return false;
            std::this_thread::yield();
        }
        return true;
    }
    // How often queue `id`'s engine has found its next packet waiting (QueueEngine).
    std::uint64_t pending_checks(std::uint32_t id) const
    {
        return chip_->cp().queue(id).pending_checks();
    }
    // Waits until queue `id` has looked at its waiting packet `n` more times than `before`.
    void wait_pending(std::uint32_t id, std::uint64_t before, std::uint64_t n = 1)
    {
        EXPECT_TRUE(eventually([&] { return pending_checks(id) >= before + n; }))
            << "queue " << id << " never found its packet waiting";
    }

    Packet nop_s(const jal_signal* s, std::uint8_t flags = 0)
    {
        jal_packet_nop p{};
        p.header = {JAL_PACKET_NOP, flags, 0};
        p.completion_signal = s ? bus(s) : 0;
        return as_packet(p);
    }
    Packet copy(std::uint16_t dir, std::uint64_t src, std::uint64_t dst, std::uint64_t size,
                const jal_signal* s)
    {
        jal_packet_copy p{};
        p.header = {JAL_PACKET_COPY, 0, dir};
        p.src = src;
        p.dst = dst;
        p.size = size;
        p.completion_signal = s ? bus(s) : 0;
        return as_packet(p);
    }
    Packet barrier(std::initializer_list<const jal_signal*> deps, const jal_signal* s)
    {
        jal_packet_barrier_and p{};
        p.header = {JAL_PACKET_BARRIER_AND, 0, static_cast<std::uint16_t>(deps.size())};
        int i = 0;
        for (const jal_signal* d : deps) p.dep_signal[i++] = bus(d);
        p.completion_signal = s ? bus(s) : 0;
        return as_packet(p);
    }
    Packet signal_op(std::uint16_t op, const jal_signal* target, std::int64_t operand,
                     const jal_signal* s)
    {
        jal_packet_signal p{};
        p.header = {JAL_PACKET_SIGNAL, 0, op};
        p.signal = bus(target);
        p.operand = operand;
        p.completion_signal = s ? bus(s) : 0;
        return as_packet(p);
    }

    // WRITE_VALUE (op 0) or WAIT_VALUE (op: jal_value_op) of the word at device address va.
    Packet value(std::uint8_t type, std::uint16_t op, std::uint64_t va, std::uint64_t v,
                 std::uint32_t timeout_us, const jal_signal* s, std::uint8_t flags = 0)
    {
        jal_packet_value p{};
        p.header = {type, flags, op};
        p.timeout_us = timeout_us;
        p.addr = va;
        p.value = v;
        p.completion_signal = s ? bus(s) : 0;
        return as_packet(p);
    }

    std::unique_ptr<jal::emu::Chip> chip_;
    int fn_ = -1, memfd_ = -1, kickfd_ = -1;
    std::byte* host_ = nullptr;
    std::byte* doorbells_ = nullptr;
    std::shared_ptr<jal::emu::Doorbells> db_;  // keeps doorbells_ mapped
    std::atomic<int> kicks_{0};

    // Packets the command processor must fail, each with the status it must report (the
    // test fills in their completion signals). Uses host buffer `buf` and signals 200-206.
    struct ErrorCase {
        const char* what;
        Packet p;
        std::uint32_t status;
    };
    template <typename T>
    static Packet with(Packet p, std::size_t off, T v)
    {
        std::memcpy(p.data() + off, &v, sizeof v);
        return p;
    }
    std::vector<ErrorCase> malformed_packets(std::byte* buf)
    {
        std::vector<ErrorCase> cases;
        cases.push_back({"unknown type", with(nop_s(nullptr), 0, std::uint8_t{0x55}),
                         JAL_STATUS_INVALID_OPCODE});
        // DISPATCH runs kernels now (tests/unit/emu/isa_*, tests/integration/dispatch); an
        // empty slice mask is malformed.
        cases.push_back({"dispatch without slices",
                         with(nop_s(nullptr), 0, std::uint8_t{JAL_PACKET_DISPATCH}),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back(
            {"nop reserved", with(nop_s(nullptr), 24, std::uint64_t{1}), JAL_STATUS_INVALID_FIELD});
        cases.push_back(
            {"nop arg", with(nop_s(nullptr), 2, std::uint16_t{1}), JAL_STATUS_INVALID_FIELD});
        cases.push_back(
            {"unknown flag", with(nop_s(nullptr), 1, std::uint8_t{0x4}), JAL_STATUS_INVALID_FIELD});
        cases.push_back(
            {"copy dir", copy(7, bus(buf), kVa, 64, nullptr), JAL_STATUS_INVALID_FIELD});
        cases.push_back({"copy reserved",
                         with(copy(JAL_COPY_H2D, bus(buf), kVa, 64, nullptr), 40, std::uint64_t{9}),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back({"copy size 0", copy(JAL_COPY_H2D, bus(buf), kVa, 0, nullptr),
                         JAL_STATUS_INVALID_LENGTH});
        cases.push_back({"copy too big",
                         copy(JAL_COPY_D2D, kVa, kVa + kPage, JAL_COPY_SIZE_MAX + 1, nullptr),
                         JAL_STATUS_INVALID_LENGTH});
        cases.push_back({"host unmapped", copy(JAL_COPY_H2D, kBus + kHostBytes, kVa, 64, nullptr),
                         JAL_STATUS_DMA_FAULT});
        cases.push_back({"host straddles end",
                         copy(JAL_COPY_D2H, kVa, kBus + kHostBytes - 32, 64, nullptr),
                         JAL_STATUS_DMA_FAULT});
        cases.push_back({"device unmapped",
                         copy(JAL_COPY_H2D, bus(buf), kVa + 60 * kPage, 64, nullptr),
                         JAL_STATUS_PAGE_FAULT});
        cases.push_back({"device runs off the mapping",
                         copy(JAL_COPY_H2D, bus(buf), kVa + 10 * kPage - 8, 64, nullptr),
                         JAL_STATUS_PAGE_FAULT});
        cases.push_back({"other context's memory",
                         copy(JAL_COPY_D2H, kVa + 100 * kPage, bus(buf), 64, nullptr),
                         JAL_STATUS_PAGE_FAULT});
        cases.push_back({"barrier count 0",
                         with(barrier({signal(200)}, nullptr), 2, std::uint16_t{0}),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back({"barrier count 6",
                         with(barrier({signal(201)}, nullptr), 2, std::uint16_t{6}),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back({"barrier dep misaligned",
                         with(barrier({signal(202)}, nullptr), 8, kBus + kSigOff + 8),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back({"barrier dep unmapped",
                         with(barrier({signal(203)}, nullptr), 8, kBus - 16),
                         JAL_STATUS_DMA_FAULT});
        cases.push_back(
            {"signal op", signal_op(9, signal(204), 1, nullptr), JAL_STATUS_INVALID_FIELD});
        cases.push_back(
            {"signal target misaligned",
             with(signal_op(JAL_SIGNAL_SET, signal(205), 1, nullptr), 8, kBus + kSigOff + 4),
             JAL_STATUS_INVALID_FIELD});
        cases.push_back({"signal target unmapped",
                         with(signal_op(JAL_SIGNAL_SET, signal(206), 1, nullptr), 8, kBus - 16),
                         JAL_STATUS_DMA_FAULT});
        add_malformed_value_packets(cases);
        return cases;
    }
    // WRITE_VALUE and WAIT_VALUE (interface 1.9) that must fail.
    void add_malformed_value_packets(std::vector<ErrorCase>& cases)
    {
        const std::uint64_t word = kVa + 5 * kPage;
        cases.push_back({"write value misaligned",
                         value(JAL_PACKET_WRITE_VALUE, 0, word + 4, 1, 0, nullptr),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back({"write value arg", value(JAL_PACKET_WRITE_VALUE, 1, word, 1, 0, nullptr),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back({"write value timeout",
                         value(JAL_PACKET_WRITE_VALUE, 0, word, 1, 5, nullptr),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back(
            {"write value reserved",
             with(value(JAL_PACKET_WRITE_VALUE, 0, word, 1, 0, nullptr), 24, std::uint64_t{1}),
             JAL_STATUS_INVALID_FIELD});
        cases.push_back({"write value unmapped",
                         value(JAL_PACKET_WRITE_VALUE, 0, kVa + 60 * kPage, 1, 0, nullptr),
                         JAL_STATUS_PAGE_FAULT});
        cases.push_back({"wait value op 0", value(JAL_PACKET_WAIT_VALUE, 0, word, 0, 0, nullptr),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back({"wait value op 4", value(JAL_PACKET_WAIT_VALUE, 4, word, 0, 0, nullptr),
                         JAL_STATUS_INVALID_FIELD});
        cases.push_back(
            {"wait value unmapped",
             value(JAL_PACKET_WAIT_VALUE, JAL_VALUE_EQ, kVa + 100 * kPage, 0, 0, nullptr),
             JAL_STATUS_PAGE_FAULT});
    }
};

TEST_F(CpTest, NopCompletesAndRetires)
{
    auto q = create_queue(0, 16);
    EXPECT_EQ(qreg(0, JAL_CP_Q_STATE), JAL_QUEUE_ACTIVE);
    jal_signal* s = signal(0);
    submit(*q, nop_s(s));
    EXPECT_EQ(wait(s), JAL_STATUS_OK);
    EXPECT_EQ(s->value, 0);
    // Header reset to INVALID, read index published to host memory and the registers.
    for (auto t = std::chrono::steady_clock::now();
         __atomic_load_n(q->rptr, __ATOMIC_ACQUIRE) != 1;)
        ASSERT_LT(std::chrono::steady_clock::now() - t, 5s);
    EXPECT_EQ(std::to_integer<int>(q->ring[0]), JAL_PACKET_INVALID);
    EXPECT_EQ(qreg64(0, JAL_CP_Q_READ_LO), 1u);
    EXPECT_EQ(qreg64(0, JAL_CP_Q_WRITE_LO), 1u);
    EXPECT_EQ(qreg(0, JAL_CP_Q_ERRORS), 0u);
    // Signal-less NOPs around the ring several times.
    for (int i = 0; i < 40; ++i) submit(*q, nop_s(nullptr));
    jal_signal* s2 = signal(1);
    submit(*q, nop_s(s2));
    EXPECT_EQ(wait(s2), JAL_STATUS_OK);
    EXPECT_EQ(qreg64(0, JAL_CP_Q_READ_LO), 42u);
}

TEST_F(CpTest, CopiesRoundTripAcrossPagesAndReplicas)
{
    auto q = create_queue(3, 64);
    std::mt19937_64 rng(7);
    const std::size_t n = 5 * (1u << 20) + 12345;  // over three device pages
    std::byte* src = host_ + kDataOff + 3;
    std::byte* dst = host_ + kDataOff + (16u << 20) + 5;
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<std::byte>(rng());
    std::memset(dst, 0, n);

    const std::uint64_t dev_a = kVa + kPage - 4097;  // starts near the end of page 0
    const std::uint64_t dev_b =
        kVa + 8 * kPage + 777;                      // replicated pages 8-9 (fits: < 2 pages - 777)
    const std::size_t nb = 2 * kPage - 777 - 1000;  // D2D into the replicated range
    ASSERT_LE(nb, n);
    jal_signal* s1 = signal(0);
    jal_signal* s2 = signal(1);
    jal_signal* s3 = signal(2);
    submit(*q, copy(JAL_COPY_H2D, bus(src), dev_a, n, s1));
    submit(*q, copy(JAL_COPY_D2D, dev_a + 11, dev_b, nb, s2));
    submit(*q, copy(JAL_COPY_D2H, dev_a, bus(dst), n, s3));
    EXPECT_EQ(wait(s3), JAL_STATUS_OK);
    EXPECT_EQ(s1->status, JAL_STATUS_OK);
    EXPECT_EQ(wait(s2), JAL_STATUS_OK);
    EXPECT_EQ(std::memcmp(src, dst, n), 0);

    // Every replica of the D2D destination holds the bytes; D2H of it reads them back.
    auto& hbm = chip_->hbm();
    for (std::uint32_t slice : {7u, 12u}) {
        const std::byte* p8 = hbm.range(slice_pa(slice, 8) + 777, kPage - 777).data();
        const std::byte* p9 = hbm.range(slice_pa(slice, 9), nb - (kPage - 777)).data();
        EXPECT_EQ(std::memcmp(p8, src + 11, kPage - 777), 0) << "slice " << slice;
        EXPECT_EQ(std::memcmp(p9, src + 11 + (kPage - 777), nb - (kPage - 777)), 0)
            << "slice " << slice;
    }
    std::memset(dst, 0, nb);
    jal_signal* s4 = signal(3);
    submit(*q, copy(JAL_COPY_D2H, dev_b, bus(dst), nb, s4));
    EXPECT_EQ(wait(s4), JAL_STATUS_OK);
    EXPECT_EQ(std::memcmp(src + 11, dst, nb), 0);
    EXPECT_EQ(qreg(3, JAL_CP_Q_ERRORS), 0u);
}

TEST_F(CpTest, BarrierOrdersTwoQueues)
{
    auto q0 = create_queue(0);
    auto q1 = create_queue(1);
    std::byte* src = host_ + kDataOff;
    std::byte* dst = host_ + kDataOff + (1u << 20);
    for (int i = 0; i < 4096; ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
    std::memset(dst, 0, 4096);

    jal_signal* uploaded = signal(0);
    jal_signal* barrier_done = signal(1);
    jal_signal* downloaded = signal(2);
    // q0 waits for q1's upload, then downloads.
    const std::uint64_t checks = pending_checks(0);
    submit(*q0, barrier({uploaded}, barrier_done));
    submit(*q0, copy(JAL_COPY_D2H, kVa + 5 * kPage, bus(dst), 4096, downloaded));
    wait_pending(0, checks);  // the engine has looked at the barrier and waits
    EXPECT_FALSE(done(barrier_done));
    EXPECT_FALSE(done(downloaded));
    EXPECT_EQ(qreg64(0, JAL_CP_Q_READ_LO), 0u);
    submit(*q1, copy(JAL_COPY_H2D, bus(src), kVa + 5 * kPage, 4096, uploaded));
    EXPECT_EQ(wait(downloaded), JAL_STATUS_OK);
    EXPECT_EQ(barrier_done->status, JAL_STATUS_OK);
    EXPECT_EQ(std::memcmp(src, dst, 4096), 0);

    // A barrier waiting on several signals, one set by the host; then a failed dependency.
    jal_signal* a = signal(3);
    jal_signal* b = signal(4, 2);
    jal_signal* both = signal(5);
    submit(*q0, barrier({a, b}, both));
    submit(*q1, nop_s(b));
    submit(*q1, nop_s(b));
    EXPECT_EQ(wait(b), JAL_STATUS_OK);
    // Two more looks: at least one whole one after b reached 0.
    wait_pending(0, pending_checks(0), 2);
    EXPECT_FALSE(done(both));
    __atomic_store_n(&a->value, 0, __ATOMIC_RELEASE);  // the host completes it
    EXPECT_EQ(wait(both), JAL_STATUS_OK);

    jal_signal* bad = signal(6);
    jal_signal* after_bad = signal(7);
    submit(*q1, copy(JAL_COPY_H2D, bus(src), kVa + 50 * kPage, 16, bad));  // unmapped: PAGE_FAULT
    submit(*q0, barrier({bad}, after_bad));
    EXPECT_EQ(wait(after_bad), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(wait(bad), JAL_STATUS_PAGE_FAULT);
}

// A queue waits on a device word another queue writes; EQ, NE, a timeout; and a chain of
// packets passes the first failure on to its end, while an unchained packet starts afresh.
TEST_F(CpTest, ValuePacketsOrderTwoQueuesAndAChainPassesAFailureOn)
{
    auto q0 = create_queue(0);
    auto q1 = create_queue(1);
    const std::uint64_t word = kVa + 5 * kPage + 64;
    std::byte* out = host_ + kDataOff;
    jal_signal* zeroed = signal(0);
    submit(*q1, value(JAL_PACKET_WRITE_VALUE, 0, word, 0, 0, zeroed));
    ASSERT_EQ(wait(zeroed), JAL_STATUS_OK);

    jal_signal* waited = signal(1);
    jal_signal* read = signal(2);
    submit(*q0, value(JAL_PACKET_WAIT_VALUE, JAL_VALUE_GE, word, 3, 0, waited));
    submit(*q0, copy(JAL_COPY_D2H, word, bus(out), 8, read));
    jal_signal* two = signal(3);
    submit(*q1, value(JAL_PACKET_WRITE_VALUE, 0, word, 2, 0, two));
    EXPECT_EQ(wait(two), JAL_STATUS_OK);
    wait_pending(0, pending_checks(0), 2);  // a whole look after the 2 landed: 2 < 3, waits on
    EXPECT_FALSE(done(waited));
    submit(*q1, value(JAL_PACKET_WRITE_VALUE, 0, word, 3, 0, nullptr));
    EXPECT_EQ(wait(read), JAL_STATUS_OK);
    EXPECT_EQ(waited->status, JAL_STATUS_OK);
    std::uint64_t got;
    std::memcpy(&got, out, 8);
    EXPECT_EQ(got, 3u);

    jal_signal* eq = signal(4);
    jal_signal* ne = signal(5);
    submit(*q0, value(JAL_PACKET_WAIT_VALUE, JAL_VALUE_EQ, word, 3, 0, eq));
    submit(*q0, value(JAL_PACKET_WAIT_VALUE, JAL_VALUE_NE, word, 7, 0, ne));
    EXPECT_EQ(wait(eq), JAL_STATUS_OK);
    EXPECT_EQ(wait(ne), JAL_STATUS_OK);
    jal_signal* late = signal(6);
    submit(*q0, value(JAL_PACKET_WAIT_VALUE, JAL_VALUE_EQ, word, 4, 2000, late));
    EXPECT_EQ(wait(late), JAL_STATUS_TIMEOUT);

    // The chain: a failed copy, two chained packets (not executed: the failure passes on,
    // the write never lands), then an unchained one (runs), then a chained one after it.
    jal_signal* c[5] = {signal(10), signal(11), signal(12), signal(13), signal(14)};
    submit(*q0, copy(JAL_COPY_H2D, bus(out), kVa + 50 * kPage, 16, c[0]));
    submit(*q0, value(JAL_PACKET_WRITE_VALUE, 0, word, 99, 0, c[1], JAL_PACKET_F_CHAIN));
    submit(*q0, nop_s(c[2], JAL_PACKET_F_CHAIN));
    submit(*q0, nop_s(c[3]));
    submit(*q0, nop_s(c[4], JAL_PACKET_F_CHAIN));
    EXPECT_EQ(wait(c[0]), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(wait(c[1]), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(wait(c[2]), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(wait(c[3]), JAL_STATUS_OK);
    EXPECT_EQ(wait(c[4]), JAL_STATUS_OK);
    jal_signal* reread = signal(15);
    submit(*q0, copy(JAL_COPY_D2H, word, bus(out), 8, reread));
    EXPECT_EQ(wait(reread), JAL_STATUS_OK);
    std::memcpy(&got, out, 8);
    EXPECT_EQ(got, 3u) << "a chained packet after a failure must not run";
}

TEST_F(CpTest, SignalOps)
{
    auto q = create_queue(9);
    jal_signal* t = signal(0, 1000);
    jal_signal* s = signal(1, 3);
    submit(*q, signal_op(JAL_SIGNAL_SET, t, 42, s));
    submit(*q, signal_op(JAL_SIGNAL_ADD, t, 5, s));
    submit(*q, signal_op(JAL_SIGNAL_SUB, t, 3, s));
    EXPECT_EQ(wait(s), JAL_STATUS_OK);
    EXPECT_EQ(t->value, 44);
    EXPECT_EQ(t->status, JAL_STATUS_OK);
}

TEST_F(CpTest, EveryErrorStatusAndTheQueueGoesOn)
{
    auto q = create_queue(5, 64);
    std::byte* buf = host_ + kDataOff;
    std::vector<ErrorCase> cases = malformed_packets(buf);
    std::uint32_t i = 0;
    auto sig = [&] { return signal(i++); };

    std::vector<jal_signal*> sigs;
    std::vector<std::uint64_t> idx;
    for (ErrorCase& c : cases) {
        sigs.push_back(sig());
        std::uint64_t a = bus(sigs.back());
        std::memcpy(c.p.data() + JAL_PACKET_SIGNAL_OFFSET, &a, 8);
        idx.push_back(submit(*q, c.p));
    }
    for (std::size_t k = 0; k < cases.size(); ++k)
        EXPECT_EQ(wait(sigs[k]), cases[k].status) << cases[k].what;
    // Nothing was written by the faulting copies.
    EXPECT_EQ(chip_->hbm().range(slice_pa(20), 64)[0], std::byte{0});

    // A completion signal the device cannot write: the error is still recorded.
    submit(*q, with(nop_s(nullptr), JAL_PACKET_SIGNAL_OFFSET, kBus + kSigOff + 8));  // misaligned
    const std::uint64_t last =
        submit(*q, with(nop_s(nullptr), JAL_PACKET_SIGNAL_OFFSET, kBus - 64));  // unmapped
    jal_signal* ok = signal(300);
    submit(*q, nop_s(ok));
    EXPECT_EQ(wait(ok), JAL_STATUS_OK);  // the queue went on
    EXPECT_EQ(qreg(5, JAL_CP_Q_STATE), JAL_QUEUE_ACTIVE);
    EXPECT_EQ(qreg(5, JAL_CP_Q_ERRORS), cases.size() + 2);
    EXPECT_EQ(qreg(5, JAL_CP_Q_LAST_ERROR), JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(qreg64(5, JAL_CP_Q_ERR_INDEX_LO), last);
}

TEST_F(CpTest, ResetDropsUnexecutedPacketsAndDisableStopsAWaitingBarrier)
{
    auto q = create_queue(2, 16);
    jal_signal* never = signal(0);
    jal_signal* b = signal(1);
    jal_signal* n1 = signal(2);
    const std::uint64_t checks = pending_checks(2);
    submit(*q, nop_s(nullptr, 0));
    submit(*q, barrier({never}, b));
    submit(*q, nop_s(n1));
    wait_pending(2, checks);
    EXPECT_EQ(qreg64(2, JAL_CP_Q_READ_LO), 1u);  // stuck at the barrier
    // A packet with an error earlier on is cleared by the reset too.
    ctrl(2, JAL_CP_CTRL_RESET);
    EXPECT_EQ(qreg(2, JAL_CP_Q_STATE), JAL_QUEUE_ACTIVE);
    EXPECT_EQ(qreg64(2, JAL_CP_Q_READ_LO), 3u);
    EXPECT_EQ(__atomic_load_n(q->rptr, __ATOMIC_ACQUIRE), 3u);
    EXPECT_EQ(wait(b), JAL_STATUS_ABORTED);
    EXPECT_EQ(wait(n1), JAL_STATUS_ABORTED);
    EXPECT_EQ(std::to_integer<int>(q->ring[1 * JAL_PACKET_SIZE]), JAL_PACKET_INVALID);
    EXPECT_EQ(qreg(2, JAL_CP_Q_ERRORS), 0u);
    jal_signal* after = signal(3);
    submit(*q, nop_s(after));
    EXPECT_EQ(wait(after), JAL_STATUS_OK);

    // DISABLE while a barrier waits returns promptly and leaves the packet unexecuted.
    jal_signal* b2 = signal(4);
    const std::uint64_t checks2 = pending_checks(2);
    submit(*q, barrier({never}, b2));
    wait_pending(2, checks2);
    ctrl(2, JAL_CP_CTRL_DISABLE);
    EXPECT_EQ(qreg(2, JAL_CP_Q_STATE), JAL_QUEUE_DISABLED);
    EXPECT_EQ(qreg64(2, JAL_CP_Q_READ_LO), 4u);
    EXPECT_FALSE(done(b2));
}

TEST_F(CpTest, TwoProducersEveryCompletionCounted)
{
    auto q = create_queue(7, 64);
    constexpr int kPerThread = 20000;
    jal_signal* count = signal(0, 2 * kPerThread);
    jal_signal* last = signal(1, 2);
    auto producer = [&] {
        for (int i = 0; i < kPerThread - 1; ++i) submit(*q, nop_s(count));
        submit(*q, nop_s(last));
    };
    std::thread a(producer), b(producer);
    a.join();
    b.join();
    EXPECT_EQ(wait(last, 0, 60s), JAL_STATUS_OK);
    EXPECT_EQ(wait(count, 2, 60s), JAL_STATUS_OK);  // two completions went to `last`
    EXPECT_EQ(count->value, 2);
    EXPECT_EQ(qreg64(7, JAL_CP_Q_READ_LO), 2u * kPerThread);
    EXPECT_EQ(qreg(7, JAL_CP_Q_ERRORS), 0u);
}

TEST_F(CpTest, DoorbellSleepWakeupAndMmioDoorbellAndInterrupt)
{
    auto q = create_queue(4, 16, kCtx, 3);
    jal_signal* s = signal(0);
    submit(*q, nop_s(s));
    EXPECT_EQ(wait(s), JAL_STATUS_OK);
    // Idle: the engine goes to sleep and asks to be woken.
    auto asleep = [&] {
        return __atomic_load_n(db_word(4, JAL_DOORBELL_NEED_WAKEUP), __ATOMIC_ACQUIRE) != 0;
    };
    ASSERT_TRUE(eventually(asleep));
    const int kicks = kicks_;
    jal_signal* s2 = signal(1);
    submit(*q, nop_s(s2));
    EXPECT_EQ(kicks_, kicks + 1);
    EXPECT_EQ(wait(s2, 0, 1s),
              JAL_STATUS_OK);  // well before the engine's fallback poll would matter

    // The MMIO path (QEMU, kernel driver): BAR2 REG_WRITE stores the index and wakes (the
    // engine asleep again first).
    ASSERT_TRUE(eventually(asleep));
    jal_signal* s3 = signal(2);
    submit(*q, nop_s(s3), false);
    ASSERT_EQ(chip_->host().host_write(fn_, JAL_BAR_DOORBELL, 4 * JAL_DOORBELL_STRIDE, 8, 3),
              JAL_STATUS_OK);
    EXPECT_EQ(wait(s3, 0, 1s), JAL_STATUS_OK);

    // JAL_PACKET_F_INTERRUPT raises the queue's vector.
    const int efd = eventfd(0, EFD_CLOEXEC);
    ASSERT_EQ(chip_->host().set_irq(fn_, 3, dup(efd)), JAL_STATUS_OK);
    jal_signal* s4 = signal(3);
    submit(*q, nop_s(s4, JAL_PACKET_F_INTERRUPT));
    pollfd pfd{efd, POLLIN, 0};
    ASSERT_EQ(poll(&pfd, 1, 5000), 1);
    EXPECT_TRUE(done(s4));
    close(efd);
}

TEST_F(CpTest, PacketsPublishedBeyondAStaleDoorbellRun)
{
    // Producers whose doorbell writes land out of order: the smaller value wins the word.
    auto q = create_queue(6, 16);
    jal_signal* a = signal(0);
    jal_signal* b = signal(1);
    submit(*q, nop_s(a), false);
    submit(*q, nop_s(b), false);
    ring_doorbell(6, 1);
    EXPECT_EQ(wait(b), JAL_STATUS_OK);
    EXPECT_EQ(wait(a), JAL_STATUS_OK);
}

TEST_F(CpTest, AHeaderPublishedLongAfterItsDoorbellStillRunsInOrder)
{
    // A producer preempted between reserving a slot and publishing it: the engine waits
    // (however long) rather than skipping the slot, and later packets stay behind it.
    auto q = create_queue(7, 16);
    jal_signal* late = signal(0);
    jal_signal* next = signal(1);
    const std::uint64_t idx = q->write.fetch_add(1);
    std::byte* slot = q->ring + (idx & (q->size - 1)) * JAL_PACKET_SIZE;
    const Packet p = nop_s(late);
    std::memcpy(slot + 4, p.data() + 4, JAL_PACKET_SIZE - 4);  // body only, no header yet
    submit(*q, nop_s(next));                                   // rings the doorbell past it
    // The engine looks at the slot again and again; wait until it has done so for as many
    // of its longest sleeps as fit in 1.2 s (beyond the 1 s an engine once gave up after).
    wait_pending(7, 0, std::chrono::milliseconds(1200) / jal::emu::QueueEngine::kPendingPoll);
    EXPECT_EQ(__atomic_load_n(&next->value, __ATOMIC_ACQUIRE), 1)
        << "ran ahead of an unpublished packet";
    EXPECT_EQ(qreg(7, JAL_CP_Q_ERRORS), 0u);
    std::uint32_t h;
    std::memcpy(&h, p.data(), 4);
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(slot), h, __ATOMIC_RELEASE);
    EXPECT_EQ(wait(late), JAL_STATUS_OK);
    EXPECT_EQ(wait(next), JAL_STATUS_OK);
}

TEST_F(CpTest, BadConfigurationsAndUnmappedRingsStopInError)
{
    // Ring outside the function's memory.
    program(8, kCtx, kBus + kHostBytes, 16, bus(host_ + kRptrOff), 1);
    w(JAL_CP_Q_CTRL, JAL_CP_CTRL_ENABLE);
    EXPECT_EQ(qreg(8, JAL_CP_Q_STATE), JAL_QUEUE_ERROR);
    EXPECT_EQ(qreg(8, JAL_CP_Q_LAST_ERROR), JAL_STATUS_DMA_FAULT);
    // Size not a power of two; bad context.
    program(8, kCtx, bus(host_), 24, bus(host_ + kRptrOff), 1);
    w(JAL_CP_Q_CTRL, JAL_CP_CTRL_ENABLE);
    EXPECT_EQ(qreg(8, JAL_CP_Q_STATE), JAL_QUEUE_ERROR);
    EXPECT_EQ(qreg(8, JAL_CP_Q_LAST_ERROR), JAL_STATUS_INVALID_FIELD);
    program(8, 0, bus(host_), 16, bus(host_ + kRptrOff), 1);
    w(JAL_CP_Q_CTRL, JAL_CP_CTRL_ENABLE);
    EXPECT_EQ(qreg(8, JAL_CP_Q_STATE), JAL_QUEUE_ERROR);

    // The client unmaps the ring under an active queue: ERROR, no crash.
    auto q = create_queue(9, 16);
    jal_signal* s = signal(0);
    submit(*q, nop_s(s));
    EXPECT_EQ(wait(s), JAL_STATUS_OK);
    ASSERT_EQ(chip_->host().memory(fn_).unmap(kBus, kHostBytes), JAL_STATUS_OK);
    // The host's view went with it (one mapping here): the packet is written once the
    // memory is back, as the client's own mapping would have held it all along.
    host_ = nullptr;
    const std::uint64_t idx = q->write.fetch_add(1);
    ring_doorbell(q->id, idx + 1);
    ASSERT_TRUE(eventually([&] { return qreg(9, JAL_CP_Q_STATE) == JAL_QUEUE_ERROR; }));
    EXPECT_EQ(qreg(9, JAL_CP_Q_LAST_ERROR), JAL_STATUS_DMA_FAULT);
    // Mapped again, a reset brings it back.
    remap_host(*q);
    write_slot(*q, idx, nop_s(nullptr));
    ctrl(9, JAL_CP_CTRL_RESET);
    EXPECT_EQ(qreg(9, JAL_CP_Q_STATE), JAL_QUEUE_ACTIVE);
    jal_signal* s2 = signal(1);
    submit(*q, nop_s(s2));
    EXPECT_EQ(wait(s2), JAL_STATUS_OK);
}

// Host windows (interface 1.11): a queue of a context with a host space names host memory
// only inside that space's windows; everything else fails as unmapped memory does.
TEST_F(CpTest, AQueueWithAHostSpaceReachesHostMemoryOnlyInsideItsWindows)
{
    constexpr std::uint32_t kSpace = 7;
    const std::uint64_t data = kBus + kDataOff, span = 16 * kPage;
    ASSERT_EQ(window(JAL_WINDOW_ADD, kSpace, kBus + kRingOff, 1u << 20), JAL_STATUS_OK);
    ASSERT_EQ(window(JAL_WINDOW_ADD, kSpace, kBus + kRptrOff, kPage), JAL_STATUS_OK);
    ASSERT_EQ(window(JAL_WINDOW_ADD, kSpace, kBus + kSigOff, kPage), JAL_STATUS_OK);
    ASSERT_EQ(window(JAL_WINDOW_ADD, kSpace, data, span), JAL_STATUS_OK);
    // Another space of the same function holds the next 16 pages: no use to this one.
    ASSERT_EQ(window(JAL_WINDOW_ADD, kSpace + 1, data + span, span), JAL_STATUS_OK);
    auto q = create_queue(4, 64, kCtx, 1, kSpace);
    ASSERT_EQ(qreg(4, JAL_CP_Q_STATE), JAL_QUEUE_ACTIVE);
    EXPECT_EQ(qreg(4, JAL_CP_Q_SPACE), kSpace);

    std::byte* in = host_ + kDataOff;
    std::byte* out = in + span;  // outside the windows
    std::memset(in, 0x5a, 256);
    std::memset(out, 0x11, 256);
    auto* foreign = reinterpret_cast<jal_signal*>(out + 1024);
    *foreign = jal_signal{JAL_STATUS_OK, 0, 1000};
    auto run = [&](const Packet& p, std::uint32_t i) {
        jal_signal* s = signal(i);
        Packet pk = p;
        const std::uint64_t a = bus(s);
        std::memcpy(pk.data() + JAL_PACKET_SIGNAL_OFFSET, &a, 8);
        submit(*q, pk);
        return wait(s);
    };
    EXPECT_EQ(run(copy(JAL_COPY_H2D, data, kVa, 256, nullptr), 0), JAL_STATUS_OK);
    EXPECT_EQ(run(copy(JAL_COPY_D2H, kVa, bus(out), 256, nullptr), 1), JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(out[0], std::byte{0x11});
    EXPECT_EQ(run(copy(JAL_COPY_H2D, bus(out), kVa + kPage, 256, nullptr), 2),
              JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(chip_->hbm().range(slice_pa(4, 1), 1)[0], std::byte{0});
    // A range that starts inside and runs out of the window.
    EXPECT_EQ(run(copy(JAL_COPY_D2H, kVa, data + span - 128, 256, nullptr), 3),
              JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(out[0], std::byte{0x11});
    EXPECT_EQ(run(signal_op(JAL_SIGNAL_SET, foreign, 5, nullptr), 4), JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(foreign->value, 1000);
    EXPECT_EQ(run(barrier({foreign}, nullptr), 5), JAL_STATUS_DMA_FAULT);
    // A completion signal outside: not written, the error recorded, the queue goes on.
    const std::uint32_t errors = qreg(4, JAL_CP_Q_ERRORS);
    submit(*q, nop_s(foreign));
    EXPECT_EQ(run(copy(JAL_COPY_D2H, kVa, data + 512, 256, nullptr), 6), JAL_STATUS_OK);
    EXPECT_EQ(foreign->value, 1000);
    EXPECT_EQ(qreg(4, JAL_CP_Q_ERRORS), errors + 1);
    EXPECT_EQ(in[512], std::byte{0x5a});

    // The same copy from a queue of a context without a space reaches the whole function.
    auto plain = create_queue(5, 64);
    jal_signal* s = signal(7);
    submit(*plain, copy(JAL_COPY_D2H, kVa, bus(out), 256, s));
    EXPECT_EQ(wait(s), JAL_STATUS_OK);
    EXPECT_EQ(out[0], std::byte{0x5a});

    // A window taken away is gone at once.
    ASSERT_EQ(window(JAL_WINDOW_REMOVE, kSpace, data, span), JAL_STATUS_OK);
    EXPECT_EQ(run(copy(JAL_COPY_H2D, data, kVa, 256, nullptr), 8), JAL_STATUS_DMA_FAULT);
}

TEST_F(CpTest, WindowCommandsCheckTheirRangeAndARingOutsideTheWindowsStopsInError)
{
    EXPECT_EQ(window(JAL_WINDOW_ADD, 3, kBus + 1, kPage), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(window(JAL_WINDOW_ADD, 3, kBus, kPage + 8), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(window(JAL_WINDOW_ADD, 3, kBus, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(window(JAL_WINDOW_ADD, 3, ~0ull - kPage + 1, 2 * kPage), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(window(JAL_WINDOW_ADD, 0, kBus, kPage), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(window(JAL_WINDOW_REMOVE, 3, kBus, kPage), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(window(99, 3, kBus, kPage), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(chip_->cp().windows().count(), 0u);
    // The read index's page only: the ring is outside.
    ASSERT_EQ(window(JAL_WINDOW_ADD, 3, kBus + kRptrOff, kPage), JAL_STATUS_OK);
    create_queue(6, 16, kCtx, 1, 3);
    EXPECT_EQ(qreg(6, JAL_CP_Q_STATE), JAL_QUEUE_ERROR);
    EXPECT_EQ(qreg(6, JAL_CP_Q_LAST_ERROR), JAL_STATUS_DMA_FAULT);
    // CLEAR takes the space's windows, CLEAR_FUNC every one of the function's.
    ASSERT_EQ(window(JAL_WINDOW_ADD, 4, kBus, kPage), JAL_STATUS_OK);
    EXPECT_EQ(window(JAL_WINDOW_CLEAR, 3, 0, 0), JAL_STATUS_OK);
    EXPECT_EQ(chip_->cp().windows().count(), 1u);
    EXPECT_EQ(window(JAL_CP_WIN_CLEAR_FUNC, 0, 0, 0), JAL_STATUS_OK);
    EXPECT_EQ(chip_->cp().windows().count(), 0u);
}

TEST_F(CpTest, DetachStopsTheFunctionsEnginesMidWork)
{
    auto q0 = create_queue(0, 64);
    auto q1 = create_queue(1, 64);
    jal_signal* never = signal(0);
    submit(*q0, barrier({never}, nullptr));  // waits forever
    // q1 keeps copying while the function goes away.
    std::byte* src = host_ + kDataOff;
    for (int i = 0; i < 60; ++i) submit(*q1, copy(JAL_COPY_H2D, bus(src), kVa, 4u << 20, nullptr));
    chip_->host().detach(fn_);
    EXPECT_EQ(qreg(0, JAL_CP_Q_STATE), JAL_QUEUE_DISABLED);
    EXPECT_EQ(qreg(1, JAL_CP_Q_STATE), JAL_QUEUE_DISABLED);
    EXPECT_EQ(chip_->host().memory(fn_).region_count(), 0u);
    // A new client in the same slot gets fresh doorbells; enabling for a detached function fails.
    EXPECT_FALSE(chip_->host().doorbells(fn_));
    program(2, kCtx, kBus, 16, kBus + kRptrOff, 1);
    w(JAL_CP_Q_CTRL, JAL_CP_CTRL_ENABLE);
    EXPECT_EQ(qreg(2, JAL_CP_Q_STATE), JAL_QUEUE_ERROR);
}

TEST_F(CpTest, ChipResetDisablesEveryQueueFlushesTheMmuAndDropsTheWindows)
{
    auto q = create_queue(11);
    jal_signal* never = signal(0);
    submit(*q, barrier({never}, nullptr));
    ASSERT_EQ(window(JAL_WINDOW_ADD, 5, kBus, kPage), JAL_STATUS_OK);
    chip_->cp().reset();
    chip_->mmu().reset();
    EXPECT_EQ(qreg(11, JAL_CP_Q_STATE), JAL_QUEUE_DISABLED);
    EXPECT_EQ(chip_->cp().windows().count(), 0u);
    EXPECT_EQ(chip_->mmu().mapped_pages(kCtx), 0u);
}

// GET_DOORBELLS over the protocol: the reply carries the BAR2 memfd and the kick eventfd,
// and they are the ones the engines use.
TEST(CpProtocol, GetDoorbellsPassesTheMemfdAndKickEventfd)
{
    jal::emu::Chip chip(jal::emu::ChipConfig{});
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    std::thread server([&] { jal::emu::serve_connection(chip, sv[1]); });
    jal_msg_hello h{};
    h.hdr = {JAL_MSG_HELLO, 0, sizeof h, 1};
    h.proto_version = JAL_PROTO_VERSION;
    ASSERT_EQ(send(sv[0], &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
    std::array<std::byte, JAL_PROTO_MSG_MAX> buf{};
    ASSERT_GT(recv(sv[0], buf.data(), buf.size(), 0), 0);
    jal_msg_hdr req{JAL_MSG_GET_DOORBELLS, 0, sizeof(jal_msg_hdr), 2};
    ASSERT_EQ(send(sv[0], &req, sizeof req, 0), static_cast<ssize_t>(sizeof req));

    iovec iov{buf.data(), buf.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 2)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ASSERT_EQ(recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC), static_cast<ssize_t>(sizeof(jal_msg_reply)));
    jal_msg_reply rep;
    std::memcpy(&rep, buf.data(), sizeof rep);
    EXPECT_EQ(rep.hdr.id, 2u);
    EXPECT_EQ(rep.status, JAL_STATUS_OK);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(c->cmsg_len, CMSG_LEN(sizeof(int) * 2));
    int fds[2];
    std::memcpy(fds, CMSG_DATA(c), sizeof fds);
    struct stat st {};
    ASSERT_EQ(fstat(fds[0], &st), 0);
    EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), JAL_BAR_DOORBELL_SIZE);
    // Writing through the client's mapping is what the device's doorbells see.
    auto* p = static_cast<std::uint64_t*>(
        mmap(nullptr, JAL_BAR_DOORBELL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0));
    ASSERT_NE(p, MAP_FAILED);
    p[5 * JAL_DOORBELL_STRIDE / 8] = 77;
    EXPECT_EQ(chip.host().doorbells(0)->write_index(5), 77u);
    const std::uint64_t one = 1;
    EXPECT_EQ(write(fds[1], &one, sizeof one), 8);  // an eventfd
    munmap(p, JAL_BAR_DOORBELL_SIZE);
    close(fds[0]);
    close(fds[1]);
    shutdown(sv[0], SHUT_RDWR);
    server.join();
    close(sv[0]);
    close(sv[1]);
}

}  // namespace
