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
    SwitchLayout switches;                           // the planes the switched ports are on
};

// A tray: jal-emu --chips N (N ≥ 2) without --domain. Its chips form one switched scale-up
// domain, every chip's 12 scale-up ports on the 12 planes (docs/fabric.md, "A tray").
DomainPlan plan_tray(unsigned chips);

// nullopt without --domain; throws std::runtime_error for a bad file, an unknown process or
// a --chips that disagrees with the file.
std::optional<DomainPlan> plan_domain(const EmuOptions& options);

// Opens this process's endpoint, registers the chips' HBM and starts joining (in the
// background: the chips serve meanwhile); attaches the domain to every chip.
// The chips of this process find each other (and, once joined, the domain's other chips)
// through `fabric`.
std::unique_ptr<fabric::Domain> join_domain(const DomainPlan& plan, const EmuOptions& options,
                                            const std::vector<std::unique_ptr<Chip>>& chips,
                                            LinkFabric& fabric);

}  // namespace jal::emu
