#include "memfd_memory.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>

#include <jal/error.hpp>

namespace jal::direct {

MemfdMemory::MemfdMemory(std::shared_ptr<DirectConnection> connection, size_t size,
                         uint64_t bus_addr)
    : connection_(std::move(connection)), size_(size), bus_addr_(bus_addr)
{
    memfd_.reset(::memfd_create("jal-host-memory", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!memfd_)
        throw Error(JAL_STATUS_NO_MEMORY, std::string("memfd_create: ") + std::strerror(errno));
    if (::ftruncate(memfd_.get(), static_cast<off_t>(size)) < 0)
        throw Error(JAL_STATUS_NO_MEMORY, "ftruncate of host memory to " + std::to_string(size) +
                                              " bytes: " + std::strerror(errno));
    // The emulator maps only memory whose size is sealed (it could not survive a shrink).
    if (::fcntl(memfd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
        throw Error(JAL_STATUS_NO_MEMORY,
                    std::string("sealing host memory: ") + std::strerror(errno));
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_.get(), 0);
    if (p == MAP_FAILED)
        throw Error(JAL_STATUS_NO_MEMORY,
                    std::string("mmap of host memory: ") + std::strerror(errno));
    data_ = static_cast<std::byte*>(p);
    try {
        connection_->mem_map(bus_addr_, size_, memfd_.get());
    } catch (...) {
        ::munmap(data_, size_);
        throw;
    }
}

MemfdMemory::~MemfdMemory()
{
    // The device must lose access before the pages can be reused; a dead connection has
    // already dropped the mapping on the emulator's side.
    try {
        connection_->mem_unmap(bus_addr_, size_);
    } catch (const Error&) {}
    ::munmap(data_, size_);
}

}  // namespace jal::direct
