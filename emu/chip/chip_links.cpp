#include "emu/chip/chip_links.hpp"

#include "emu/chip/link_fabric.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace jal::emu {

namespace {

// Locks this chip's ports and, when the far chip is in this process, its ports too, both at
// once: two chips charging each other never deadlock.
std::pair<std::unique_lock<std::mutex>, std::unique_lock<std::mutex>> lock_both(std::mutex& mine,
                                                                                std::mutex* far)
{
    std::unique_lock<std::mutex> a(mine, std::defer_lock), b;
    if (far) {
        b = std::unique_lock<std::mutex>(*far, std::defer_lock);
        std::lock(a, b);
    } else {
        a.lock();
    }
    return {std::move(a), std::move(b)};
}

}  // namespace

ChipLinks::ChipLinks(std::vector<LinkPortConfig> ports, std::uint64_t seed) : seed_(seed)
{
    for (const auto& c : ports) {
        LinkPort p;
        p.config = c;
        ports_.push_back(p);
    }
}

void ChipLinks::attach_fabric(LinkFabric* fabric, unsigned self_chip)
{
    std::lock_guard lock(mutex_);
    fabric_ = fabric;
    self_chip_ = self_chip;
}

std::vector<LinkPort> ChipLinks::ports() const
{
    std::lock_guard lock(mutex_);
    return ports_;
}

std::optional<LinkCharge> ChipLinks::charge(unsigned peer_chip, std::uint64_t bytes, bool write,
                                            std::uint64_t now_ns)
{
    {
        std::lock_guard lock(mutex_);
        LinkPort* best = nullptr;
        auto busy = [&](LinkPort& p) -> std::uint64_t& {
            return write ? p.tx_busy_until_ns : p.rx_busy_until_ns;
        };
        for (LinkPort& p : ports_)
            if (p.up && !p.config.switched && p.config.peer_chip == peer_chip &&
                (!best || busy(p) < busy(*best)))
                best = &p;
        if (best) {
            // Bytes over the rate, rounded up: never cheaper than the link allows.
            const auto serial_ns = static_cast<std::uint64_t>(
                std::ceil(static_cast<double>(bytes) / best->gbytes_per_s()));
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
    }
    // Within a rack the scale-up planes; beyond it (or with them all down) the scale-out.
    for (bool scale_out : {false, true})
        if (routes(scale_out, peer_chip))
            if (auto c = charge_switched(scale_out, peer_chip, bytes, write, now_ns)) return c;
    return std::nullopt;
}

bool ChipLinks::routes(bool scale_out, unsigned peer_chip) const
{
    LinkFabric* fabric;
    unsigned self;
    bool cabled = false;
    {
        std::lock_guard lock(mutex_);
        fabric = fabric_;
        self = self_chip_;
        for (const LinkPort& p : ports_)
            cabled |= p.config.switched && p.config.scale_out == scale_out;
    }
    if (!cabled || !fabric || peer_chip == self || !fabric->answers(peer_chip)) return false;
    const SwitchLayout& l = fabric->layout();
    return scale_out ? l.scale_out : l.scale_up && fabric->same_rack(self, peer_chip);
}

std::vector<ChipLinks::Plane> ChipLinks::planes_to(bool scale_out, ChipLinks* far)
{
    std::vector<Plane> out;
    for (LinkPort& p : ports_) {
        if (!p.up || !p.config.switched || p.config.scale_out != scale_out) continue;
        LinkPort* theirs = nullptr;
        if (far) {
            for (LinkPort& q : far->ports_)
                if (q.up && q.config.switched && q.config.scale_out == scale_out &&
                    q.config.port == p.config.port)
                    theirs = &q;
            if (!theirs) continue;  // the far chip's port on this plane is down
        }
        out.push_back({&p, theirs});
    }
    return out;
}

std::size_t ChipLinks::count_planes(bool scale_out, unsigned peer_chip)
{
    ChipLinks* far = fabric_->links(peer_chip);
    const auto locks = lock_both(mutex_, far ? &far->mutex_ : nullptr);
    return planes_to(scale_out, far).size();
}

std::optional<LinkCharge> ChipLinks::charge_switched(bool scale_out, unsigned peer_chip,
                                                     std::uint64_t bytes, bool write,
                                                     std::uint64_t now_ns)
{
    ChipLinks* far = fabric_->links(peer_chip);
    const auto locks = lock_both(mutex_, far ? &far->mutex_ : nullptr);
    const std::vector<Plane> planes = planes_to(scale_out, far);
    if (planes.empty()) return std::nullopt;
    LinkCharge c;
    c.index = static_cast<unsigned>(planes[0].mine - ports_.data());
    c.ports = static_cast<unsigned>(planes.size());
    c.start_ns = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t last = now_ns;
    const std::uint64_t k = planes.size();
    for (std::uint64_t i = 0; i < k; ++i) {
        // Split evenly; a share is busy on the sender's transmit and the receiver's receive
        // direction of its plane at once (the switch cuts through).
        const std::uint64_t share = bytes / k + (i < bytes % k ? 1 : 0);
        if (share == 0 && i > 0) break;
        LinkPort& p = *planes[i].mine;
        LinkPort* q = planes[i].theirs;
        std::uint64_t& here = write ? p.tx_busy_until_ns : p.rx_busy_until_ns;
        std::uint64_t* there = q ? &(write ? q->rx_busy_until_ns : q->tx_busy_until_ns) : nullptr;
        const double rate = q ? std::min(p.gbytes_per_s(), q->gbytes_per_s()) : p.gbytes_per_s();
        const std::uint64_t start = std::max({now_ns, here, there ? *there : 0});
        const auto end =
            start + static_cast<std::uint64_t>(std::ceil(static_cast<double>(share) / rate));
        here = end;
        (write ? p.tx_bytes : p.rx_bytes) += share;
        ++p.transfers;
        if (q) {
            *there = end;
            (write ? q->rx_bytes : q->tx_bytes) += share;
            ++q->transfers;
        }
        c.start_ns = std::min(c.start_ns, start);
        last = std::max(last, end);
    }
    const std::uint64_t flight = scale_out ? kScaleOutSwitchedLatencyNs : kLinkLatencyNs;
    c.end_ns = last + (write ? 1 : 2) * flight;
    return c;
}

bool ChipLinks::reaches(unsigned peer_chip) const
{
    {
        std::lock_guard lock(mutex_);
        for (const LinkPort& p : ports_)
            if (p.up && !p.config.switched && p.config.peer_chip == peer_chip) return true;
    }
    auto* self = const_cast<ChipLinks*>(this);  // counting locks, changes nothing
    for (bool scale_out : {false, true})
        if (routes(scale_out, peer_chip) && self->count_planes(scale_out, peer_chip) > 0)
            return true;
    return false;
}

std::string ChipLinks::no_route(unsigned peer_chip) const
{
    const std::string chip = "chip " + std::to_string(peer_chip);
    bool switched = false;
    {
        std::lock_guard lock(mutex_);
        for (const LinkPort& p : ports_) {
            switched |= p.config.switched;
            if (!p.config.switched && p.config.peer_chip == peer_chip)
                return "every link to " + chip + " is down (" + p.down_reason + ")";
        }
    }
    if (switched && fabric_) {
        if (!fabric_->answers(peer_chip))
            return chip + " does not answer on the switch planes (no such chip, or its process "
                          "has not joined the domain or is gone)";
        if (routes(false, peer_chip) || routes(true, peer_chip))
            return "every switch plane to " + chip + " is down at one end";
        return "no switch plane joins this chip to " + chip + " (another rack, and no scale-out)";
    }
    return "no link joins this chip to " + chip + " (the domain's topology file lists the links)";
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
        if (!p.config.switched && p.config.peer_chip == peer_chip) {
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
