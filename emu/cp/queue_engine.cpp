#include "emu/cp/queue_engine.hpp"

#include "emu/chip/hbm_memory.hpp"
#include "emu/chip/host_interface.hpp"
#include "emu/chip/mmu.hpp"
#include "emu/cp/dispatch_unit.hpp"
#include "emu/cp/host_windows.hpp"
#include "emu/util/cpu_relax.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/status.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace jal::emu {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kPage = Mmu::kPage;

template <typename T>
T field(const std::byte* pkt, std::size_t off)
{
    T v;
    std::memcpy(&v, pkt + off, sizeof v);
    return v;
}

bool all_zero(const std::byte* p, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != std::byte{0}) return false;
    return true;
}

// A jal_signal in host memory, through its host pointer.
std::uint32_t* sig_status(std::byte* s)
{
    return reinterpret_cast<std::uint32_t*>(s + offsetof(jal_signal, status));
}
std::int64_t* sig_value(std::byte* s)
{
    return reinterpret_cast<std::int64_t*>(s + offsetof(jal_signal, value));
}

// Whether a device source range reads a page lost to an uncorrectable ECC error.
bool source_poisoned(const HbmMemory& hbm, const Mmu::View& v, std::uint64_t src,
                     std::uint64_t size)
{
    for (std::uint64_t off = 0; off < size;) {
        const std::uint64_t a = src + off;
        const std::uint64_t n = std::min(size - off, kPage - (a & (kPage - 1)));
        const Mmu::Page* p = v.find(a);
        if (p && !p->front().remote() && hbm.poisoned(p->front().pa + (a & (kPage - 1)), n))
            return true;
        off += n;
    }
    return false;
}

}  // namespace

QueueEngine::QueueEngine(std::uint32_t qid, const Env& env)
    : qid_(qid), env_(env), hbm_(env.hbm.range(0, env.hbm.size()).data()),
      state_(JAL_QUEUE_DISABLED)
{}

QueueEngine::~QueueEngine()
{
    stop();
}

std::byte* QueueEngine::host(const HostMemory::Pin& pin, std::uint64_t addr,
                             std::uint64_t len) const
{
    if (env_.windows && !env_.windows->allows(cfg_.fn, cfg_.space, addr, len)) return nullptr;
    return pin.at(addr, len);
}

std::uint32_t QueueEngine::resolve_signal(const HostMemory::Pin& pin, std::uint64_t addr,
                                          std::byte*& out) const
{
    out = nullptr;
    if (addr == 0 || addr % 16) return JAL_STATUS_INVALID_FIELD;
    out = host(pin, addr, sizeof(jal_signal));
    return out ? JAL_STATUS_OK : JAL_STATUS_DMA_FAULT;
}

bool QueueEngine::resolve(const HostMemory::Pin& pin)
{
    ring_ = host(pin, cfg_.ring, std::uint64_t{cfg_.size} * JAL_PACKET_SIZE);
    rptr_ = reinterpret_cast<std::uint64_t*>(host(pin, cfg_.rptr, sizeof(std::uint64_t)));
    ring_gen_ = pin.generation();
    return ring_ && rptr_;
}

void QueueEngine::start(const QueueConfig& cfg, std::shared_ptr<Doorbells> db, FunctionWake& wake,
                        bool fresh)
{
    stop();
    cfg_ = cfg;
    db_ = std::move(db);
    wake_ = &wake;
    stop_.store(false);
    if (fresh) {
        read_.store(0);
        last_db_.store(0);
        last_error_.store(0);
        errors_.store(0);
        err_index_.store(0);
        last_status_ = JAL_STATUS_OK;
        db_->set_write_index(qid_, 0);
        db_->set_need_wakeup(qid_, 0);
    }
    {
        HostMemory::Pin pin(env_.host.memory(static_cast<int>(cfg_.fn)));
        if (!resolve(pin)) {
            record_error(JAL_STATUS_DMA_FAULT, read_.load());
            state_.store(JAL_QUEUE_ERROR);
            log(LogLevel::warn,
                "queue {}: ring {:#x} ({} packets) or read index {:#x} not in fn{}'s memory{}",
                qid_, cfg_.ring, cfg_.size, cfg_.rptr, cfg_.fn,
                cfg_.space ? fmt::format(" inside the windows of host space {}", cfg_.space)
                           : std::string());
            return;
        }
        __atomic_store_n(rptr_, read_.load(), __ATOMIC_RELEASE);
    }
    state_.store(JAL_QUEUE_ACTIVE);
    thread_ = std::thread([this] { run(); });
}

void QueueEngine::fail_config(const QueueConfig& cfg, std::uint32_t status)
{
    stop();
    cfg_ = cfg;
    db_.reset();
    read_.store(0);
    last_db_.store(0);
    errors_.store(0);
    record_error(status, 0);
    state_.store(JAL_QUEUE_ERROR);
}

void QueueEngine::stop()
{
    if (thread_.joinable()) {
        stop_.store(true, std::memory_order_seq_cst);
        wake_->wake();
        env_.signals.wake_all();
        thread_.join();
    }
    state_.store(JAL_QUEUE_DISABLED);
}

void QueueEngine::record_error(std::uint32_t status, std::uint64_t index)
{
    last_error_.store(status, std::memory_order_relaxed);
    err_index_.store(index, std::memory_order_relaxed);
    errors_.fetch_add(1, std::memory_order_relaxed);
}

void QueueEngine::complete(std::byte* s, std::uint32_t status)
{
    // Status first, then the value with release: a waiter reads value, then status.
    __atomic_store_n(sig_status(s), status, __ATOMIC_RELAXED);
    __atomic_fetch_sub(sig_value(s), 1, __ATOMIC_RELEASE);
    env_.signals.signalled();
}

void QueueEngine::run()
{
    HostMemory& mem = env_.host.memory(static_cast<int>(cfg_.fn));
    std::uint64_t read = read_.load();
    std::uint64_t target = read;
    auto last_work = Clock::now();
    auto pending_start = last_work;
    bool waiting = false;  // the packet at `read` is waiting (barrier or header)
    bool probe = false;    // check the ring for published packets the doorbell does not cover

    while (!stop_.load(std::memory_order_acquire)) {
        const std::uint64_t d = db_->write_index(qid_);
        last_db_.store(d, std::memory_order_relaxed);
        // Doorbells only grow; with several producers one may land out of order, so the
        // engine keeps the largest, and never looks more than a ring ahead.
        if (d > target) target = std::min(d, read + cfg_.size);

        if (read == target && !probe) {
            probe = idle(mem, read, d, last_work);
            continue;
        }
        probe = false;
        const Batch b = run_batch(mem, read, target);
        if (b.fault) {
            // The ring or the read index was unmapped under the queue.
            record_error(JAL_STATUS_DMA_FAULT, read);
            state_.store(JAL_QUEUE_ERROR);
            log(LogLevel::warn, "queue {}: ring no longer mapped; queue stopped in ERROR", qid_);
            return;
        }
        if (b.irq) env_.host.raise_msi(cfg_.fn, cfg_.vector);
        const auto now = Clock::now();
        if (!b.pending) {
            waiting = false;
            last_work = now;
            continue;
        }
        if (!waiting) {
            waiting = true;
            pending_start = now;
        }
        if (now - pending_start < kPendingSpin) {
            for (int i = 0; i < 32; ++i) cpu_relax();
        } else {
            env_.signals.wait(kPendingPoll, stop_);
        }
        last_work = Clock::now();
    }
}

bool QueueEngine::idle(HostMemory& mem, std::uint64_t read, std::uint64_t doorbell,
                       Clock::time_point& last_work)
{
    if (Clock::now() - last_work < kDoorbellSpin) {
        cpu_relax();
        return false;
    }
    // Sleep: publish NEED_WAKEUP, fence, look once more (the host stores the doorbell,
    // fences, then reads NEED_WAKEUP: one of the two sees the other).
    std::uint64_t seen;
    {
        std::lock_guard lock(wake_->m);
        seen = wake_->seq;
    }
    db_->set_need_wakeup(qid_, 1);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool work = db_->write_index(qid_) != doorbell;
    if (!work) {
        HostMemory::Pin pin(mem);
        work = pin.generation() != ring_gen_ || published(read);
    }
    if (!work) {
        std::unique_lock lock(wake_->m);
        wake_->cv.wait_for(lock, kSleepPoll, [&] {
            return wake_->seq != seen || stop_.load(std::memory_order_relaxed);
        });
    }
    db_->set_need_wakeup(qid_, 0);
    // last_work stays old unless there is work: a wakeup meant for another queue of the
    // function finds nothing here and goes straight back to sleep.
    if (work) last_work = Clock::now();
    return work;  // look at the ring even if the doorbell did not move
}

QueueEngine::Batch QueueEngine::run_batch(HostMemory& mem, std::uint64_t& read,
                                          std::uint64_t& target)
{
    const std::uint64_t mask = cfg_.size - 1;
    Batch b;
    bool dispatch = false;
    {
        HostMemory::Pin pin(mem);
        if (pin.generation() != ring_gen_ && !resolve(pin)) b.fault = true;
        for (unsigned n = 0; !b.fault && n < kBatch; ++n) {
            if (read == target) {
                if (!published(read)) break;
                ++target;
            }
            std::byte* const slot = ring_ + (read & mask) * JAL_PACKET_SIZE;
            const char* traced = tracing() ? packet_name(slot) : nullptr;
            nlohmann::json args = traced ? packet_args(slot) : nullptr;
            const double t0 = traced ? env_.trace->writer->wall_us() : 0;
            const Step s = execute(pin, slot, read);
            if (traced && s != Step::pending && s != Step::dispatch)
                trace_span(traced, read, t0, std::move(args));
            if (s == Step::pending) {
                b.pending = true;
                pending_checks_.fetch_add(1, std::memory_order_release);
                break;
            }
            if (s == Step::dispatch) {
                dispatch = true;
                break;
            }
            ++read;
            read_.store(read, std::memory_order_release);
            __atomic_store_n(rptr_, read, __ATOMIC_RELEASE);
            if (s == Step::done_irq) {
                b.irq = true;  // raised once the pin is released
                break;
            }
            if (stop_.load(std::memory_order_relaxed)) break;
        }
    }
    const double t0 = dispatch && tracing() ? env_.trace->writer->wall_us() : 0;
    if (dispatch && !run_dispatch(mem, read, b.irq)) b.fault = true;
    if (dispatch && tracing()) trace_span("DISPATCH", read, t0);
    if (dispatch && !b.fault) {
        ++read;
        read_.store(read, std::memory_order_release);
    }
    return b;
}

const char* QueueEngine::packet_name(const std::byte* slot)
{
    switch (__atomic_load_n(reinterpret_cast<const std::uint8_t*>(slot), __ATOMIC_ACQUIRE)) {
    case JAL_PACKET_NOP:
        return "NOP";
    case JAL_PACKET_COPY:
        return "COPY";
    case JAL_PACKET_BARRIER_AND:
        return "BARRIER_AND";
    case JAL_PACKET_SIGNAL:
        return "SIGNAL";
    case JAL_PACKET_DISPATCH:
        return "DISPATCH";
    case JAL_PACKET_COLLECTIVE:
        return "COLLECTIVE";
    case JAL_PACKET_WRITE_VALUE:
        return "WRITE_VALUE";
    case JAL_PACKET_WAIT_VALUE:
        return "WAIT_VALUE";
    default:
        return "invalid packet";
    }
}

// Read before execute(), which retires the slot.
nlohmann::json QueueEngine::packet_args(const std::byte* slot)
{
    jal_packet_copy copy;
    std::memcpy(&copy, slot, sizeof copy);
    if (copy.header.type != JAL_PACKET_COPY) return nullptr;
    const char* dir = copy.header.arg == JAL_COPY_H2D   ? "H2D"
                      : copy.header.arg == JAL_COPY_D2H ? "D2H"
                      : copy.header.arg == JAL_COPY_D2D ? "D2D"
                                                        : "invalid";
    return {{"bytes", copy.size}, {"direction", dir}};
}

// A packet's wall-clock span on the queue's track of the chip's wall-clock process.
void QueueEngine::trace_span(const char* name, std::uint64_t index, double t0,
                             nlohmann::json args) const
{
    TraceWriter& w = *env_.trace->writer;
    if (!args.is_object()) args = nlohmann::json::object();
    args["index"] = index;
    args["context"] = cfg_.ctx;
    w.complete(wall_pid(env_.trace->chip), static_cast<int>(qid_), name, "packet", t0,
               std::max(0.0, w.wall_us() - t0), std::move(args));
}

bool QueueEngine::published(std::uint64_t index) const
{
    const auto* hdr =
        reinterpret_cast<const std::uint32_t*>(ring_ + (index & (cfg_.size - 1)) * JAL_PACKET_SIZE);
    return (__atomic_load_n(hdr, __ATOMIC_ACQUIRE) & 0xff) != JAL_PACKET_INVALID;
}

QueueEngine::Step QueueEngine::execute(const HostMemory::Pin& pin, std::byte* slot,
                                       std::uint64_t index)
{
    auto* hdr = reinterpret_cast<std::uint32_t*>(slot);
    const std::uint32_t h = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
    const auto type = static_cast<std::uint8_t>(h);
    const auto flags = static_cast<std::uint8_t>(h >> 8);
    const auto arg = static_cast<std::uint16_t>(h >> 16);

    // The doorbell covers this slot but its producer has not published the header yet.
    // Wait for it however long it takes (AQL): skipping would let a late header land in a
    // slot already passed and run as a stale packet after the ring wraps. A producer that
    // died mid-submission leaves a hole only RESET_QUEUE clears.
    if (type == JAL_PACKET_INVALID) return Step::pending;

    alignas(8) std::byte pkt[JAL_PACKET_SIZE];
    std::memcpy(pkt, slot, sizeof pkt);  // after the acquire: the body is complete

    std::byte* signal = nullptr;
    std::uint32_t status = JAL_STATUS_OK;
    const auto sig_addr = field<std::uint64_t>(pkt, JAL_PACKET_SIGNAL_OFFSET);
    if (sig_addr) status = resolve_signal(pin, sig_addr, signal);
    if (status == JAL_STATUS_OK && (flags & ~(JAL_PACKET_F_INTERRUPT | JAL_PACKET_F_CHAIN)))
        status = JAL_STATUS_INVALID_FIELD;
    // A chained packet after a failure is not executed: it passes the failure on.
    if (status == JAL_STATUS_OK && (flags & JAL_PACKET_F_CHAIN) && last_status_ != JAL_STATUS_OK)
        status = last_status_;
    else if (status == JAL_STATUS_OK) {
        switch (type) {
        case JAL_PACKET_NOP:
            if (arg || !all_zero(pkt + 4, JAL_PACKET_SIGNAL_OFFSET - 4))
                status = JAL_STATUS_INVALID_FIELD;
            break;
        case JAL_PACKET_COPY:
            status = execute_copy(pin, pkt, arg);
            break;
        case JAL_PACKET_BARRIER_AND:
            if (!barrier_ready(pin, pkt, arg, status)) return Step::pending;
            break;
        case JAL_PACKET_SIGNAL:
            status = execute_signal(pin, pkt, arg);
            break;
        case JAL_PACKET_DISPATCH:
            status = accept_dispatch(pin, pkt);
            if (status == JAL_STATUS_OK) return Step::dispatch;
            break;
        case JAL_PACKET_COLLECTIVE:
            status = JAL_STATUS_UNSUPPORTED;
            break;
        case JAL_PACKET_WRITE_VALUE:
            status = execute_write_value(pkt, arg);
            break;
        case JAL_PACKET_WAIT_VALUE:
            if (!wait_value_ready(pkt, arg, index, status)) return Step::pending;
            break;
        default:
            status = JAL_STATUS_INVALID_OPCODE;
            break;
        }
    }

    // The error is recorded before the completion signal is written: a host that saw the
    // signal and reads the queue's error registers then finds this packet counted.
    if (status != JAL_STATUS_OK) record_error(status, index);
    if (signal) complete(signal, status);
    last_status_ = status;
    __atomic_store_n(hdr, std::uint32_t{JAL_PACKET_INVALID}, __ATOMIC_RELEASE);
    return (flags & JAL_PACKET_F_INTERRUPT) ? Step::done_irq : Step::done;
}

std::uint32_t QueueEngine::execute_copy(const HostMemory::Pin& pin, const std::byte* pkt,
                                        std::uint16_t dir)
{
    if (!all_zero(pkt + offsetof(jal_packet_copy, reserved0), 4) ||
        !all_zero(pkt + offsetof(jal_packet_copy, reserved), sizeof(jal_packet_copy::reserved)))
        return JAL_STATUS_INVALID_FIELD;
    return copy(pin, dir, field<std::uint64_t>(pkt, offsetof(jal_packet_copy, src)),
                field<std::uint64_t>(pkt, offsetof(jal_packet_copy, dst)),
                field<std::uint64_t>(pkt, offsetof(jal_packet_copy, size)));
}

bool QueueEngine::barrier_ready(const HostMemory::Pin& pin, const std::byte* pkt,
                                std::uint16_t deps, std::uint32_t& status)
{
    if (deps == 0 || deps > JAL_BARRIER_DEPS_MAX ||
        !all_zero(pkt + offsetof(jal_packet_barrier_and, reserved0), 4) ||
        !all_zero(pkt + offsetof(jal_packet_barrier_and, reserved1), 8)) {
        status = JAL_STATUS_INVALID_FIELD;
        return true;
    }
    bool ready = true;
    for (unsigned i = 0; i < deps && status == JAL_STATUS_OK; ++i) {
        const auto a =
            field<std::uint64_t>(pkt, offsetof(jal_packet_barrier_and, dep_signal) + 8 * i);
        if (a == 0) continue;  // an empty entry, as in AQL
        std::byte* dep;
        status = resolve_signal(pin, a, dep);
        if (status != JAL_STATUS_OK) break;
        const std::int64_t v = __atomic_load_n(sig_value(dep), __ATOMIC_ACQUIRE);
        const std::uint32_t st = __atomic_load_n(sig_status(dep), __ATOMIC_RELAXED);
        if (st != JAL_STATUS_OK)
            status = st;  // a dependency failed: so does the barrier
        else if (v != 0)
            ready = false;
    }
    return status != JAL_STATUS_OK || ready;
}

std::uint32_t QueueEngine::execute_signal(const HostMemory::Pin& pin, const std::byte* pkt,
                                          std::uint16_t op)
{
    if (op < JAL_SIGNAL_SET || op > JAL_SIGNAL_SUB ||
        !all_zero(pkt + offsetof(jal_packet_signal, reserved0), 4) ||
        !all_zero(pkt + offsetof(jal_packet_signal, reserved), sizeof(jal_packet_signal::reserved)))
        return JAL_STATUS_INVALID_FIELD;
    std::byte* target;
    const std::uint32_t status =
        resolve_signal(pin, field<std::uint64_t>(pkt, offsetof(jal_packet_signal, signal)), target);
    if (status != JAL_STATUS_OK) return status;
    const auto operand = field<std::int64_t>(pkt, offsetof(jal_packet_signal, operand));
    __atomic_store_n(sig_status(target), JAL_STATUS_OK, __ATOMIC_RELAXED);
    if (op == JAL_SIGNAL_SET)
        __atomic_store_n(sig_value(target), operand, __ATOMIC_RELEASE);
    else if (op == JAL_SIGNAL_ADD)
        __atomic_fetch_add(sig_value(target), operand, __ATOMIC_RELEASE);
    else
        __atomic_fetch_sub(sig_value(target), operand, __ATOMIC_RELEASE);
    env_.signals.signalled();
    return JAL_STATUS_OK;
}

std::uint32_t QueueEngine::accept_dispatch(const HostMemory::Pin& pin, const std::byte* pkt)
{
    // The report and times must be writable before the kernel runs (8-byte aligned, inside
    // the function's memory); the rest is checked by the dispatch unit.
    const auto report = field<std::uint64_t>(pkt, offsetof(jal_packet_dispatch, report));
    if (report % 8) return JAL_STATUS_INVALID_FIELD;
    if (report && !host(pin, report, sizeof(jal_dispatch_report))) return JAL_STATUS_DMA_FAULT;
    const auto times = field<std::uint64_t>(pkt, offsetof(jal_packet_dispatch, times));
    if (times % 8) return JAL_STATUS_INVALID_FIELD;
    if (times && !host(pin, times, sizeof(jal_dispatch_times))) return JAL_STATUS_DMA_FAULT;
    std::memcpy(dispatch_pkt_, pkt, JAL_PACKET_SIZE);
    return JAL_STATUS_OK;
}

std::uint32_t QueueEngine::copy(const HostMemory::Pin& pin, std::uint32_t dir, std::uint64_t src,
                                std::uint64_t dst, std::uint64_t size)
{
    if (dir < JAL_COPY_H2D || dir > JAL_COPY_D2D) return JAL_STATUS_INVALID_FIELD;
    if (size == 0 || size > JAL_COPY_SIZE_MAX) return JAL_STATUS_INVALID_LENGTH;
    const std::uint32_t ctx = cfg_.ctx;
    const std::byte* hsrc = nullptr;
    std::byte* hdst = nullptr;
    // Check everything first: a failing copy writes nothing.
    if (dir == JAL_COPY_H2D && !(hsrc = host(pin, src, size))) return JAL_STATUS_DMA_FAULT;
    if (dir == JAL_COPY_D2H && !(hdst = host(pin, dst, size))) return JAL_STATUS_DMA_FAULT;
    {
        Mmu::View v(env_.mmu, ctx);
        if (dir != JAL_COPY_H2D && !v.mapped(src, size)) return JAL_STATUS_PAGE_FAULT;
        if (dir != JAL_COPY_D2H && !v.mapped(dst, size)) return JAL_STATUS_PAGE_FAULT;
        if (dir != JAL_COPY_H2D && source_poisoned(env_.hbm, v, src, size))
            return JAL_STATUS_ECC_UNCORRECTED;
    }
    // Page runs: the context's lock is held for one run, so a concurrent UNMAP waits for
    // the bytes in flight. Destinations write every replica; sources read replica 0. A
    // peer's page (remote) goes over the fabric ports; its failure (LINK_DOWN, a revoked
    // export) ends the copy with the runs before it done.
    std::vector<std::byte> bounce;
    for (std::uint64_t off = 0; off < size;) {
        std::uint64_t n = size - off;
        if (dir != JAL_COPY_H2D) n = std::min(n, kPage - ((src + off) & (kPage - 1)));
        if (dir != JAL_COPY_D2H) n = std::min(n, kPage - ((dst + off) & (kPage - 1)));
        Mmu::View v(env_.mmu, ctx);
        const std::byte* from = hsrc ? hsrc + off : nullptr;
        if (!from) {
            const std::uint32_t st = copy_source(v, src + off, n, bounce, from);
            if (st != JAL_STATUS_OK) return st;
        }
        if (hdst) {
            std::memcpy(hdst + off, from, n);
        } else {
            const Mmu::Page* p = v.find(dst + off);
            if (!p) return JAL_STATUS_PAGE_FAULT;
            const std::uint64_t in_page = (dst + off) & (kPage - 1);
            for (const Mmu::Replica& r : *p) {
                if (!r.remote()) {
                    std::memmove(hbm_ + r.pa + in_page, from, n);
                    continue;
                }
                const std::uint32_t st = env_.mmu.peer_write(r, in_page, {from, n});
                if (st != JAL_STATUS_OK) return st;
            }
        }
        off += n;
    }
    return JAL_STATUS_OK;
}

std::uint32_t QueueEngine::copy_source(const Mmu::View& v, std::uint64_t va, std::uint64_t n,
                                       std::vector<std::byte>& bounce, const std::byte*& from)
{
    const Mmu::Page* p = v.find(va);
    if (!p) return JAL_STATUS_PAGE_FAULT;  // unmapped since the check
    const Mmu::Replica& r = p->front();
    const std::uint64_t in_page = va & (kPage - 1);
    if (r.remote()) {
        bounce.resize(n);
        from = bounce.data();
        return env_.mmu.peer_read(r, in_page, bounce);
    }
    if (env_.hbm.poisoned(r.pa + in_page, n)) return JAL_STATUS_ECC_UNCORRECTED;
    from = hbm_ + r.pa + in_page;
    return JAL_STATUS_OK;
}

bool QueueEngine::run_dispatch(HostMemory& mem, std::uint64_t index, bool& irq)
{
    jal_packet_dispatch pkt;
    std::memcpy(&pkt, dispatch_pkt_, sizeof pkt);
    jal_dispatch_report report{};
    jal_dispatch_times times{};
    const std::uint32_t status = env_.dispatch->run(pkt, cfg_.ctx, stop_, report, &times);

    HostMemory::Pin pin(mem);
    if (pin.generation() != ring_gen_ && !resolve(pin)) return false;
    // Times first, then the report, then the signal; each ends with a release store.
    if (pkt.times) {
        if (std::byte* t = host(pin, pkt.times, sizeof times)) {
            std::memcpy(t, &times, offsetof(jal_dispatch_times, done));
            __atomic_store_n(
                reinterpret_cast<std::uint64_t*>(t + offsetof(jal_dispatch_times, done)),
                std::uint64_t{1}, __ATOMIC_RELEASE);
        }
    }
    // The report, like a signal: its last 8 bytes stored last with release, so a host
    // that sees the signal complete sees the whole report.
    if (pkt.report) {
        if (std::byte* r = host(pin, pkt.report, sizeof report)) {
            std::memcpy(r, &report, sizeof report - 8);
            std::uint64_t last;
            std::memcpy(&last, reinterpret_cast<const std::byte*>(&report) + sizeof report - 8, 8);
            __atomic_store_n(reinterpret_cast<std::uint64_t*>(r + sizeof report - 8), last,
                             __ATOMIC_RELEASE);
        }
    }
    std::byte* signal = nullptr;
    if (pkt.completion_signal) resolve_signal(pin, pkt.completion_signal, signal);
    if (status != JAL_STATUS_OK) record_error(status, index);  // before the signal, as above
    if (signal) complete(signal, status);
    last_status_ = status;
    std::byte* slot = ring_ + (index & (cfg_.size - 1)) * JAL_PACKET_SIZE;
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(slot), std::uint32_t{JAL_PACKET_INVALID},
                     __ATOMIC_RELEASE);
    __atomic_store_n(rptr_, index + 1, __ATOMIC_RELEASE);
    if (pkt.header.flags & JAL_PACKET_F_INTERRUPT) irq = true;
    return true;
}

void QueueEngine::drop_unexecuted()
{
    if (running() || !db_) return;
    const std::uint64_t read = read_.load();
    const std::uint64_t d = db_->write_index(qid_);
    last_db_.store(d);
    const std::uint64_t to = std::max(read, d);
    {
        HostMemory::Pin pin(env_.host.memory(static_cast<int>(cfg_.fn)));
        if (resolve(pin)) {
            const std::uint64_t mask = cfg_.size - 1;
            for (std::uint64_t i = read; i < to && i - read < cfg_.size; ++i) {
                std::byte* slot = ring_ + (i & mask) * JAL_PACKET_SIZE;
                auto* hdr = reinterpret_cast<std::uint32_t*>(slot);
                const std::uint32_t h = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
                if ((h & 0xff) != JAL_PACKET_INVALID) {
                    std::uint64_t sig_addr;
                    std::memcpy(&sig_addr, slot + JAL_PACKET_SIGNAL_OFFSET, 8);
                    std::byte* sig;
                    if (sig_addr && resolve_signal(pin, sig_addr, sig) == JAL_STATUS_OK)
                        complete(sig, JAL_STATUS_ABORTED);
                }
                __atomic_store_n(hdr, std::uint32_t{JAL_PACKET_INVALID}, __ATOMIC_RELEASE);
            }
            __atomic_store_n(rptr_, to, __ATOMIC_RELEASE);
        }
    }
    read_.store(to);
    last_status_ = JAL_STATUS_OK;
    last_error_.store(0);
    errors_.store(0);
    err_index_.store(0);
}

}  // namespace jal::emu
