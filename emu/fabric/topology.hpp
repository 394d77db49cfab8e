// Which emulator process holds which chips, and which links join the chips: the fabric
// domain several jal-emu processes (on one host or several) form together. Read from a
// JSON file (docs/fabric.md, "Topology"), checked as a whole before any process joins:
// every chip held by exactly one process, every link between two chips of the domain on
// ports that exist and are used once, addresses well-formed. Errors name the offending
// entry (its JSON path) and what is wrong with it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace jal::emu::fabric {

class TopologyError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class LinkKind { scale_up, scale_out };

struct TopologyProcess {
    std::string name;             // unique; how a jal-emu names itself (--fabric-process)
    std::string node, service;    // where its endpoint listens (tcp: host and port)
    std::vector<unsigned> chips;  // domain-wide chip ids, served as jal0, jal1, ... in order
};

struct TopologyLink {
    unsigned chip_a = 0, port_a = 0, chip_b = 0, port_b = 0;
    LinkKind kind = LinkKind::scale_up;
};

struct Topology {
    std::string provider = "tcp";  // the libfabric provider every process uses
    std::vector<TopologyProcess> processes;
    std::vector<TopologyLink> links;
    // "scale_up": "switched" / "scale_out": "switched": every chip's ports of that kind are
    // cabled to the kind's switch planes (port p to plane p) instead of to `links`; the
    // scale-up planes of a rack join `rack_chips` consecutive chip ids (docs/fabric.md,
    // "Switched planes"). Without them, ports are linked point to point as `links` says.
    bool scale_up_switched = false, scale_out_switched = false;
    unsigned rack_chips = 128;

    // The process holding `chip`, or nullptr.
    const TopologyProcess* holder(unsigned chip) const;
    std::size_t chip_count() const;
};

// Ports a chip has of each kind (docs/decisions.md, "Chip-to-chip links").
inline constexpr unsigned kScaleUpPorts = 12, kScaleOutPorts = 4;

Topology parse_topology(const std::string& json_text);
Topology load_topology(const std::string& path);  // TopologyError when unreadable too

}  // namespace jal::emu::fabric
