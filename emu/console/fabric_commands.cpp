#include "emu/console/fabric_commands.hpp"

#include "emu/chip/chip.hpp"
#include "emu/chip/fault_injector.hpp"
#include "emu/chip/remote_memory.hpp"
#include "emu/fabric/domain.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/mgmt.h"

#include <stdexcept>

namespace jal::emu {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxBytes = 4096;

std::uint64_t number(const std::string& s, const char* what)
{
    try {
        std::size_t used = 0;
        const auto v = std::stoull(s, &used, 0);
        if (used == s.size()) return v;
    } catch (const std::exception&) {}
    throw std::invalid_argument("'" + s + "' is not a " + what);
}

std::string hex_of(const std::vector<std::byte>& bytes)
{
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (std::byte b : bytes) {
        out.push_back(digits[std::to_integer<int>(b) >> 4]);
        out.push_back(digits[std::to_integer<int>(b) & 15]);
    }
    return out;
}

std::vector<std::byte> bytes_of(const std::string& hex)
{
    if (hex.size() % 2 || hex.size() > 2 * kMaxBytes)
        throw std::invalid_argument(
            "rpoke takes an even number of hex digits (at most 4096 bytes)");
    std::vector<std::byte> out(hex.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::byte>(number("0x" + hex.substr(2 * i, 2), "hex byte string"));
    return out;
}

json domain_json(Chip& chip)
{
    const fabric::Domain* d = chip.domain();
    if (!d) return {{"domain", nullptr}, {"chip", chip.config().domain_chip}};
    const fabric::DomainStatus s = d->status();
    json peers = json::array();
    for (const auto& p : s.peers)
        peers.push_back({{"name", p.name},
                         {"address", p.address},
                         {"state", fabric::state_name(p.state)},
                         {"error", p.error.empty() ? json() : json(p.error)},
                         {"chips", p.chips}});
    return {{"chip", chip.config().domain_chip},
            {"state", fabric::state_name(s.state)},
            {"error", s.error.empty() ? json() : json(s.error)},
            {"provider", s.provider},
            {"process", s.process},
            {"peers", peers}};
}

json access_json(Chip& chip, const RemoteAccess& a)
{
    return {{"port", a.port},
            {"ports", a.ports},
            {"start_ns", a.start_ns},
            {"end_ns", a.end_ns},
            {"modelled_ns", a.end_ns - chip.clock().now_ns()}};
}

}  // namespace

json links_json(Chip& chip)
{
    json out = json::array();
    const auto ports = chip.links().ports();
    for (std::size_t i = 0; i < ports.size(); ++i) {
        const LinkPort& p = ports[i];
        out.push_back(
            {{"index", i},
             {"kind", p.config.scale_out ? "scale-out" : "scale-up"},
             {"port", p.config.port},
             {"switched", p.config.switched},
             {"peer_chip", p.config.switched ? json() : json(p.config.peer_chip)},
             {"peer_port", p.config.switched ? json() : json(p.config.peer_port)},
             {"state", p.up ? "up" : "down"},
             {"down_reason", p.up ? json() : json(p.down_reason)},
             {"lanes", p.lanes},
             {"register_port", chip.links().register_port(static_cast<unsigned>(i))},
             {"lanes_ok", p.lanes_ok},
             {"bad_lanes", p.bad_lanes},
             {"margin_mui", p.margin_mui},
             {"gbytes_per_s", p.gbytes_per_s()},
             {"latency_ns", p.config.switched && p.config.scale_out ? kScaleOutSwitchedLatencyNs
                                                                    : kLinkLatencyNs},
             {"tx_bytes", p.tx_bytes},
             {"rx_bytes", p.rx_bytes},
             {"transfers", p.transfers},
             {"errors", p.errors}});
    }
    return out;
}

std::optional<json> run_fabric_command(Chip& chip, const std::vector<std::string>& w)
{
    const std::string& cmd = w[0];
    auto need = [&](std::size_t n) {
        if (w.size() != n + 1)
            throw std::invalid_argument(cmd + " takes " + std::to_string(n) + " argument(s)");
    };
    if (cmd == "fabric") {
        need(0);
        return domain_json(chip);
    }
    if (cmd == "peer-memory") {
        // What the MMU's peer pages moved (COPY packets and tile programs), and the links'
        // modelled time for it: never less than the bytes at the links' rate.
        need(0);
        const Mmu::PeerStats s = chip.mmu().peer_stats();
        return json{{"chip", chip.config().domain_chip},
                    {"accesses", s.accesses},
                    {"bytes", s.bytes},
                    {"link_ns", s.link_ns},
                    {"failures", s.failures}};
    }
    if (cmd == "links") {
        need(0);
        return json{{"chip", chip.config().domain_chip}, {"links", links_json(chip)}};
    }
    if (cmd == "rpeek" || cmd == "rpoke") {
        need(3);
        const auto target = static_cast<unsigned>(number(w[1], "chip id"));
        const auto addr = number(w[2], "device address");
        if (cmd == "rpoke") {
            const auto data = bytes_of(w[3]);
            json j = access_json(chip, remote_write(chip, target, addr, data));
            j["written"] = data.size();
            return j;
        }
        const auto len = number(w[3], "length");
        if (len > kMaxBytes) throw std::invalid_argument("rpeek reads at most 4096 bytes");
        std::vector<std::byte> data(len);
        json j = access_json(chip, remote_read(chip, target, addr, data));
        j["hex"] = hex_of(data);
        return j;
    }
    if (cmd == "link" && w.size() == 5 && w[2] == "lane") {
        // link INDEX lane L bad: the firmware injects it, logs it and retrains the port.
        if (w[4] != "bad") throw std::invalid_argument("link PORT lane LANE takes bad");
        const auto index = static_cast<unsigned>(number(w[1], "port index"));
        const std::uint32_t port = chip.links().register_port(index);
        if (port >= JAL_LINK_PORTS)
            throw std::invalid_argument("no port " + w[1] + " (see `links`)");
        const auto lane = number(w[3], "lane");
        if (lane >= kLinkLanes) throw std::invalid_argument("a port's lanes are 0-3");
        FaultInjector::Request r;
        r.kind = JAL_DEBUG_FAULT_LINK_LANE;
        r.args = {port, static_cast<std::uint32_t>(lane), 0};
        chip.faults().queue(r);
        return json{{"index", index}, {"port", port}, {"lane", lane}, {"queued", "link_lane"}};
    }
    if (cmd == "link") {
        need(2);
        if (w[2] != "up" && w[2] != "down")
            throw std::invalid_argument("link PORT takes up or down");
        const auto index = static_cast<unsigned>(number(w[1], "port index"));
        if (!chip.links().set_up(index, w[2] == "up", "taken down from the console"))
            throw std::invalid_argument("no port " + w[1] + " (see `links`)");
        return json{{"index", index}, {"state", w[2]}};
    }
    return std::nullopt;
}

}  // namespace jal::emu
