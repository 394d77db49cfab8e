// One user queue's engine: a thread that follows the queue's doorbell and executes its
// packets in order (queue.h). Configured and controlled by the command processor; see
// docs/emulator.md, "Command processor and MMU".
#pragma once

#include "emu/chip/host_memory.hpp"
#include "emu/chip/mmu.hpp"
#include "emu/cp/doorbells.hpp"
#include "emu/trace/trace_writer.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace jal::emu {

class DispatchUnit;
class HbmMemory;
class HostInterface;
class HostWindows;
class Mmu;

struct QueueConfig {
    std::uint32_t ctx = 0, fn = 0, size = 0, vector = 0;
    std::uint64_t ring = 0, rptr = 0;  // bus addresses in the function's memory
    std::uint32_t space = 0;           // the context's host space (0: the whole function)
};

// Wakes the sleeping engines of one host function (its kick eventfd, or a DISABLE).
struct FunctionWake {
    std::mutex m;
    std::condition_variable cv;
    std::uint64_t seq = 0;
    void wake()
    {
        {
            std::lock_guard lock(m);
            ++seq;
        }
        cv.notify_all();
    }
};

// Lets engines blocked in a barrier sleep until some engine writes a signal. Signals the
// host writes are seen at the next bounded poll.
class SignalNotifier {
public:
    void signalled()
    {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_relaxed)) wake_all();
    }
    void wake_all()
    {
        {
            std::lock_guard lock(m_);
            ++epoch_;
        }
        cv_.notify_all();
    }
    void wait(std::chrono::microseconds max, const std::atomic<bool>& stop)
    {
        std::unique_lock lock(m_);
        const std::uint64_t e = epoch_;
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        cv_.wait_for(lock, max,
                     [&] { return epoch_ != e || stop.load(std::memory_order_relaxed); });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }

private:
    std::atomic<std::uint32_t> sleepers_{0};
    std::mutex m_;
    std::condition_variable cv_;
    std::uint64_t epoch_ = 0;
};

class QueueEngine {
public:
    // Tunables (chosen): how long an idle engine polls its doorbell before it sleeps, how
    // long a waiting barrier spins before it sleeps, the longest such sleep, how long a slot
    // the doorbell covers may stay INVALID, and the packets executed per host-memory pin.
    static constexpr auto kDoorbellSpin = std::chrono::microseconds(40);
    static constexpr auto kPendingSpin = std::chrono::microseconds(20);
    static constexpr auto kPendingPoll = std::chrono::microseconds(100);
    static constexpr auto kSleepPoll = std::chrono::milliseconds(100);
    static constexpr unsigned kBatch = 64;

    struct Env {
        HostInterface& host;
        HbmMemory& hbm;
        Mmu& mmu;
        SignalNotifier& signals;
        DispatchUnit* dispatch = nullptr;      // runs DISPATCH packets (the CP's, never null)
        const ChipTrace* trace = nullptr;      // jal-emu --trace: each packet's wall-clock span
        const HostWindows* windows = nullptr;  // the host windows (null: no restriction)
    };
    QueueEngine(std::uint32_t qid, const Env& env);
    ~QueueEngine();
    QueueEngine(const QueueEngine&) = delete;
    QueueEngine& operator=(const QueueEngine&) = delete;

    // Starts executing (ACTIVE), or leaves the queue in ERROR when its ring or read index
    // does not lie in the function's memory. `fresh`: a new queue, so the read index, the
    // doorbell and the error record start at 0.
    void start(const QueueConfig& cfg, std::shared_ptr<Doorbells> db, FunctionWake& wake,
               bool fresh);
    // A configuration the engine cannot run (bad field, absent function): ERROR with `status`.
    void fail_config(const QueueConfig& cfg, std::uint32_t status);
    // Stops after the packet in progress (a waiting barrier or header wait is abandoned,
    // its packet stays unexecuted) and waits for the thread. State becomes DISABLED.
    void stop();
    // For a stopped queue: every packet up to the doorbell is dropped (published ones
    // complete with ABORTED), the read index jumps to the doorbell, the errors are cleared.
    void drop_unexecuted();

    bool running() const { return thread_.joinable(); }
    std::uint32_t state() const { return state_.load(std::memory_order_relaxed); }
    std::uint32_t last_error() const { return last_error_.load(std::memory_order_relaxed); }
    std::uint32_t errors() const { return errors_.load(std::memory_order_relaxed); }
    std::uint64_t read_index() const { return read_.load(std::memory_order_acquire); }
    std::uint64_t last_doorbell() const { return last_db_.load(std::memory_order_relaxed); }
    std::uint64_t error_index() const { return err_index_.load(std::memory_order_relaxed); }
    // How many times the engine found the packet at its read index waiting (a barrier's
    // dependencies, or a header not yet published); never reset. Lets a test wait until a
    // packet has been looked at rather than for a fixed time.
    std::uint64_t pending_checks() const { return pending_checks_.load(std::memory_order_acquire); }
    const QueueConfig& config() const { return cfg_; }

private:
    enum class Step { done, done_irq, pending, dispatch };

    void run();
    // run()'s two halves: idle() spins, then sleeps until the doorbell or the ring may hold
    // work (true: look at the ring even if the doorbell did not move); run_batch() executes
    // up to kBatch packets (and a DISPATCH among them) from `read`.
    struct Batch {
        bool fault = false;    // the ring or the read index is no longer mapped
        bool irq = false;      // a completed packet asked for an interrupt
        bool pending = false;  // the packet at `read` waits (barrier or unpublished header)
    };
    bool idle(HostMemory& mem, std::uint64_t read, std::uint64_t doorbell,
              std::chrono::steady_clock::time_point& last_work);
    Batch run_batch(HostMemory& mem, std::uint64_t& read, std::uint64_t& target);
    bool resolve(const HostMemory::Pin& pin);
    // The host pointer for the queue's bus range [addr, addr+len): null when it is not
    // mapped for the function or, for a context with a host space, outside its windows.
    std::byte* host(const HostMemory::Pin& pin, std::uint64_t addr, std::uint64_t len) const;
    // A signal address: OK with `out` set, INVALID_FIELD when zero or misaligned,
    // DMA_FAULT when host() refuses it.
    std::uint32_t resolve_signal(const HostMemory::Pin& pin, std::uint64_t addr,
                                 std::byte*& out) const;
    // The slot of `index` holds a published header (a producer may publish before its
    // doorbell lands, or several producers' doorbells may land out of order).
    bool published(std::uint64_t index) const;
    bool tracing() const { return env_.trace && *env_.trace; }
    static const char* packet_name(const std::byte* slot);
    // What a packet's span says beyond its name, index and context (a COPY's bytes and
    // direction: the DMA engine's work); null for the others.
    static nlohmann::json packet_args(const std::byte* slot);
    void trace_span(const char* name, std::uint64_t index, double t0,
                    nlohmann::json args = nullptr) const;
    Step execute(const HostMemory::Pin& pin, std::byte* slot, std::uint64_t index);
    // The packet kinds execute() handles, on the packet's copy `pkt` (header argument as
    // given). Each returns the packet's status; barrier_ready() says whether the barrier
    // may complete (false: its dependencies are still pending) and sets `status`.
    std::uint32_t execute_copy(const HostMemory::Pin& pin, const std::byte* pkt, std::uint16_t dir);
    bool barrier_ready(const HostMemory::Pin& pin, const std::byte* pkt, std::uint16_t deps,
                       std::uint32_t& status);
    std::uint32_t execute_signal(const HostMemory::Pin& pin, const std::byte* pkt,
                                 std::uint16_t op);
    // WRITE_VALUE and WAIT_VALUE (queue_values.cpp): device words as semaphores between
    // queues and chips. wait_value_ready() is false while the word does not compare true
    // and the packet's timeout has not passed (the clock starts at the first look at
    // `index`); then it sets `status`.
    std::uint32_t execute_write_value(const std::byte* pkt, std::uint16_t arg);
    bool wait_value_ready(const std::byte* pkt, std::uint16_t op, std::uint64_t index,
                          std::uint32_t& status);
    // Reads or writes the 8-byte word at device address `va` of the queue's context:
    // local HBM (atomically) or a peer's page over the fabric.
    std::uint32_t read_word(std::uint64_t va, std::uint64_t& out);
    std::uint32_t write_word(std::uint64_t va, std::uint64_t value);
    // Checks a DISPATCH packet's report address and sets the packet aside for run_dispatch().
    std::uint32_t accept_dispatch(const HostMemory::Pin& pin, const std::byte* pkt);
    std::uint32_t copy(const HostMemory::Pin& pin, std::uint32_t dir, std::uint64_t src,
                       std::uint64_t dst, std::uint64_t size);
    // Where a page run of a device source [va, va+n) is read from: HBM in place, or (a
    // peer's page) into `bounce` over the fabric.
    std::uint32_t copy_source(const Mmu::View& v, std::uint64_t va, std::uint64_t n,
                              std::vector<std::byte>& bounce, const std::byte*& from);
    void record_error(std::uint32_t status, std::uint64_t index);
    void complete(std::byte* signal, std::uint32_t status);
    // Runs the DISPATCH packet execute() set aside, outside any pin of host memory (a
    // kernel may run for a while), then writes its report and completes it like any
    // packet. False if the ring went away meanwhile.
    bool run_dispatch(HostMemory& mem, std::uint64_t index, bool& irq);

    const std::uint32_t qid_;
    Env env_;
    std::byte* const hbm_;
    QueueConfig cfg_;
    std::shared_ptr<Doorbells> db_;
    FunctionWake* wake_ = nullptr;
    std::thread thread_;
    std::atomic<bool> stop_{false};

    // Resolved under a pin of the function's memory; valid while its generation holds.
    std::byte* ring_ = nullptr;
    std::uint64_t* rptr_ = nullptr;
    std::uint64_t ring_gen_ = 0;
    // The status of the last packet completed (JAL_PACKET_F_CHAIN), and since when the
    // WAIT_VALUE at `wait_index_` has been waiting; engine thread only.
    std::uint32_t last_status_ = 0;
    std::uint64_t wait_index_ = ~std::uint64_t{0};
    std::chrono::steady_clock::time_point wait_since_{};
    // A DISPATCH packet execute() accepted, run by run_dispatch() once the pin is released.
    alignas(8) std::byte dispatch_pkt_[JAL_PACKET_SIZE]{};

    std::atomic<std::uint32_t> state_;
    std::atomic<std::uint32_t> last_error_{0}, errors_{0};
    std::atomic<std::uint64_t> read_{0}, last_db_{0}, err_index_{0}, pending_checks_{0};
};

}  // namespace jal::emu
