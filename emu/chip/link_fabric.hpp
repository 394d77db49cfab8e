// What lies beyond a process's chip ports: the switch planes its switched ports are cabled
// to, and the chips of this process (their ports and memory) that a transfer may reach
// without libfabric. A scale-up domain is 12 switch planes, scale-up port p of every chip
// of a rack on plane p's switch; the scale-out domain 4 planes over every chip of the
// domain (docs/decisions.md, "Switched planes"). Chips of other processes answer when
// their process has joined the domain (set_remote). docs/fabric.md, "Switched planes".
#pragma once

#include <functional>
#include <map>
#include <mutex>

namespace jal::emu {

class Chip;
class ChipLinks;

// Which kinds of port are switched and how the domain's chips fall into racks.
struct SwitchLayout {
    bool scale_up = false, scale_out = false;  // that kind's ports are on switch planes
    unsigned rack_chips = 128;                 // a scale-up domain: chips [k·n, (k+1)·n)
    unsigned chips = 0;                        // chips in the whole domain
};

// The published rack: one 51.2 Tb/s switch (128 ports of 400 Gb/s) per plane.
inline constexpr unsigned kMaxRackChips = 128;

class LinkFabric {
public:
    explicit LinkFabric(SwitchLayout layout) : layout_(layout) {}

    const SwitchLayout& layout() const { return layout_; }
    bool same_rack(unsigned a, unsigned b) const
    {
        return a / layout_.rack_chips == b / layout_.rack_chips;
    }

    // A chip of this process (domain-wide id): its ports and, for memory, the chip (null
    // for a timing-only model of the links). Attached before any transfer, detached after
    // the last.
    void attach(unsigned chip, ChipLinks* links, Chip* owner = nullptr);
    void detach(unsigned chip);
    ChipLinks* links(unsigned chip) const;
    Chip* chip(unsigned chip) const;

    // Whether a chip of another process answers (its process joined the domain).
    void set_remote(std::function<bool(unsigned)> answers);
    // A chip of this process, or of a process that answers.
    bool answers(unsigned chip) const;

private:
    struct Entry {
        ChipLinks* links = nullptr;
        Chip* owner = nullptr;
    };
    SwitchLayout layout_;
    mutable std::mutex mutex_;
    std::map<unsigned, Entry> local_;
    std::function<bool(unsigned)> remote_;
};

}  // namespace jal::emu
