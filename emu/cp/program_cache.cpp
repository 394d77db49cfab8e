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
    if (bytes.size() > kMaxObjectBytes) return prog;
    std::lock_guard lock(m_);
    Entry e{ctx, {bytes.begin(), bytes.end()}, prog};
    if (entries_.size() < kEntries) {
        entries_.push_back(std::move(e));
    } else {
        entries_[next_] = std::move(e);
        next_ = (next_ + 1) % kEntries;
    }
    return prog;
}

}  // namespace jal::emu
