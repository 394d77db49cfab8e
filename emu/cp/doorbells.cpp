#include "emu/cp/doorbells.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <system_error>

namespace jal::emu {

Doorbells::Doorbells()
{
    memfd_ = memfd_create("jal-doorbells", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (memfd_ < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
    kickfd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    void* p = MAP_FAILED;
    // Sealed before it is handed out: a client that could truncate it would make the
    // emulator's next doorbell store fault (SIGBUS).
    if (kickfd_ >= 0 && ftruncate(memfd_, JAL_BAR_DOORBELL_SIZE) == 0 &&
        fcntl(memfd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
        p = mmap(nullptr, JAL_BAR_DOORBELL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
    if (p == MAP_FAILED) {
        const int e = errno;
        if (kickfd_ >= 0) close(kickfd_);
        close(memfd_);
        throw std::system_error(e, std::generic_category(), "doorbell BAR");
    }
    base_ = static_cast<std::byte*>(p);
}

Doorbells::~Doorbells()
{
    munmap(base_, JAL_BAR_DOORBELL_SIZE);
    close(kickfd_);
    close(memfd_);
}

void Doorbells::ring(std::uint32_t q, std::uint64_t write_index)
{
    set_write_index(q, write_index);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (need_wakeup(q)) kick();
}

void Doorbells::kick()
{
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(kickfd_, &one, sizeof one);
}

}  // namespace jal::emu
