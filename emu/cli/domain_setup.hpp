// jal-emu --domain: the chips this process serves in the domain and their ports, read from
// the topology file, and the domain joined once the chips exist.
#pragma once

#include "emu/chip/chip_links.hpp"
#include "emu/cli/options.hpp"
#include "emu/fabric/domain.hpp"
#include "emu/fabric/topology.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace jal::emu {

class Chip;

struct DomainPlan {
    fabric::Topology topology;
    std::vector<unsigned> chips;                     // domain ids of this process's chips
    std::vector<std::vector<LinkPortConfig>> links;  // per chip, the ports its links use
};

// nullopt without --domain; throws std::runtime_error for a bad file, an unknown process or
// a --chips that disagrees with the file.
std::optional<DomainPlan> plan_domain(const EmuOptions& options);

// Opens this process's endpoint, registers the chips' HBM and starts joining (in the
// background: the chips serve meanwhile); attaches the domain to every chip.
std::unique_ptr<fabric::Domain> join_domain(const DomainPlan& plan, const EmuOptions& options,
                                            const std::vector<std::unique_ptr<Chip>>& chips);

}  // namespace jal::emu
