#include "kmd_memory.hpp"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>

#include <uapi/jal_accel.h>

#include <jal/error.hpp>

#include "bus_registry.hpp"

namespace jal::kmd {

KmdMemory::KmdMemory(std::shared_ptr<const KmdFile> file, std::shared_ptr<BusRegistry> registry,
                     size_t bytes)
    : file_(std::move(file)), registry_(std::move(registry)), size_(bytes)
{
    jal_ioctl_host_alloc alloc{};
    alloc.bytes = bytes;
    if (int ret = file_->ioctl(JAL_IOCTL_HOST_ALLOC, alloc); ret < 0)
        throw Error(ret == -EINVAL ? JAL_STATUS_INVALID_LENGTH : status_from_errno(-ret),
                    file_->path() + ": cannot allocate " + std::to_string(bytes) +
                        " bytes of DMA memory (at most 4 MiB each, 256 MiB behind an IOMMU): " +
                        std::strerror(-ret));
    handle_ = alloc.handle;
    bus_addr_ = alloc.bus_addr;
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, file_->fd(),
                     static_cast<off_t>(alloc.mmap_offset));
    if (p == MAP_FAILED) {
        int err = errno;
        jal_ioctl_host_free free_arg{};
        free_arg.handle = handle_;
        file_->ioctl(JAL_IOCTL_HOST_FREE, free_arg);
        file_->throw_errno("mmap of DMA memory", err);
    }
    data_ = static_cast<std::byte*>(p);
    registry_->add(bus_addr_, data_, size_);
}

KmdMemory::~KmdMemory()
{
    registry_->remove(bus_addr_);
    ::munmap(data_, size_);
    jal_ioctl_host_free free_arg{};
    free_arg.handle = handle_;
    file_->ioctl(JAL_IOCTL_HOST_FREE, free_arg);  // the driver frees it once unmapped
}

}  // namespace jal::kmd
