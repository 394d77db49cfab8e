#include "kmd_doorbells.hpp"

#include <cerrno>
#include <sys/mman.h>

#include <uapi/jal_accel.h>

#include <jal/error.hpp>
#include <jal/hw/pci.h>

namespace jal::kmd {

KmdDoorbells::~KmdDoorbells()
{
    forget_all();
}

std::byte* KmdDoorbells::page(uint32_t queue_id)
{
    std::lock_guard lock(mutex_);
    if (auto it = pages_.find(queue_id); it != pages_.end()) return it->second;
    if (queue_id >= JAL_MAX_USER_QUEUES)
        throw Error(JAL_STATUS_OUT_OF_RANGE,
                    "queue id " + std::to_string(queue_id) + " has no doorbell page");
    void* p = ::mmap(nullptr, JAL_DOORBELL_STRIDE, PROT_READ | PROT_WRITE, MAP_SHARED, file_->fd(),
                     static_cast<off_t>(JAL_MMAP_DOORBELL_OFFSET(queue_id)));
    if (p == MAP_FAILED)
        file_->throw_errno(("mmap of the doorbell of queue " + std::to_string(queue_id)).c_str(),
                           errno);
    return pages_[queue_id] = static_cast<std::byte*>(p);
}

void KmdDoorbells::forget(uint32_t queue_id)
{
    std::lock_guard lock(mutex_);
    if (auto it = pages_.find(queue_id); it != pages_.end()) {
        ::munmap(it->second, JAL_DOORBELL_STRIDE);
        pages_.erase(it);
    }
}

void KmdDoorbells::forget_all()
{
    std::lock_guard lock(mutex_);
    for (auto& [id, p] : pages_) ::munmap(p, JAL_DOORBELL_STRIDE);
    pages_.clear();
}

}  // namespace jal::kmd
