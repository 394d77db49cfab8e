#include "kmd_admin_shim.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <unistd.h>

#include <uapi/jal_accel.h>

#include <jal/hw/pci.h>
#include <jal/hw/regs.h>
#include <jal/hw/status.h>

namespace jal::kmd {

namespace {

uint64_t lohi(uint32_t lo, uint32_t hi)
{
    return uint64_t{hi} << 32 | lo;
}

// The smallest data buffer each command needs, as the firmware checks it.
uint32_t min_data_len(uint8_t opcode)
{
    switch (opcode) {
    case JAL_ADMIN_ALLOC_MEMORY:
        return sizeof(jal_mem_alloc_reply);
    default:
        return 0;
    }
}

}  // namespace

KmdAdminShim::KmdAdminShim(std::shared_ptr<const KmdFile> file,
                           std::shared_ptr<BusRegistry> registry)
    : file_(std::move(file)), registry_(std::move(registry))
{}

void KmdAdminShim::bind_admin_irq(int eventfd)
{
    std::lock_guard lock(mutex_);
    admin_eventfd_ = eventfd;
}

void KmdAdminShim::set_doorbells(std::weak_ptr<KmdDoorbells> doorbells)
{
    std::lock_guard lock(mutex_);
    doorbells_ = std::move(doorbells);
}

// The admin registers that only hold what was written (or what the shim set); nullptr for
// the others.
uint32_t* KmdAdminShim::plain_register(uint32_t offset)
{
    switch (offset) {
    case JAL_REG_ADMIN_SQ_BASE_LO:
        return &sq_lo_;
    case JAL_REG_ADMIN_SQ_BASE_HI:
        return &sq_hi_;
    case JAL_REG_ADMIN_CQ_BASE_LO:
        return &cq_lo_;
    case JAL_REG_ADMIN_CQ_BASE_HI:
        return &cq_hi_;
    case JAL_REG_ADMIN_QSIZE:
        return &qsize_;
    case JAL_REG_ADMIN_CQ_HEAD:
        return &cq_head_;
    case JAL_REG_INTR_MASK:
        return &intr_mask_;
    default:
        return nullptr;
    }
}

bool KmdAdminShim::read(uint32_t offset, uint32_t& value)
{
    std::lock_guard lock(mutex_);
    if (uint32_t* reg = plain_register(offset)) {
        value = *reg;
        return true;
    }
    switch (offset) {
    case JAL_REG_ADMIN_CTRL:
        value = ctrl_;
        return true;
    case JAL_REG_ADMIN_STATUS:
        value = status_;
        return true;
    case JAL_REG_ADMIN_SQ_TAIL:
        value = sq_tail_;
        return true;
    case JAL_REG_RESET:
        value = 0;
        return true;
    default:
        return false;
    }
}

bool KmdAdminShim::write(uint32_t offset, uint32_t value)
{
    std::lock_guard lock(mutex_);
    if (uint32_t* reg = plain_register(offset)) {
        *reg = value;
        return true;
    }
    switch (offset) {
    case JAL_REG_ADMIN_CTRL:
        ctrl_ = value & JAL_ADMIN_CTRL_ENABLE;
        if (ctrl_)
            enable_locked();
        else
            status_ = 0;
        return true;
    case JAL_REG_ADMIN_SQ_TAIL:
        sq_tail_ = value;
        if (status_ & JAL_ADMIN_STATUS_READY) process_locked();
        return true;
    case JAL_REG_RESET:
        if (value == JAL_RESET_MAGIC) chip_reset_locked(false, nullptr);
        return true;
    default:
        return false;
    }
}

// The checks the firmware makes when a queue is enabled.
void KmdAdminShim::enable_locked()
{
    uint32_t sq_entries = qsize_ & 0xffff, cq_entries = qsize_ >> 16;
    uint64_t sq = lohi(sq_lo_, sq_hi_), cq = lohi(cq_lo_, cq_hi_);
    jal_status why = JAL_STATUS_OK;
    if (sq_entries < JAL_ADMIN_QSIZE_MIN || sq_entries > JAL_ADMIN_QSIZE_MAX ||
        cq_entries < JAL_ADMIN_QSIZE_MIN || cq_entries > JAL_ADMIN_QSIZE_MAX || sq % 64 ||
        cq % 16 || !sq || !cq)
        why = JAL_STATUS_INVALID_FIELD;
    else if (!registry_->find(sq, size_t{sq_entries} * sizeof(jal_admin_sqe)) ||
             !registry_->find(cq, size_t{cq_entries} * sizeof(jal_admin_cqe)))
        why = JAL_STATUS_DMA_FAULT;
    if (why != JAL_STATUS_OK) {
        status_ = JAL_ADMIN_STATUS_ERROR | uint32_t{why} << 16;
        return;
    }
    sq_head_ = 0;
    cq_tail_ = 0;
    phase_ = 1;
    status_ = JAL_ADMIN_STATUS_READY;
}

void KmdAdminShim::process_locked()
{
    uint32_t sq_entries = qsize_ & 0xffff, cq_entries = qsize_ >> 16;
    auto* sq = reinterpret_cast<jal_admin_sqe*>(
        registry_->find(lohi(sq_lo_, sq_hi_), sq_entries * sizeof(jal_admin_sqe)));
    auto* cq = reinterpret_cast<jal_admin_cqe*>(
        registry_->find(lohi(cq_lo_, cq_hi_), cq_entries * sizeof(jal_admin_cqe)));
    if (!sq || !cq) {
        status_ = JAL_ADMIN_STATUS_ERROR | uint32_t{JAL_STATUS_DMA_FAULT} << 16;
        return;
    }
    bool completed = false;
    while (sq_head_ != sq_tail_ % sq_entries && (status_ & JAL_ADMIN_STATUS_READY)) {
        jal_admin_sqe sqe = sq[sq_head_];
        sq_head_ = static_cast<uint16_t>((sq_head_ + 1) % sq_entries);
        jal_admin_cqe cqe = execute(sqe);
        cqe.cid = sqe.cid;
        cqe.sq_head = sq_head_;
        cqe.flags = 0;
        // The body first, the phase last (release): the reader checks the phase.
        jal_admin_cqe* slot = &cq[cq_tail_];
        std::memcpy(slot, &cqe, offsetof(jal_admin_cqe, flags));
        std::atomic_ref<uint16_t>(slot->flags).store(phase_, std::memory_order_release);
        if (++cq_tail_ == cq_entries) {
            cq_tail_ = 0;
            phase_ ^= 1;
        }
        completed = true;
    }
    if (completed && admin_eventfd_ >= 0 && !(intr_mask_ & (1u << JAL_MSIX_VECTOR_ADMIN))) {
        uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(admin_eventfd_, &one, sizeof one);
    }
}

jal_admin_cqe KmdAdminShim::execute(const jal_admin_sqe& sqe)
{
    jal_admin_cqe cqe{};
    std::byte* data = nullptr;
    if (sqe.flags || sqe.reserved0 || sqe.reserved1) {
        cqe.status = JAL_STATUS_INVALID_FIELD;
        return cqe;
    }
    if (sqe.data_len > JAL_ADMIN_DATA_MAX || sqe.data_len < min_data_len(sqe.opcode)) {
        cqe.status = JAL_STATUS_INVALID_LENGTH;
        return cqe;
    }
    if (sqe.data_len) {
        data = registry_->find(sqe.data_addr, sqe.data_len);
        if (!data) {
            cqe.status = JAL_STATUS_DMA_FAULT;
            return cqe;
        }
    }
    cqe.status = run_ioctl(sqe, data, cqe.result);
    return cqe;
}

// One admin command through the ioctl that carries it. Returns the completion status.
uint32_t KmdAdminShim::run_ioctl(const jal_admin_sqe& sqe, std::byte* data, uint32_t& result)
{
    switch (sqe.opcode) {
    case JAL_ADMIN_CREATE_CONTEXT:
        return create_context(result);
    case JAL_ADMIN_DESTROY_CONTEXT:
        return destroy_context(sqe.cdw[0], result);
    case JAL_ADMIN_ALLOC_MEMORY:
        return alloc_memory(sqe, data, result);
    case JAL_ADMIN_FREE_MEMORY: {
        jal_ioctl_mem_free a{};
        a.context = sqe.cdw[0];
        a.va = lohi(sqe.cdw[1], sqe.cdw[2]);
        return call(JAL_IOCTL_MEM_FREE, a).value_or(a.status);
    }
    case JAL_ADMIN_CREATE_QUEUE:
        return create_queue(sqe, result);
    case JAL_ADMIN_DESTROY_QUEUE:
        return destroy_queue(sqe.cdw[0]);
    case JAL_ADMIN_IDENTIFY: {
        jal_ioctl_identify a{};
        a.data_ptr = reinterpret_cast<uintptr_t>(data);
        a.data_len = std::min<uint32_t>(sqe.data_len, sizeof(jal_identify));
        if (auto failed = call(JAL_IOCTL_IDENTIFY, a)) return *failed;
        result = a.data_len;
        return a.status;
    }
    case JAL_ADMIN_RESET: {
        if (sqe.cdw[0] != JAL_RESET_CHIP) return JAL_STATUS_INVALID_FIELD;
        jal_status status = JAL_STATUS_OK;
        chip_reset_locked(true, &status);
        return status;
    }
    default:
        return pass_through(sqe, data, result);
    }
}

// Runs one ioctl. Returns the completion status for a failed call (EINVAL as
// `einval_status` when that is given), nothing when the call went through and the
// argument's own status tells the outcome.
template <typename Arg>
std::optional<uint32_t> KmdAdminShim::call(unsigned long request, Arg& arg,
                                           std::optional<uint32_t> einval_status)
{
    int ret = file_->ioctl(request, arg);
    if (ret >= 0) return std::nullopt;
    if (ret == -EINVAL && einval_status) return einval_status;
    return static_cast<uint32_t>(status_from_errno(-ret));
}

uint32_t KmdAdminShim::create_context(uint32_t& result)
{
    jal_ioctl_context a{};
    if (auto failed = call(JAL_IOCTL_CTX_CREATE, a)) return *failed;
    result = a.context;
    return a.status;
}

uint32_t KmdAdminShim::destroy_context(uint32_t context, uint32_t& result)
{
    jal_ioctl_context a{};
    a.context = context;
    if (auto failed = call(JAL_IOCTL_CTX_DESTROY, a)) return *failed;
    if (a.status == JAL_STATUS_OK) {
        // The device destroyed the context's queues with it.
        for (auto it = queue_context_.begin(); it != queue_context_.end();) {
            if (it->second == context) {
                forget_doorbells(static_cast<int>(it->first));
                it = queue_context_.erase(it);
            } else {
                ++it;
            }
        }
    }
    result = a.leaked;
    return a.status;
}

uint32_t KmdAdminShim::alloc_memory(const jal_admin_sqe& sqe, std::byte* data, uint32_t& result)
{
    jal_ioctl_mem_alloc a{};
    a.context = sqe.cdw[0];
    a.bytes = lohi(sqe.cdw[1], sqe.cdw[2]);
    a.placement = sqe.cdw[3];
    a.slice_mask = lohi(sqe.cdw[4], sqe.cdw[5]);
    a.align_log2 = sqe.cdw[6];
    if (auto failed = call(JAL_IOCTL_MEM_ALLOC, a)) return *failed;
    if (a.status != JAL_STATUS_OK) return a.status;
    jal_mem_alloc_reply reply{};
    reply.va = a.va;
    reply.size = a.rounded_size;
    reply.slice_mask = a.reply_slice_mask;
    reply.placement = a.reply_placement;
    reply.page_size = a.page_size;
    reply.pages = a.pages;
    reply.replicas = a.replicas;
    std::memcpy(data, &reply, sizeof reply);
    result = sizeof reply;
    return JAL_STATUS_OK;
}

uint32_t KmdAdminShim::create_queue(const jal_admin_sqe& sqe, uint32_t& result)
{
    jal_ioctl_queue_create a{};
    a.context = sqe.cdw[0];
    a.ring_bus = lohi(sqe.cdw[1], sqe.cdw[2]);
    a.ring_size = sqe.cdw[3];
    a.read_index_bus = lohi(sqe.cdw[4], sqe.cdw[5]);
    a.vector = sqe.cdw[6];
    // EINVAL: the ring lies outside our memory.
    if (auto failed = call(JAL_IOCTL_QUEUE_CREATE, a, JAL_STATUS_DMA_FAULT)) return *failed;
    if (a.status == JAL_STATUS_OK) {
        queue_context_[a.queue] = a.context;
        result = a.queue;
    }
    return a.status;
}

uint32_t KmdAdminShim::destroy_queue(uint32_t queue)
{
    jal_ioctl_queue_destroy a{};
    a.queue = queue;
    if (auto failed = call(JAL_IOCTL_QUEUE_DESTROY, a)) return *failed;
    if (a.status == JAL_STATUS_OK) {
        queue_context_.erase(a.queue);
        forget_doorbells(static_cast<int>(a.queue));
    }
    return a.status;
}

// Any other command goes to the driver's generic admin ioctl (EINVAL: an opcode it refuses).
uint32_t KmdAdminShim::pass_through(const jal_admin_sqe& sqe, std::byte* data, uint32_t& result)
{
    jal_ioctl_admin a{};
    a.opcode = sqe.opcode;
    a.data_len = sqe.data_len;
    a.data_ptr = reinterpret_cast<uintptr_t>(data);
    std::memcpy(a.cdw, sqe.cdw, sizeof a.cdw);
    if (auto failed = call(JAL_IOCTL_ADMIN, a, JAL_STATUS_INVALID_OPCODE)) return *failed;
    result = a.result;
    return a.status;
}

// The driver resets the chip and waits for it to come back; like the device, the reset
// disables this function's admin queue and loses every context and queue.
void KmdAdminShim::chip_reset_locked(bool admin_command, jal_status* status)
{
    jal_ioctl_reset a{};
    a.flags = admin_command ? JAL_RESET_F_ADMIN_COMMAND : 0;
    int ret = file_->ioctl(JAL_IOCTL_RESET, a);
    if (status) *status = ret < 0 ? status_from_errno(-ret) : JAL_STATUS_OK;
    queue_context_.clear();
    forget_doorbells(-1);
    ctrl_ = 0;
    status_ = 0;
    sq_tail_ = 0;
    cq_head_ = 0;
}

void KmdAdminShim::forget_doorbells(int queue)
{
    auto doorbells = doorbells_.lock();
    if (!doorbells) return;
    if (queue < 0)
        doorbells->forget_all();
    else
        doorbells->forget(static_cast<uint32_t>(queue));
}

}  // namespace jal::kmd
