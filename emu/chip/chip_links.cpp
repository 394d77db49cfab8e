#include "emu/chip/chip_links.hpp"

#include <algorithm>
#include <cmath>

namespace jal::emu {

ChipLinks::ChipLinks(std::vector<LinkPortConfig> ports, std::uint64_t seed) : seed_(seed)
{
    for (const auto& c : ports) {
        LinkPort p;
        p.config = c;
        ports_.push_back(p);
    }
}

std::vector<LinkPort> ChipLinks::ports() const
{
    std::lock_guard lock(mutex_);
    return ports_;
}

std::optional<LinkCharge> ChipLinks::charge(unsigned peer_chip, std::uint64_t bytes, bool write,
                                            std::uint64_t now_ns)
{
    std::lock_guard lock(mutex_);
    LinkPort* best = nullptr;
    auto busy = [&](LinkPort& p) -> std::uint64_t& {
        return write ? p.tx_busy_until_ns : p.rx_busy_until_ns;
    };
    for (LinkPort& p : ports_)
        if (p.up && p.config.peer_chip == peer_chip && (!best || busy(p) < busy(*best))) best = &p;
    if (!best) return std::nullopt;
    // Bytes over the rate, rounded up: a transfer is never cheaper than the link allows.
    const auto serial_ns =
        static_cast<std::uint64_t>(std::ceil(static_cast<double>(bytes) / best->gbytes_per_s()));
    LinkCharge c;
    c.index = static_cast<unsigned>(best - ports_.data());
    c.start_ns = std::max(now_ns, busy(*best));
    busy(*best) = c.start_ns + serial_ns;
    // A read's request crosses the link before its data comes back.
    c.end_ns = c.start_ns + serial_ns + (write ? 1 : 2) * kLinkLatencyNs;
    (write ? best->tx_bytes : best->rx_bytes) += bytes;
    ++best->transfers;
    return c;
}

bool ChipLinks::reaches(unsigned peer_chip) const
{
    std::lock_guard lock(mutex_);
    return std::any_of(ports_.begin(), ports_.end(),
                       [&](const LinkPort& p) { return p.up && p.config.peer_chip == peer_chip; });
}

std::string ChipLinks::no_route(unsigned peer_chip) const
{
    std::lock_guard lock(mutex_);
    for (const LinkPort& p : ports_)
        if (p.config.peer_chip == peer_chip)
            return "every link to chip " + std::to_string(peer_chip) + " is down (" +
                   p.down_reason + ")";
    return "no link joins this chip to chip " + std::to_string(peer_chip) +
           " (the domain's topology file lists the links)";
}

void ChipLinks::fail(unsigned index, const std::string& why)
{
    std::lock_guard lock(mutex_);
    if (index >= ports_.size()) return;
    ++ports_[index].errors;
    ports_[index].up = false;
    ports_[index].down_reason = why;
}

void ChipLinks::peer_lost(unsigned peer_chip, const std::string& why)
{
    std::lock_guard lock(mutex_);
    for (LinkPort& p : ports_)
        if (p.config.peer_chip == peer_chip) {
            if (p.up) ++p.errors;
            p.up = false;
            p.peer_gone = true;
            p.down_reason = why;
        }
}

bool ChipLinks::set_up(unsigned index, bool up, const std::string& why)
{
    std::lock_guard lock(mutex_);
    if (index >= ports_.size()) return false;
    ports_[index].up = up;
    ports_[index].down_reason = up ? "" : why;
    return true;
}

}  // namespace jal::emu
