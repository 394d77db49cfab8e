#include "emu/fabric/collective_model.hpp"

#include <algorithm>
#include <stdexcept>

namespace jal::emu::fabric {

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b)
{
    return (a + b - 1) / b;
}

bool power_of_two(unsigned n)
{
    return n && !(n & (n - 1));
}

// A ring step's chunk goes in slices so that a chip forwards the first slice while the
// rest still arrive: with 8 slices of at least 64 KiB the flight latency of a step hides
// behind the slices still on the wire (what NCCL's pipelined ring does).
constexpr std::uint64_t kMinSliceBytes = 64 << 10;
constexpr std::uint64_t kMaxSlices = 8;

// Reduce-scatter then all-gather: 2(n−1) steps of bytes/n to the next chip.
std::uint64_t ring(SwitchedDomainModel& m, std::uint64_t bytes, std::uint64_t& transfers)
{
    const unsigned n = m.chips();
    const std::uint64_t chunk = ceil_div(bytes, n);
    const std::uint64_t slices = std::clamp<std::uint64_t>(chunk / kMinSliceBytes, 1, kMaxSlices);
    // arrived[i·slices + j]: slice j of the previous step is at chip i (ready to forward).
    std::vector<std::uint64_t> arrived(std::size_t{n} * slices, 0), next(arrived.size());
    for (unsigned step = 0; step < 2 * (n - 1); ++step) {
        for (std::uint64_t j = 0; j < slices; ++j)
            for (unsigned i = 0; i < n; ++i) {
                const unsigned to = (i + 1) % n;
                const std::uint64_t part = chunk / slices + (j < chunk % slices ? 1 : 0);
                next[to * slices + j] = m.send(i, to, part, arrived[i * slices + j]);
                ++transfers;
            }
        std::swap(arrived, next);
    }
    return *std::max_element(arrived.begin(), arrived.end());
}

// Recursive halving (reduce-scatter: bytes/2, bytes/4, ... to the partner across half the
// chips, then a quarter, ...) and doubling back (all-gather): 2·log2(n) steps.
std::uint64_t halving_doubling(SwitchedDomainModel& m, std::uint64_t bytes,
                               std::uint64_t& transfers)
{
    const unsigned n = m.chips();
    std::vector<std::uint64_t> ready(n, 0), next(n);
    std::vector<unsigned> distances;
    for (unsigned d = n / 2; d >= 1; d /= 2) distances.push_back(d);
    std::vector<unsigned> order = distances;
    order.insert(order.end(), distances.rbegin(), distances.rend());
    for (unsigned d : order) {
        const std::uint64_t part = ceil_div(bytes * d, n);  // bytes / 2^(step+1)
        for (unsigned i = 0; i < n; ++i) {
            next[i ^ d] = m.send(i, i ^ d, part, ready[i]);
            ++transfers;
        }
        for (unsigned i = 0; i < n; ++i) ready[i] = std::max(ready[i], next[i]);
    }
    return *std::max_element(ready.begin(), ready.end());
}

// Every chip sends `per_peer` bytes to every other, all posted at once and staggered
// (chip i's k-th send goes to chip i+k), so no receiver is sent to twice at a time.
std::uint64_t direct(SwitchedDomainModel& m, std::uint64_t per_peer, std::uint64_t& transfers)
{
    const unsigned n = m.chips();
    std::uint64_t last = 0;
    for (unsigned k = 1; k < n; ++k)
        for (unsigned i = 0; i < n; ++i) {
            last = std::max(last, m.send(i, (i + k) % n, per_peer, 0));
            ++transfers;
        }
    return last;
}

}  // namespace

const char* collective_name(Collective c)
{
    return c == Collective::all_reduce ? "all_reduce" : "all_to_all";
}

const char* algorithm_name(Algorithm a)
{
    switch (a) {
    case Algorithm::ring:
        return "ring";
    case Algorithm::halving_doubling:
        return "halving_doubling";
    case Algorithm::one_shot:
        return "one_shot";
    case Algorithm::direct:
        return "direct";
    }
    return "?";
}

SwitchedDomainModel::SwitchedDomainModel(unsigned chips, unsigned planes) : planes_(planes)
{
    if (chips < 2) throw std::invalid_argument("a collective needs at least 2 chips");
    SwitchLayout layout;
    layout.scale_up = true;
    layout.rack_chips = chips;
    layout.chips = chips;
    fabric_ = std::make_unique<LinkFabric>(layout);
    std::vector<LinkPortConfig> ports;
    for (unsigned p = 0; p < planes; ++p) ports.push_back({false, p, 0, 0, true});
    for (unsigned i = 0; i < chips; ++i) {
        links_.push_back(std::make_unique<ChipLinks>(ports));
        for (unsigned p = 0; p < planes; ++p) links_.back()->set_up(p, true, "");
        links_.back()->attach_fabric(fabric_.get(), i);
        fabric_->attach(i, links_.back().get());
    }
}

double SwitchedDomainModel::chip_gbytes_per_s() const
{
    return planes_ * kLinkLanes * kLaneGbytesPerS;
}

std::uint64_t SwitchedDomainModel::send(unsigned from, unsigned to, std::uint64_t bytes,
                                        std::uint64_t ready_ns)
{
    if (bytes == 0) return ready_ns;
    const auto c = links_[from]->charge(to, bytes, true, ready_ns);
    if (!c) throw std::logic_error("the model's planes do not join its chips");
    return c->end_ns;
}

double busbw_factor(Collective c, unsigned chips)
{
    const double n = chips;
    return c == Collective::all_reduce ? 2 * (n - 1) / n : (n - 1) / n;
}

std::vector<Algorithm> algorithms_for(Collective c, unsigned chips)
{
    if (c == Collective::all_to_all) return {Algorithm::direct};
    std::vector<Algorithm> out{Algorithm::ring, Algorithm::one_shot};
    if (power_of_two(chips)) out.push_back(Algorithm::halving_doubling);
    return out;
}

CollectiveResult run_collective(Collective c, Algorithm a, unsigned chips, std::uint64_t bytes)
{
    if (a == Algorithm::halving_doubling && !power_of_two(chips))
        throw std::invalid_argument("halving-doubling needs a power of two chips");
    if ((c == Collective::all_to_all) != (a == Algorithm::direct))
        throw std::invalid_argument(std::string(algorithm_name(a)) + " is no " +
                                    collective_name(c) + " algorithm");
    SwitchedDomainModel m(chips);
    CollectiveResult r;
    r.collective = c;
    r.algorithm = a;
    r.chips = chips;
    r.bytes = bytes;
    switch (a) {
    case Algorithm::ring:
        r.time_ns = ring(m, bytes, r.transfers);
        break;
    case Algorithm::halving_doubling:
        r.time_ns = halving_doubling(m, bytes, r.transfers);
        break;
    case Algorithm::one_shot:
        r.time_ns = direct(m, bytes, r.transfers);
        break;
    case Algorithm::direct:
        r.time_ns = direct(m, ceil_div(bytes, chips), r.transfers);
        break;
    }
    // Bytes per ns are GB/s.
    r.algbw_gbps = r.time_ns ? static_cast<double>(bytes) / static_cast<double>(r.time_ns) : 0;
    r.busbw_gbps = r.algbw_gbps * busbw_factor(c, chips);
    r.busbw_fraction = r.busbw_gbps / m.chip_gbytes_per_s();
    return r;
}

CollectiveResult best_collective(Collective c, unsigned chips, std::uint64_t bytes)
{
    CollectiveResult best;
    for (Algorithm a : algorithms_for(c, chips)) {
        const CollectiveResult r = run_collective(c, a, chips, bytes);
        if (best.time_ns == 0 || r.time_ns < best.time_ns) best = r;
    }
    return best;
}

}  // namespace jal::emu::fabric
