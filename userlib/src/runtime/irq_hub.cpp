#include "irq_hub.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <string>
#include <sys/eventfd.h>

#include <jal/error.hpp>

namespace jal::runtime::detail {

IrqHub::~IrqHub()
{
    if (!bound_) return;
    for (unsigned i = 0; i < kVectors; i++) {
        try {
            backend_.bind_irq(JAL_MSIX_VECTOR_QUEUE_FIRST + i, -1);
        } catch (const Error&) {
            // The device is gone; its bindings went with it.
        }
    }
}

void IrqHub::ensure_bound()
{
    std::lock_guard lock(bind_mutex_);
    if (bound_) return;
    for (unsigned i = 0; i < kVectors; i++) {
        fds_[i].reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        if (!fds_[i])
            throw Error(JAL_STATUS_IO_ERROR, std::string("eventfd: ") + std::strerror(errno));
        backend_.bind_irq(JAL_MSIX_VECTOR_QUEUE_FIRST + i, fds_[i].get());
    }
    bound_ = true;
}

uint64_t IrqHub::generation()
{
    std::lock_guard lock(mutex_);
    return generation_;
}

bool IrqHub::wait(uint64_t seen, std::chrono::steady_clock::time_point deadline,
                  std::chrono::milliseconds recheck)
{
    using clock = std::chrono::steady_clock;
    auto until = std::min(deadline, clock::now() + recheck);
    std::unique_lock lock(mutex_);
    while (generation_ == seen) {
        auto now = clock::now();
        if (now >= until) return false;
        if (leader_) {
            cv_.wait_until(lock, until);
            continue;
        }
        leader_ = true;
        lock.unlock();
        std::array<pollfd, kVectors> pfds;
        for (unsigned i = 0; i < kVectors; i++) pfds[i] = pollfd{fds_[i].get(), POLLIN, 0};
        auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
        int n = ::poll(pfds.data(), kVectors, static_cast<int>(left));
        unsigned fired = 0;
        if (n > 0) {
            for (auto& p : pfds) {
                uint64_t count;
                if ((p.revents & POLLIN) && ::read(p.fd, &count, sizeof count) == sizeof count)
                    fired += static_cast<unsigned>(count);
            }
        }
        lock.lock();
        leader_ = false;
        if (fired) {
            generation_++;
            interrupts_ += fired;
        }
        cv_.notify_all();
    }
    return true;
}

}  // namespace jal::runtime::detail
