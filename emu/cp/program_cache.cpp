#include "emu/cp/program_cache.hpp"

#include "jal/hw/status.h"

#include <jal/isa/code_object.hpp>

#include <algorithm>
#include <cstring>

namespace jal::emu {

std::shared_ptr<const exec::Program>
ProgramCache::get(std::uint32_t ctx, std::span<const std::uint8_t> bytes, std::uint32_t& status)
{
    auto same = [&](const Entry& e) {
        return e.ctx == ctx && e.bytes.size() == bytes.size() &&
               std::memcmp(e.bytes.data(), bytes.data(), bytes.size()) == 0;
    };
    {
        std::lock_guard lock(m_);
        auto it = std::find_if(entries_.begin(), entries_.end(), same);
        if (it != entries_.end()) {
            status = JAL_STATUS_OK;
            return it->program;
        }
    }
    jal::isa::CodeObjectView view;
    status = jal::isa::parse_code_object(bytes, &view, nullptr);
    if (status != JAL_STATUS_OK) return nullptr;
    auto prog =
        std::make_shared<exec::Program>(exec::Program::from_words(view.code, view.header.l1_bytes));
    prog->args_size = view.header.args_size;
    prog->name = view.name;
    std::lock_guard lock(m_);
    // Round robin over the entries until both limits leave room for this one.
    while (!entries_.empty() &&
           (entries_.size() >= kEntries || bytes_ + bytes.size() > kMaxBytes)) {
        next_ %= entries_.size();
        bytes_ -= entries_[next_].bytes.size();
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(next_));
    }
    bytes_ += bytes.size();
    entries_.push_back({ctx, {bytes.begin(), bytes.end()}, prog});
    return prog;
}

}  // namespace jal::emu
