#include "emu/cp/host_windows.hpp"

#include "jal/hw/admin.h"
#include "jal/hw/status.h"

#include <algorithm>
#include <mutex>

namespace jal::emu {

namespace {
constexpr std::uint64_t kPage = 4096;
}  // namespace

std::uint32_t HostWindows::add(std::uint32_t fn, std::uint32_t space, std::uint64_t base,
                               std::uint64_t size)
{
    if (space == 0 || size == 0 || base + size < base || base % kPage || size % kPage)
        return JAL_STATUS_INVALID_FIELD;
    std::unique_lock lock(m_);
    if (count_ >= JAL_HOST_WINDOWS) return JAL_STATUS_BUSY;
    spaces_[{fn, space}].push_back({base, size});
    ++count_;
    return JAL_STATUS_OK;
}

std::uint32_t HostWindows::remove(std::uint32_t fn, std::uint32_t space, std::uint64_t base,
                                  std::uint64_t size)
{
    std::unique_lock lock(m_);
    const auto it = spaces_.find({fn, space});
    if (it == spaces_.end()) return JAL_STATUS_INVALID_FIELD;
    std::vector<Window>& w = it->second;
    const auto hit = std::find_if(
        w.begin(), w.end(), [&](const Window& x) { return x.base == base && x.size == size; });
    if (hit == w.end()) return JAL_STATUS_INVALID_FIELD;
    w.erase(hit);
    --count_;
    if (w.empty()) spaces_.erase(it);
    return JAL_STATUS_OK;
}

void HostWindows::clear_space(std::uint32_t fn, std::uint32_t space)
{
    std::unique_lock lock(m_);
    const auto it = spaces_.find({fn, space});
    if (it == spaces_.end()) return;
    count_ -= static_cast<std::uint32_t>(it->second.size());
    spaces_.erase(it);
}

void HostWindows::clear_function(std::uint32_t fn)
{
    std::unique_lock lock(m_);
    for (auto it = spaces_.lower_bound({fn, 0}); it != spaces_.end() && it->first.first == fn;) {
        count_ -= static_cast<std::uint32_t>(it->second.size());
        it = spaces_.erase(it);
    }
}

void HostWindows::clear()
{
    std::unique_lock lock(m_);
    spaces_.clear();
    count_ = 0;
}

bool HostWindows::allows(std::uint32_t fn, std::uint32_t space, std::uint64_t addr,
                         std::uint64_t len) const
{
    if (space == 0) return true;
    if (len == 0 || addr + len < addr) return false;
    std::shared_lock lock(m_);
    const auto it = spaces_.find({fn, space});
    if (it == spaces_.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(), [&](const Window& w) {
        return addr >= w.base && len <= w.size && addr - w.base <= w.size - len;
    });
}

std::uint32_t HostWindows::count() const
{
    std::shared_lock lock(m_);
    return count_;
}

}  // namespace jal::emu
