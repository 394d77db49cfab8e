// Collectives over a switched scale-up domain, in modelled time: each algorithm's schedule
// (who sends how many bytes to whom, after which arrival) is run step by step through the
// link model itself (a ChipLinks per chip, 12 switched ports on the planes of one
// LinkFabric), no data moved. What `jal-bench fabric` reports as the bus bandwidth of
// all-reduce and all-to-all, with nccl-tests' definitions of algbw and busbw.
// docs/fabric.md, "The collective model".
#pragma once

#include "emu/chip/chip_links.hpp"
#include "emu/chip/link_fabric.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace jal::emu::fabric {

enum class Collective { all_reduce, all_to_all };
enum class Algorithm {
    ring,              // all-reduce: reduce-scatter then all-gather round a ring, pipelined
    halving_doubling,  // all-reduce: recursive halving then doubling (Rabenseifner)
    one_shot,          // all-reduce: every chip sends its whole buffer to every other
    direct,            // all-to-all: every chip sends each peer its share, staggered
};
const char* collective_name(Collective c);
const char* algorithm_name(Algorithm a);

// n chips, each with `planes` switched scale-up ports at full width, all up.
class SwitchedDomainModel {
public:
    explicit SwitchedDomainModel(unsigned chips, unsigned planes = 12);
    unsigned chips() const { return static_cast<unsigned>(links_.size()); }
    double chip_gbytes_per_s() const;  // the sum of one chip's planes, each way
    ChipLinks& links(unsigned chip) { return *links_[chip]; }
    // Charges `bytes` from chip `from` to chip `to`, ready to go at `ready_ns`; returns
    // when the last byte has arrived.
    std::uint64_t send(unsigned from, unsigned to, std::uint64_t bytes, std::uint64_t ready_ns);

private:
    std::unique_ptr<LinkFabric> fabric_;
    std::vector<std::unique_ptr<ChipLinks>> links_;
    unsigned planes_;
};

struct CollectiveResult {
    Collective collective = Collective::all_reduce;
    Algorithm algorithm = Algorithm::ring;
    unsigned chips = 0;
    std::uint64_t bytes = 0;  // per chip, as nccl-tests' "size"
    std::uint64_t time_ns = 0;
    std::uint64_t transfers = 0;  // sends charged
    double algbw_gbps = 0, busbw_gbps = 0;
    double busbw_fraction = 0;  // of one chip's link rate (600 GB/s scale-up)
};

// nccl-tests' busbw ÷ algbw: 2(n−1)/n for all-reduce, (n−1)/n for all-to-all.
double busbw_factor(Collective c, unsigned chips);
// The algorithms that apply (halving-doubling needs a power of two chips).
std::vector<Algorithm> algorithms_for(Collective c, unsigned chips);
// Runs one schedule on a fresh domain of `chips` chips.
CollectiveResult run_collective(Collective c, Algorithm a, unsigned chips, std::uint64_t bytes);
// The fastest applicable schedule: what a tuned collective library picks at that size.
CollectiveResult best_collective(Collective c, unsigned chips, std::uint64_t bytes);

}  // namespace jal::emu::fabric
