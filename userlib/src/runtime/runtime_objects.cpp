#include "runtime_objects.hpp"

#include <bit>
#include <cstdio>
#include <cstring>

#include <jal/error.hpp>
#include <jal/hw/pci.h>

namespace jal::runtime::detail {

// ---- logging ----

namespace {

std::mutex log_mutex;
LogHandler log_handler;

uint32_t lo(uint64_t v)
{
    return static_cast<uint32_t>(v);
}
uint32_t hi(uint64_t v)
{
    return static_cast<uint32_t>(v >> 32);
}

std::string hex(uint64_t v)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace

void log_message(int level, const std::string& message)
{
    std::lock_guard lock(log_mutex);
    if (log_handler)
        log_handler(level, message);
    else
        std::fprintf(stderr, "libjal: %s\n", message.c_str());
}

void set_log_handler(LogHandler handler)
{
    std::lock_guard lock(log_mutex);
    log_handler = std::move(handler);
}

// ---- DeviceCore ----

DeviceCore::DeviceCore(ChipFunction device)
    : device_(std::move(device)), index_(device_.index()), signals_(backend()), irq_(backend()),
      times_(backend()), profiler_(irq_)
{
    generation_ = guarded([&] { return impl().read_reset_generation(); });
    seen_generation_ = generation_;
    impl().pin_reset_generation(generation_);
}

bool DeviceCore::was_reset()
{
    if (reset_seen_.load(std::memory_order_acquire)) return true;
    uint32_t now = guarded([&] { return impl().read_reset_generation(); });
    if (now == generation_) return false;
    seen_generation_ = now;
    reset_seen_.store(true, std::memory_order_release);
    return true;
}

void DeviceCore::check_not_reset()
{
    if (!was_reset()) return;
    Error e = ChipFunction::Impl::reset_error(generation_, seen_generation_.load());
    throw Error(e.status(), "device " + std::to_string(index_) + ": " + e.what());
}

void DeviceCore::check_not_reset_cached()
{
    using namespace std::chrono;
    int64_t now = duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
    int64_t next = next_check_ns_.load(std::memory_order_relaxed);
    if (!reset_seen_.load(std::memory_order_acquire) && now < next) return;
    if (now >= next)
        next_check_ns_.store(now + duration_cast<nanoseconds>(kResetRecheck).count(),
                             std::memory_order_relaxed);
    check_not_reset();
}

DeviceCore::~DeviceCore() = default;

ChipFunction::Impl::Reply DeviceCore::admin(uint8_t opcode, std::initializer_list<uint32_t> cdw,
                                            uint32_t data_len)
{
    // The admin queue refuses a new generation itself (pinned); a command lost to a reset
    // in flight comes back as DEVICE_RESET. Either way, remember it for the cheap checks.
    try {
        return guarded([&] { return impl().run(opcode, cdw, data_len); });
    } catch (const Error& e) {
        if (e.status() == JAL_STATUS_DEVICE_RESET) (void)was_reset();
        throw;
    }
}

backend::DoorbellMapping& DeviceCore::doorbells()
{
    std::lock_guard lock(doorbell_mutex_);
    if (!doorbells_) doorbells_ = guarded([&] { return backend().map_doorbells(); });
    return *doorbells_;
}

// ---- Context ----

Context::Context(std::shared_ptr<DeviceCore> device) : device_(std::move(device))
{
    id_ = device_->admin(JAL_ADMIN_CREATE_CONTEXT, {}).completion.result;
    alive_ = true;
}

Context::~Context()
{
    if (alive_) {
        try {
            destroy();
        } catch (const Error& e) {
            log_message(2, std::string("context teardown failed: ") + e.what());
        }
    }
}

Context::Leaks Context::destroy()
{
    std::lock_guard lifecycle(lifecycle_);
    Leaks leaks;
    if (!alive_) return leaks;
    std::unique_lock lock(mutex_);
    leaks.allocations = static_cast<uint32_t>(allocations_.size());
    leaks.queues = static_cast<uint32_t>(queues_.size());
    std::string where =
        "device " + std::to_string(device_->index()) + " context " + std::to_string(id_);
    for (auto& [va, size] : allocations_)
        log_message(1, where + ": leaked allocation va " + hex(va) + ", " + std::to_string(size) +
                           " bytes");
    for (auto& [id, size] : queues_)
        log_message(1, where + ": leaked queue " + std::to_string(id) + " (" +
                           std::to_string(size) + " packets)");
    alive_ = false;
    allocations_.clear();
    queues_.clear();
    lock.unlock();
    // The reset took the context and everything in it: nothing left on the device.
    if (device_->was_reset()) return leaks;
    leaks.device_reported = device_->admin(JAL_ADMIN_DESTROY_CONTEXT, {id_}).completion.result;
    if (leaks.device_reported != leaks.allocations + leaks.queues)
        log_message(1, where + ": the device reported " + std::to_string(leaks.device_reported) +
                           " allocations and queues left, the library knew of " +
                           std::to_string(leaks.allocations + leaks.queues));
    return leaks;
}

void Context::track_allocation(uint64_t va, uint64_t size)
{
    std::lock_guard lock(mutex_);
    allocations_[va] = size;
}

void Context::untrack_allocation(uint64_t va)
{
    std::lock_guard lock(mutex_);
    allocations_.erase(va);
}

void Context::track_queue(uint32_t id, uint32_t size)
{
    std::lock_guard lock(mutex_);
    queues_[id] = size;
}

void Context::untrack_queue(uint32_t id)
{
    std::lock_guard lock(mutex_);
    queues_.erase(id);
}

// ---- Allocation ----

Allocation::Allocation(std::shared_ptr<Context> context, uint64_t bytes, const PlacementRequest& p)
    : context_(std::move(context))
{
    if (!context_->alive()) throw Error(JAL_STATUS_INVALID_FIELD, "context was destroyed");
    if (bytes == 0) throw Error(JAL_STATUS_INVALID_LENGTH, "cannot allocate 0 bytes");
    uint32_t align_log2 = 0;  // the device page (2 MiB) is the least alignment
    if (p.alignment > JAL_PAGE_SIZE) {
        if (!std::has_single_bit(p.alignment))
            throw Error(JAL_STATUS_INVALID_FIELD,
                        "alignment " + std::to_string(p.alignment) + " is not a power of two");
        align_log2 = static_cast<uint32_t>(std::countr_zero(p.alignment));
    }
    auto reply = context_->device().admin(JAL_ADMIN_ALLOC_MEMORY,
                                          {context_->id(), lo(bytes), hi(bytes), p.kind,
                                           lo(p.slice_mask), hi(p.slice_mask), align_log2},
                                          sizeof(jal_mem_alloc_reply));
    info_ = copy_struct<jal_mem_alloc_reply>(reply.data);
    context_->track_allocation(info_.va, info_.size);
}

Allocation::Allocation(std::shared_ptr<Context> context, const jal_mem_export_reply& e)
    : context_(std::move(context))
{
    if (!context_->alive()) throw Error(JAL_STATUS_INVALID_FIELD, "context was destroyed");
    if (e.pages == 0 || e.pages > JAL_EXPORT_MAX_PAGES || e.handle >= JAL_MAX_EXPORTS)
        throw Error(JAL_STATUS_INVALID_FIELD, "not an export: handle " + std::to_string(e.handle) +
                                                  ", " + std::to_string(e.pages) + " pages");
    if (e.chip == ~0u)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "the exporting chip is in no fabric domain (jal-emu --domain FILE)");
    auto reply = context_->device().admin(
        JAL_ADMIN_IMPORT_PEER, {context_->id(), e.chip, e.handle, lo(e.key), hi(e.key), e.pages},
        sizeof(jal_mem_alloc_reply));
    info_ = copy_struct<jal_mem_alloc_reply>(reply.data);
    context_->track_allocation(info_.va, info_.size);
}

jal_mem_export_reply Allocation::export_range(uint64_t offset, uint64_t size)
{
    if (info_.placement == JAL_PLACE_PEER)
        throw Error(JAL_STATUS_INVALID_FIELD, "a peer's memory cannot be exported again");
    if (size == 0) throw Error(JAL_STATUS_INVALID_LENGTH, "cannot export 0 bytes");
    if (offset % JAL_PAGE_SIZE)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "offset " + std::to_string(offset) + " is not a multiple of the 2 MiB page");
    if (offset >= info_.size || size > info_.size - offset)
        throw Error(JAL_STATUS_OUT_OF_RANGE,
                    "[" + std::to_string(offset) + ", +" + std::to_string(size) +
                        ") is outside the allocation of " + std::to_string(info_.size) + " bytes");
    const uint64_t va = info_.va + offset;
    auto reply = context_->device().admin(JAL_ADMIN_EXPORT_MEMORY,
                                          {context_->id(), lo(va), hi(va), lo(size), hi(size)},
                                          sizeof(jal_mem_export_reply));
    return copy_struct<jal_mem_export_reply>(reply.data);
}

Allocation::~Allocation()
{
    if (freed_) return;
    try {
        free();
    } catch (const Error& e) {
        log_message(2, std::string("freeing device memory failed: ") + e.what());
    }
}

std::vector<jal_page_placement> Allocation::placement(uint32_t first_page, size_t max_entries)
{
    std::vector<jal_page_placement> out;
    constexpr size_t kPerCommand =
        (JAL_ADMIN_DATA_MAX - sizeof(jal_placement_header)) / sizeof(jal_page_placement);
    uint32_t page = first_page;
    while (out.size() < max_entries && page < info_.pages) {
        size_t want = std::min(kPerCommand, max_entries - out.size());
        uint32_t len =
            static_cast<uint32_t>(sizeof(jal_placement_header) + want * sizeof(jal_page_placement));
        auto reply = context_->device().admin(
            JAL_ADMIN_GET_PLACEMENT, {context_->id(), lo(info_.va), hi(info_.va), page}, len);
        auto header = copy_struct<jal_placement_header>(reply.data);
        size_t fits = (std::min<size_t>(reply.completion.result, len) -
                       std::min<size_t>(reply.completion.result, sizeof header)) /
                      sizeof(jal_page_placement);
        size_t n = std::min<size_t>({header.count, fits, max_entries - out.size()});
        if (n == 0) break;
        for (size_t i = 0; i < n; i++)
            out.push_back(copy_struct<jal_page_placement>(
                reply.data, sizeof header + i * sizeof(jal_page_placement)));
        uint32_t replicas = std::max<uint32_t>(header.replicas, 1);
        page += static_cast<uint32_t>((n + replicas - 1) / replicas);
    }
    return out;
}

void Allocation::free()
{
    std::lock_guard lock(context_->lifecycle_mutex());
    if (freed_) return;
    freed_ = true;
    if (!context_->alive()) return;  // the device freed it with the context
    // A reset freed it with everything else.
    if (!context_->device().was_reset())
        context_->device().admin(JAL_ADMIN_FREE_MEMORY,
                                 {context_->id(), lo(info_.va), hi(info_.va)});
    context_->untrack_allocation(info_.va);
}

// ---- HostBuffer ----

HostBuffer::HostBuffer(std::shared_ptr<DeviceCore> device, size_t bytes)
    : device_(std::move(device)), size_(bytes)
{
    if (bytes == 0) throw Error(JAL_STATUS_INVALID_LENGTH, "cannot allocate a 0-byte host buffer");
    device_->check_not_reset_cached();
    memory_ = device_->guarded([&] { return device_->backend().share_host_memory(bytes); });
}

// ---- Signal ----

Signal::Signal(std::shared_ptr<DeviceCore> device, int64_t initial, bool interrupt, bool timestamps)
    : device_(std::move(device)), interrupt_(interrupt), timestamps_(timestamps)
{
    device_->check_not_reset_cached();
    slot_ = device_->guarded([&] { return device_->signals().allocate(); });
    store_signal(slot_.host, initial);
    if (interrupt_) device_->guarded([&] { device_->irq().ensure_bound(); });
}

Signal::~Signal()
{
    device_->signals().release(slot_);
}

void Signal::set_last_times(std::shared_ptr<TimesRecord> record)
{
    std::lock_guard lock(times_mutex_);
    last_times_ = std::move(record);
}

std::shared_ptr<TimesRecord> Signal::last_times() const
{
    std::lock_guard lock(times_mutex_);
    return last_times_;
}

SignalObservation Signal::wait(const WaitOptions& options)
{
    if (options.mode != WaitMode::poll && !interrupt_)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "interrupt and hybrid waits need a signal created with "
                    "JAL_SIGNAL_INTERRUPT (its completions raise no interrupt)");
    device_->check_not_reset_cached();
    return wait_signal(slot_.host, options, &device_->irq(),
                       [this] { device_->check_not_reset_cached(); });
}

// ---- UserQueue ----

namespace {
std::atomic<uint32_t> next_vector{0};
constexpr uint32_t kQueueVectors = JAL_MSIX_VECTORS - JAL_MSIX_VECTOR_QUEUE_FIRST;
}  // namespace

UserQueue::UserQueue(std::shared_ptr<Context> context, uint32_t size, uint32_t vector)
    : context_(std::move(context))
{
    if (!context_->alive()) throw Error(JAL_STATUS_INVALID_FIELD, "context was destroyed");
    if (!ring_index::valid_size(size))
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "queue size " + std::to_string(size) + " is not a power of two in 16..65536");
    if (vector == 0)
        vector = JAL_MSIX_VECTOR_QUEUE_FIRST + next_vector.fetch_add(1) % kQueueVectors;
    if (vector < JAL_MSIX_VECTOR_QUEUE_FIRST || vector >= JAL_MSIX_VECTORS)
        throw Error(JAL_STATUS_OUT_OF_RANGE, "MSI-X vector " + std::to_string(vector) +
                                                 " is not a user-queue vector (1..15)");
    vector_ = vector;
    DeviceCore& dev = context_->device();
    size_t ring_bytes = size_t{size} * JAL_PACKET_SIZE;
    memory_ = dev.guarded([&] { return dev.backend().share_host_memory(ring_bytes + 4096); });
    auto* read_index = reinterpret_cast<uint64_t*>(memory_->data() + ring_bytes);
    uint64_t ring_bus = memory_->bus_addr(), rptr_bus = memory_->bus_addr() + ring_bytes;
    backend::DoorbellMapping& doorbells = dev.doorbells();
    dev.irq().ensure_bound();
    id_ = dev.admin(JAL_ADMIN_CREATE_QUEUE, {context_->id(), lo(ring_bus), hi(ring_bus), size,
                                             lo(rptr_bus), hi(rptr_bus), vector})
              .completion.result;
    destroyed_ = false;
    std::byte* doorbell = dev.guarded([&] { return doorbells.page(id_); });
    ring_ = std::make_unique<QueueRing>(memory_->data(), size, read_index, doorbell,
                                        [&doorbells] { doorbells.kick(); });
    ring_->set_full_check([&dev] { dev.check_not_reset(); });
    context_->track_queue(id_, size);
}

UserQueue::~UserQueue()
{
    try {
        destroy();
    } catch (const Error& e) {
        log_message(2, std::string("destroying a queue failed: ") + e.what());
        // The device may still read the ring: keep it mapped for the device's lifetime.
        (void)memory_.release();
    }
}

void UserQueue::destroy()
{
    std::lock_guard lock(context_->lifecycle_mutex());
    if (destroyed_) return;
    destroyed_ = true;
    if (!context_->alive()) return;
    // After a reset the device no longer knows the queue (nor reads its ring).
    if (!context_->device().was_reset()) context_->device().admin(JAL_ADMIN_DESTROY_QUEUE, {id_});
    context_->untrack_queue(id_);
}

void UserQueue::check_signal(const Signal* signal, const char* what) const
{
    if (signal && &const_cast<Signal*>(signal)->device() != &context_->device())
        throw Error(JAL_STATUS_INVALID_FIELD, std::string(what) + " belongs to another device");
}

uint64_t UserQueue::submit(void* packet, uint8_t type, uint16_t arg, Signal* completion,
                           Signal* also_interrupting, bool interrupt, uint8_t packet_flags)
{
    if (packet_flags & ~uint8_t{JAL_PACKET_F_CHAIN})
        throw Error(JAL_STATUS_INVALID_FIELD, "packet flags other than JAL_PACKET_F_CHAIN");
    if (destroyed_) throw Error(JAL_STATUS_NOT_READY, "queue was destroyed");
    context_->device().check_not_reset_cached();
    check_signal(completion, "the completion signal");
    interrupt = interrupt || (completion && completion->interrupt()) ||
                (also_interrupting && also_interrupting->interrupt());
    jal_packet_header header{
        type, static_cast<uint8_t>((interrupt ? JAL_PACKET_F_INTERRUPT : 0) | packet_flags), arg};
    std::memcpy(packet, &header, sizeof header);
    uint64_t signal = completion ? completion->bus_addr() : 0;
    std::memcpy(static_cast<std::byte*>(packet) + JAL_PACKET_SIGNAL_OFFSET, &signal, sizeof signal);
    return context_->device().guarded([&] { return ring_->submit(packet, submit_timeout_); });
}

uint64_t UserQueue::nop(Signal* completion, uint8_t packet_flags)
{
    jal_packet_nop p{};
    return submit(&p, JAL_PACKET_NOP, 0, completion, nullptr, false, packet_flags);
}

uint64_t UserQueue::copy(jal_copy_dir dir, uint64_t dst, uint64_t src, uint64_t bytes,
                         Signal* completion, uint8_t packet_flags)
{
    jal_packet_copy p{};
    p.src = src;
    p.dst = dst;
    p.size = bytes;
    return submit(&p, JAL_PACKET_COPY, static_cast<uint16_t>(dir), completion, nullptr, false,
                  packet_flags);
}

uint64_t UserQueue::barrier_and(std::span<Signal* const> deps, Signal* completion)
{
    if (deps.empty() || deps.size() > JAL_BARRIER_DEPS_MAX)
        throw Error(JAL_STATUS_INVALID_FIELD, "a barrier waits for 1.." +
                                                  std::to_string(JAL_BARRIER_DEPS_MAX) +
                                                  " signals, not " + std::to_string(deps.size()));
    jal_packet_barrier_and p{};
    for (size_t i = 0; i < deps.size(); i++) {
        if (!deps[i])
            throw Error(JAL_STATUS_INVALID_FIELD,
                        "barrier dependency " + std::to_string(i) + " is null");
        check_signal(deps[i], "a barrier dependency");
        p.dep_signal[i] = deps[i]->bus_addr();
    }
    return submit(&p, JAL_PACKET_BARRIER_AND, static_cast<uint16_t>(deps.size()), completion);
}

uint64_t UserQueue::signal(Signal& target, jal_signal_op op, int64_t operand, Signal* completion)
{
    check_signal(&target, "the target signal");
    jal_packet_signal p{};
    p.signal = target.bus_addr();
    p.operand = operand;
    return submit(&p, JAL_PACKET_SIGNAL, static_cast<uint16_t>(op), completion, &target);
}

uint64_t UserQueue::dispatch(uint16_t flags, const jal_packet_dispatch& body, Signal* completion,
                             bool interrupt, uint8_t packet_flags)
{
    jal_packet_dispatch p = body;  // header and completion signal are submit()'s
    return submit(&p, JAL_PACKET_DISPATCH, flags, completion, nullptr, interrupt, packet_flags);
}

uint64_t UserQueue::write_value(uint64_t va, uint64_t value, Signal* completion,
                                uint8_t packet_flags)
{
    if (va % 8) throw Error(JAL_STATUS_INVALID_FIELD, "a value's address must be 8-byte aligned");
    jal_packet_value p{};
    p.addr = va;
    p.value = value;
    return submit(&p, JAL_PACKET_WRITE_VALUE, 0, completion, nullptr, false, packet_flags);
}

uint64_t UserQueue::wait_value(uint64_t va, jal_value_op op, uint64_t value, uint32_t timeout_us,
                               Signal* completion, uint8_t packet_flags)
{
    if (va % 8) throw Error(JAL_STATUS_INVALID_FIELD, "a value's address must be 8-byte aligned");
    if (op < JAL_VALUE_GE || op > JAL_VALUE_NE)
        throw Error(JAL_STATUS_INVALID_FIELD, "unknown wait op " + std::to_string(op));
    jal_packet_value p{};
    p.timeout_us = timeout_us;
    p.addr = va;
    p.value = value;
    return submit(&p, JAL_PACKET_WAIT_VALUE, static_cast<uint16_t>(op), completion, nullptr, false,
                  packet_flags);
}

uint64_t UserQueue::submit_raw(const void* packet)
{
    if (destroyed_) throw Error(JAL_STATUS_NOT_READY, "queue was destroyed");
    context_->device().check_not_reset_cached();
    return context_->device().guarded([&] { return ring_->submit(packet, submit_timeout_); });
}

struct jal_queue_status UserQueue::status()
{
    auto reply = context_->device().admin(JAL_ADMIN_QUEUE_STATUS, {id_}, sizeof(jal_queue_status));
    return copy_struct<jal_queue_status>(reply.data);
}

void UserQueue::reset()
{
    context_->device().admin(JAL_ADMIN_RESET_QUEUE, {id_});
    ring_->clear_slots();
    ring_->fill_holes();
}

}  // namespace jal::runtime::detail
