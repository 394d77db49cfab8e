// The chip's fabric ports (12 scale-up, 4 scale-out; docs/decisions.md "Chip-to-chip
// links") and the timing model of the links on them: each direction of a port is busy for
// bytes ÷ its rate, a transfer starts when the direction is free (transfers through one
// port queue behind each other: contention) and arrives one flight latency later. Never
// cheaper than bytes ÷ link rate. State (up/down, width) and counters (bytes, transfers,
// errors) are what the management path and telemetry show. A port is cabled either to one
// peer port (point to point) or to a switch plane (switched: it reaches every chip of the
// plane, and a transfer is striped over every plane up at both ends, charged on both
// ends' ports when the far chip is in this process). docs/fabric.md, "The link model" and
// "Switched planes".
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace jal::emu {

class LinkFabric;

// One port the topology connects.
struct LinkPortConfig {
    bool scale_out = false;
    unsigned port = 0;                      // within its kind
    unsigned peer_chip = 0, peer_port = 0;  // point to point only
    // Cabled to plane `port` of its kind's switches instead of to one peer port.
    bool switched = false;
};

// Lanes of a full-width port and the data rate of each: 4 × 100 Gb/s = 400 Gb/s = 50 GB/s
// each way, the port of docs/decisions.md.
inline constexpr unsigned kLinkLanes = 4;
inline constexpr double kLaneGbytesPerS = 12.5;
// One-way flight time of a transfer's last byte: SerDes and FEC at both ends, MAC, one
// switch hop and a few metres of cable (docs/fabric.md derives it).
inline constexpr std::uint64_t kLinkLatencyNs = 1000;
// The same through the scale-out network's three switch hops (leaf, spine, leaf) and
// longer optical cables (docs/decisions.md, "Switched planes").
inline constexpr std::uint64_t kScaleOutSwitchedLatencyNs = 2000;

struct LinkPort {
    LinkPortConfig config;
    bool up = false;              // until trained
    unsigned lanes = kLinkLanes;  // the trained width; fewer when degraded
    std::string down_reason = "not trained";
    bool peer_gone = false;  // its process left or died: training cannot bring it up
    std::uint64_t tx_bytes = 0, rx_bytes = 0, transfers = 0, errors = 0;
    std::uint64_t tx_busy_until_ns = 0, rx_busy_until_ns = 0;
    // Lane-level training (docs/fabric.md, "Link training"): what the last training found.
    bool peer_answered = false;
    std::uint8_t lanes_ok = 0;   // lanes that locked
    std::uint8_t bad_lanes = 0;  // dead for good (fault injection): never lock again
    std::array<std::uint16_t, kLinkLanes> margin_mui{};  // eye margin per lane; 0: no lock
    std::uint32_t trainings = 0;                         // since the last reset
    double gbytes_per_s() const { return up ? lanes * kLaneGbytesPerS : 0; }
};

// What a transfer cost: the port it took and when it started and arrived (modelled ns).
struct LinkCharge {
    unsigned index = 0;  // into ports(): the (first) port it took
    std::uint64_t start_ns = 0, end_ns = 0;
    unsigned ports = 1;  // ports it was striped over (switch planes)
};

class ChipLinks {
public:
    // `seed` draws the lanes' eye margins (the same chip trains the same way every time).
    explicit ChipLinks(std::vector<LinkPortConfig> ports = {}, std::uint64_t seed = 1);
    // The switch planes beyond this chip's switched ports and its own id among their chips.
    // Without it, switched ports reach nothing.
    void attach_fabric(LinkFabric* fabric, unsigned self_chip);

    std::vector<LinkPort> ports() const;  // a snapshot
    // Charges moving `bytes` to (write) or from (read) `peer_chip` at modelled `now_ns`: on
    // the up point-to-point port to it that frees first, else striped over the switch planes
    // up at both ends (the scale-up planes within a rack, else the scale-out planes); nullopt
    // when nothing joins the two chips. A far end in this process is charged too (its
    // receive direction for a write): contention at the receiver.
    std::optional<LinkCharge> charge(unsigned peer_chip, std::uint64_t bytes, bool write,
                                     std::uint64_t now_ns);
    bool reaches(unsigned peer_chip) const;  // an up port joins the two chips
    // Why no port reaches `peer_chip` (for an error message).
    std::string no_route(unsigned peer_chip) const;
    // A transfer over port `index` failed (its peer lost): counted, and the port is down.
    void fail(unsigned index, const std::string& why);
    // Every port to `peer_chip` down (its process is gone).
    void peer_lost(unsigned peer_chip, const std::string& why);
    // Fault injection and recovery from the console.
    bool set_up(unsigned index, bool up, const std::string& why);
    // Lane `lane` of register port `port` dies for good (a fault): the port runs on until
    // the firmware retrains it, which then finds the lane dead. False for a port that is
    // not cabled or a lane past the last.
    bool kill_lane(std::uint32_t port, unsigned lane);
    // The register port number (0-11 scale-up, 12-15 scale-out) of ports()[index], or
    // JAL_LINK_PORTS for no such port.
    std::uint32_t register_port(unsigned index) const;

    // The firmware's view (JAL_MGMT_LINK registers, offsets within the block). TRAIN brings
    // a cabled port up if `reachable(peer chip)`.
    std::uint32_t fw_read(std::uint32_t offset);
    void fw_write(std::uint32_t offset, std::uint32_t value,
                  const std::function<bool(unsigned)>& reachable);
    // A chip reset: every port down until trained again; counters stay (since power-on).
    void reset();

private:
    LinkPort* physical(std::uint32_t port);  // the port behind register port number `port`
    // Whether switched ports of kind `scale_out` may carry traffic to `peer_chip`: it answers
    // and is on their planes (the scale-up planes join only the chips of one rack).
    bool routes(bool scale_out, unsigned peer_chip) const;
    struct Plane {
        LinkPort* mine;
        LinkPort* theirs;  // null: the far chip is in another process
    };
    // The planes of kind `scale_out` up at both ends; the caller holds both mutexes.
    std::vector<Plane> planes_to(bool scale_out, ChipLinks* far);
    std::optional<LinkCharge> charge_switched(bool scale_out, unsigned peer_chip,
                                              std::uint64_t bytes, bool write,
                                              std::uint64_t now_ns);
    std::size_t count_planes(bool scale_out, unsigned peer_chip);
    void train_lanes(LinkPort& p, bool there);
    void enable(LinkPort& p);

    mutable std::mutex mutex_;
    std::vector<LinkPort> ports_;
    std::uint64_t seed_;
    std::uint32_t selected_ = 0, latch_hi_ = 0, lane_sel_ = 0, lane_use_ = 0;
    LinkFabric* fabric_ = nullptr;
    unsigned self_chip_ = 0;
};

}  // namespace jal::emu
