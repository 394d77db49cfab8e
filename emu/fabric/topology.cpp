#include "emu/fabric/topology.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace jal::emu::fabric {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxChips = 2048;  // the published scale-out domain
constexpr unsigned kMaxRackChips = 128;  // the published scale-up domain

[[noreturn]] void bad(const std::string& where, const std::string& what)
{
    throw TopologyError("topology: " + where + ": " + what);
}

const json& member(const json& obj, const char* key, const std::string& where)
{
    auto it = obj.find(key);
    if (it == obj.end()) bad(where, std::string("missing \"") + key + "\"");
    return *it;
}

std::string string_at(const json& obj, const char* key, const std::string& where)
{
    const json& v = member(obj, key, where);
    if (!v.is_string() || v.get<std::string>().empty())
        bad(where + "." + key, "must be a non-empty string");
    return v.get<std::string>();
}

unsigned unsigned_at(const json& v, const std::string& where, unsigned limit)
{
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= limit)
        bad(where, "must be a whole number below " + std::to_string(limit));
    return static_cast<unsigned>(v.get<std::uint64_t>());
}

// "host:port" (tcp) into node and service; other providers take the address as the node.
void split_address(const std::string& provider, const std::string& address,
                   const std::string& where, TopologyProcess& p)
{
    if (provider != "tcp") {
        p.node = address;
        return;
    }
    const std::size_t colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
        bad(where, "\"" + address + "\" is not host:port");
    p.node = address.substr(0, colon);
    p.service = address.substr(colon + 1);
    const std::string& s = p.service;
    const bool digits = s.find_first_not_of("0123456789") == std::string::npos && s.size() <= 5;
    if (!digits || std::stoul(s) == 0 || std::stoul(s) > 65535)
        bad(where, "port \"" + s + "\" is not 1..65535");
}

TopologyProcess parse_process(const json& j, const std::string& provider, const std::string& where)
{
    if (!j.is_object()) bad(where, "must be an object");
    TopologyProcess p;
    p.name = string_at(j, "name", where);
    split_address(provider, string_at(j, "address", where), where + ".address", p);
    const json& chips = member(j, "chips", where);
    if (!chips.is_array() || chips.empty()) bad(where + ".chips", "must be a non-empty array");
    for (std::size_t i = 0; i < chips.size(); ++i)
        p.chips.push_back(
            unsigned_at(chips[i], where + ".chips[" + std::to_string(i) + "]", kMaxChips));
    return p;
}

// [chip, port] of a link's end.
std::pair<unsigned, unsigned> link_end(const json& j, const std::string& where)
{
    if (!j.is_array() || j.size() != 2) bad(where, "must be [chip, port]");
    return {unsigned_at(j[0], where + "[0]", kMaxChips),
            unsigned_at(j[1], where + "[1]", 1u << 16)};
}

TopologyLink parse_link(const json& j, const std::string& where)
{
    if (!j.is_object()) bad(where, "must be an object");
    TopologyLink l;
    const std::string kind = string_at(j, "kind", where);
    if (kind == "scale-up")
        l.kind = LinkKind::scale_up;
    else if (kind == "scale-out")
        l.kind = LinkKind::scale_out;
    else
        bad(where + ".kind", "\"" + kind + "\" is neither \"scale-up\" nor \"scale-out\"");
    std::tie(l.chip_a, l.port_a) = link_end(member(j, "a", where), where + ".a");
    std::tie(l.chip_b, l.port_b) = link_end(member(j, "b", where), where + ".b");
    return l;
}

// "links" (point to point, the default) or "switched".
bool switched_at(const json& j, const char* key)
{
    if (!j.contains(key)) return false;
    const std::string v = string_at(j, key, "the document");
    if (v != "switched" && v != "links")
        bad(key, "\"" + v + "\" is neither \"switched\" nor \"links\"");
    return v == "switched";
}

void parse_switching(const json& j, Topology& t)
{
    t.scale_up_switched = switched_at(j, "scale_up");
    t.scale_out_switched = switched_at(j, "scale_out");
    if (j.contains("rack_chips")) {
        t.rack_chips = unsigned_at(j["rack_chips"], "rack_chips", kMaxRackChips + 1);
        if (t.rack_chips == 0) bad("rack_chips", "must be 1..128");
        if (!t.scale_up_switched) bad("rack_chips", "needs \"scale_up\": \"switched\"");
    }
}

// Every chip 0..N-1 held once; processes named once.
void check_processes(const Topology& t)
{
    std::set<std::string> names;
    std::map<unsigned, std::string> held;
    for (std::size_t i = 0; i < t.processes.size(); ++i) {
        const TopologyProcess& p = t.processes[i];
        const std::string where = "processes[" + std::to_string(i) + "]";
        if (!names.insert(p.name).second) bad(where + ".name", "\"" + p.name + "\" appears twice");
        for (unsigned c : p.chips) {
            auto [it, fresh] = held.emplace(c, p.name);
            if (!fresh)
                bad(where + ".chips",
                    "chip " + std::to_string(c) + " is already held by \"" + it->second + "\"");
        }
    }
    if (held.size() > kMaxChips) bad("processes", "more than 2048 chips");
    for (unsigned c = 0; c < held.size(); ++c)
        if (!held.count(c))
            bad("processes", "chip ids must be 0.." + std::to_string(held.size() - 1) +
                                 " without gaps; " + std::to_string(c) + " is missing");
}

// Links join two different chips of the domain on ports that exist, each port once.
void check_links(const Topology& t)
{
    std::set<std::tuple<unsigned, LinkKind, unsigned>> used;
    const std::size_t chips = t.chip_count();
    for (std::size_t i = 0; i < t.links.size(); ++i) {
        const TopologyLink& l = t.links[i];
        const std::string where = "links[" + std::to_string(i) + "]";
        const unsigned ports = l.kind == LinkKind::scale_up ? kScaleUpPorts : kScaleOutPorts;
        const bool up = l.kind == LinkKind::scale_up;
        if (up ? t.scale_up_switched : t.scale_out_switched)
            bad(where, std::string("the ") + (up ? "scale-up" : "scale-out") +
                           " ports are switched (\"" + (up ? "scale_up" : "scale_out") +
                           "\": \"switched\"): no " + (up ? "scale-up" : "scale-out") +
                           " link may join them point to point");
        for (auto [chip, port, end] :
             {std::tuple{l.chip_a, l.port_a, ".a"}, std::tuple{l.chip_b, l.port_b, ".b"}}) {
            if (chip >= chips)
                bad(where + end, "chip " + std::to_string(chip) + " is in no process");
            if (port >= ports)
                bad(where + end, "a chip has " + std::to_string(ports) + " " +
                                     (l.kind == LinkKind::scale_up ? "scale-up" : "scale-out") +
                                     " ports (0.." + std::to_string(ports - 1) + ")");
            if (!used.emplace(chip, l.kind, port).second)
                bad(where + end, "chip " + std::to_string(chip) + " port " + std::to_string(port) +
                                     " is already linked");
        }
        if (l.chip_a == l.chip_b) bad(where, "a link joins two different chips");
    }
}

}  // namespace

const TopologyProcess* Topology::holder(unsigned chip) const
{
    for (const TopologyProcess& p : processes)
        for (unsigned c : p.chips)
            if (c == chip) return &p;
    return nullptr;
}

std::size_t Topology::chip_count() const
{
    std::size_t n = 0;
    for (const TopologyProcess& p : processes) n += p.chips.size();
    return n;
}

Topology parse_topology(const std::string& text)
{
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        bad("not JSON", e.what());
    }
    if (!j.is_object()) bad("the document", "must be an object");
    Topology t;
    if (j.contains("provider")) t.provider = string_at(j, "provider", "the document");
    parse_switching(j, t);
    const json& procs = member(j, "processes", "the document");
    if (!procs.is_array() || procs.empty()) bad("processes", "must be a non-empty array");
    for (std::size_t i = 0; i < procs.size(); ++i)
        t.processes.push_back(
            parse_process(procs[i], t.provider, "processes[" + std::to_string(i) + "]"));
    if (j.contains("links")) {
        const json& links = j["links"];
        if (!links.is_array()) bad("links", "must be an array");
        for (std::size_t i = 0; i < links.size(); ++i)
            t.links.push_back(parse_link(links[i], "links[" + std::to_string(i) + "]"));
    }
    check_processes(t);
    check_links(t);
    return t;
}

Topology load_topology(const std::string& path)
{
    std::ifstream in(path);
    if (!in) throw TopologyError("topology: cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_topology(ss.str());
}

}  // namespace jal::emu::fabric
