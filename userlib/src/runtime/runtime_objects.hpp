// libjal's runtime objects above the device layer: the device as the runtime uses it,
// contexts, device memory, pinned host buffers, user queues and signals. Backend-agnostic:
// everything device-specific goes through jal::ChipFunction's admin queue and backend::Backend.
// The C API (jal.h) is a thin layer over these classes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <jal/chip_function.hpp>
#include <jal/hw/admin.h>
#include <jal/hw/queue.h>

#include "../backend/backend.hpp"
#include "../device/chip_function_impl.hpp"
#include "dispatch_times.hpp"
#include "irq_hub.hpp"
#include "profiler.hpp"
#include "ring.hpp"
#include "signal.hpp"

namespace jal::runtime::detail {

// Where library diagnostics (leak reports) go; default stderr.
void log_message(int level, const std::string& message);
using LogHandler = std::function<void(int level, const std::string& message)>;
void set_log_handler(LogHandler handler);

class DeviceCore {
public:
    explicit DeviceCore(ChipFunction device);
    ~DeviceCore();

    ChipFunction& device() { return device_; }
    ChipFunction::Impl& impl() { return device_.impl(); }
    backend::Backend& backend() { return impl().backend(); }
    unsigned index() const { return index_; }

    // An admin command; throws (with the "device N: " prefix) on an error completion.
    ChipFunction::Impl::Reply admin(uint8_t opcode, std::initializer_list<uint32_t> cdw,
                                    uint32_t data_len = 0);
    // Prefixes any jal::Error thrown by `f` with "device N: ".
    template <typename F>
    auto guarded(F&& f) -> decltype(f())
    {
        return impl().guarded(std::forward<F>(f));
    }

    SignalPool& signals() { return signals_; }
    IrqHub& irq() { return irq_; }
    TimesPool& times() { return times_; }
    Profiler& profiler() { return profiler_; }
    backend::DoorbellMapping& doorbells();  // mapped on first use

    // Device loss: every handle belongs to the reset generation (JAL_REG_RESET_GENERATION)
    // the device was opened in. Once the chip was reset they all fail with DEVICE_RESET.
    // Reads the register (one round trip); once a reset is seen the answer is sticky.
    bool was_reset();
    // Throws DEVICE_RESET (prefixed "device N: ") if was_reset().
    void check_not_reset();
    // The same for paths that must stay cheap (submissions, signal loads): the register is
    // read at most every kResetRecheck; in between only a reset already seen counts.
    void check_not_reset_cached();
    static constexpr std::chrono::milliseconds kResetRecheck{10};

private:
    ChipFunction device_;
    unsigned index_;
    uint32_t generation_ = 0;
    std::atomic<bool> reset_seen_{false};
    std::atomic<uint32_t> seen_generation_{0};
    std::atomic<int64_t> next_check_ns_{0};
    SignalPool signals_;
    IrqHub irq_;
    TimesPool times_;    // before profiler_: its records go back here
    Profiler profiler_;  // after irq_, which its thread sleeps on
    std::mutex doorbell_mutex_;
    std::shared_ptr<backend::DoorbellMapping> doorbells_;
};

class Context {
public:
    explicit Context(std::shared_ptr<DeviceCore> device);
    ~Context();

    uint32_t id() const { return id_; }
    DeviceCore& device() { return *device_; }
    const std::shared_ptr<DeviceCore>& device_ptr() const { return device_; }
    bool alive() const { return alive_.load(); }

    struct Leaks {
        uint32_t allocations = 0;
        uint32_t queues = 0;
        uint32_t device_reported = 0;  // what DESTROY_CONTEXT said it still held
    };
    // Destroys the context on the device, logging every allocation and queue it still
    // held (the device frees them). Later calls do nothing.
    Leaks destroy();

    // Bookkeeping of what lives in the context, for the leak report.
    void track_allocation(uint64_t va, uint64_t size);
    void untrack_allocation(uint64_t va);
    void track_queue(uint32_t id, uint32_t size);
    void untrack_queue(uint32_t id);

    // Serialises device-side teardown of children with destroy().
    std::mutex& lifecycle_mutex() { return lifecycle_; }

private:
    std::shared_ptr<DeviceCore> device_;
    uint32_t id_ = 0;
    std::atomic<bool> alive_{false};
    std::mutex lifecycle_;
    std::mutex mutex_;                          // the maps
    std::map<uint64_t, uint64_t> allocations_;  // va -> size
    std::map<uint32_t, uint32_t> queues_;       // id -> packets
};

struct PlacementRequest {
    // enum jal_placement, kept as an integer: a caller's unknown value must reach the device
    // (which refuses it with INVALID_FIELD) without first being an invalid enum value.
    uint32_t kind = JAL_PLACE_SLICE;
    uint64_t slice_mask = 1;  // logical slices
    uint64_t alignment = 0;   // bytes, a power of two; 0: the device page
};

class Allocation {
public:
    Allocation(std::shared_ptr<Context> context, uint64_t bytes, const PlacementRequest& placement);
    // Maps a peer chip's export in the context (IMPORT_PEER); freeing it unmaps it.
    Allocation(std::shared_ptr<Context> context, const jal_mem_export_reply& exported);
    ~Allocation();

    const jal_mem_alloc_reply& info() const { return info_; }
    uint64_t va() const { return info_.va; }
    Context& context() { return *context_; }
    // Physical placement of pages from `first_page` on: pages x replicas entries,
    // page-major, at most `max_entries`.
    std::vector<jal_page_placement> placement(uint32_t first_page, size_t max_entries);
    // Frees it on the device (nothing to do if its context was destroyed first).
    void free();
    // Publishes [offset, offset + size) of it for peer chips (EXPORT_MEMORY).
    jal_mem_export_reply export_range(uint64_t offset, uint64_t size);

private:
    std::shared_ptr<Context> context_;
    jal_mem_alloc_reply info_{};
    bool freed_ = false;
};

class HostBuffer {
public:
    HostBuffer(std::shared_ptr<DeviceCore> device, size_t bytes);
    std::byte* data() { return memory_->data(); }
    uint64_t bus_addr() const { return memory_->bus_addr(); }
    size_t size() const { return size_; }
    DeviceCore& device() { return *device_; }

private:
    std::shared_ptr<DeviceCore> device_;
    std::unique_ptr<backend::HostMemory> memory_;
    size_t size_;
};

class Signal {
public:
    // timestamps: dispatches it completes record their device times for it (times()).
    Signal(std::shared_ptr<DeviceCore> device, int64_t initial, bool interrupt,
           bool timestamps = false);
    ~Signal();
    Signal(const Signal&) = delete;
    Signal& operator=(const Signal&) = delete;

    jal_signal* slot() { return slot_.host; }
    uint64_t bus_addr() const { return slot_.bus_addr; }
    bool interrupt() const { return interrupt_; }
    DeviceCore& device() { return *device_; }

    SignalObservation load() const { return load_signal(slot_.host); }
    void store(int64_t value) { store_signal(slot_.host, value); }
    SignalObservation wait(const WaitOptions& options);

    bool timestamps() const { return timestamps_; }
    // The record of the latest dispatch submitted with this signal as its completion.
    void set_last_times(std::shared_ptr<TimesRecord> record);
    std::shared_ptr<TimesRecord> last_times() const;

private:
    std::shared_ptr<DeviceCore> device_;
    SignalPool::Slot slot_;
    bool interrupt_;
    bool timestamps_;
    mutable std::mutex times_mutex_;
    std::shared_ptr<TimesRecord> last_times_;
};

class UserQueue {
public:
    // `vector`: the MSI-X vector its interrupting packets raise (1..15); 0 picks one.
    UserQueue(std::shared_ptr<Context> context, uint32_t size, uint32_t vector);
    ~UserQueue();

    uint32_t id() const { return id_; }
    uint32_t vector() const { return vector_; }
    uint32_t size() const { return ring_->size(); }
    Context& context() { return *context_; }
    QueueRing& ring() { return *ring_; }

    // Packets. `completion` may be null. Each returns the packet's index. `packet_flags`:
    // JAL_PACKET_F_CHAIN (run only if the packet before completed OK), or 0.
    uint64_t nop(Signal* completion, uint8_t packet_flags = 0);
    uint64_t copy(jal_copy_dir dir, uint64_t dst, uint64_t src, uint64_t bytes, Signal* completion,
                  uint8_t packet_flags = 0);
    uint64_t barrier_and(std::span<Signal* const> deps, Signal* completion);
    uint64_t signal(Signal& target, jal_signal_op op, int64_t operand, Signal* completion);
    // A kernel dispatch: body fields of jal_packet_dispatch, flags JAL_DISPATCH_F_* (in the
    // header's arg). The device validates the code object and the slice mask.
    // `interrupt`: raise the queue's vector at completion even if `completion` does not
    // ask for it (the profiler sleeps on it).
    uint64_t dispatch(uint16_t flags, const jal_packet_dispatch& body, Signal* completion,
                      bool interrupt = false, uint8_t packet_flags = 0);
    // WRITE_VALUE and WAIT_VALUE (interface 1.9): a device word as a semaphore.
    uint64_t write_value(uint64_t va, uint64_t value, Signal* completion, uint8_t packet_flags = 0);
    uint64_t wait_value(uint64_t va, jal_value_op op, uint64_t value, uint32_t timeout_us,
                        Signal* completion, uint8_t packet_flags = 0);
    // A packet exactly as given (header in bytes 0..3, published last); for tests and
    // packet kinds the library does not wrap yet.
    uint64_t submit_raw(const void* packet);

    struct jal_queue_status status();
    // Drops unexecuted packets and clears the error (RESET_QUEUE); no producer may be
    // submitting meanwhile.
    void reset();
    void destroy();

    void set_submit_timeout(std::chrono::nanoseconds t) { submit_timeout_ = t; }

private:
    uint64_t submit(void* packet, uint8_t type, uint16_t arg, Signal* completion,
                    Signal* also_interrupting = nullptr, bool interrupt = false,
                    uint8_t packet_flags = 0);
    void check_signal(const Signal* signal, const char* what) const;

    std::shared_ptr<Context> context_;
    std::unique_ptr<backend::HostMemory> memory_;  // ring, then the read index
    std::unique_ptr<QueueRing> ring_;
    uint32_t id_ = 0;
    uint32_t vector_ = 0;
    bool destroyed_ = true;
    std::chrono::nanoseconds submit_timeout_ = std::chrono::nanoseconds::max();
};

}  // namespace jal::runtime::detail
