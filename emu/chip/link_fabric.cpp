#include "emu/chip/link_fabric.hpp"

namespace jal::emu {

void LinkFabric::attach(unsigned chip, ChipLinks* links, Chip* owner)
{
    std::lock_guard lock(mutex_);
    local_[chip] = {links, owner};
}

void LinkFabric::detach(unsigned chip)
{
    std::lock_guard lock(mutex_);
    local_.erase(chip);
}

ChipLinks* LinkFabric::links(unsigned chip) const
{
    std::lock_guard lock(mutex_);
    auto it = local_.find(chip);
    return it == local_.end() ? nullptr : it->second.links;
}

Chip* LinkFabric::chip(unsigned chip) const
{
    std::lock_guard lock(mutex_);
    auto it = local_.find(chip);
    return it == local_.end() ? nullptr : it->second.owner;
}

void LinkFabric::set_remote(std::function<bool(unsigned)> answers)
{
    std::lock_guard lock(mutex_);
    remote_ = std::move(answers);
}

bool LinkFabric::answers(unsigned chip) const
{
    std::function<bool(unsigned)> remote;
    {
        std::lock_guard lock(mutex_);
        if (local_.count(chip)) return true;
        remote = remote_;
    }
    return chip < layout_.chips && remote && remote(chip);
}

}  // namespace jal::emu
