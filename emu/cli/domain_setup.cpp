#include "emu/cli/domain_setup.hpp"

#include "emu/chip/chip.hpp"
#include "jal/hw/chip.h"

#include <stdexcept>

namespace jal::emu {

namespace {

// Every port of a switched kind on its plane.
void switched_ports(bool scale_out, std::vector<LinkPortConfig>& out)
{
    const unsigned n = scale_out ? fabric::kScaleOutPorts : fabric::kScaleUpPorts;
    for (unsigned p = 0; p < n; ++p) out.push_back({scale_out, p, 0, 0, true});
}

std::vector<LinkPortConfig> ports_of(const fabric::Topology& t, unsigned chip)
{
    std::vector<LinkPortConfig> out;
    if (t.scale_up_switched) switched_ports(false, out);
    if (t.scale_out_switched) switched_ports(true, out);
    for (const fabric::TopologyLink& l : t.links) {
        const bool out_kind = l.kind == fabric::LinkKind::scale_out;
        if (l.chip_a == chip) out.push_back({out_kind, l.port_a, l.chip_b, l.port_b});
        if (l.chip_b == chip) out.push_back({out_kind, l.port_b, l.chip_a, l.port_a});
    }
    return out;
}

}  // namespace

std::optional<DomainPlan> plan_domain(const EmuOptions& o)
{
    if (o.domain_file.empty()) return std::nullopt;
    DomainPlan plan;
    plan.topology = fabric::load_topology(o.domain_file);
    const fabric::TopologyProcess* me = nullptr;
    for (const auto& p : plan.topology.processes)
        if (p.name == o.process_name) me = &p;
    if (!me)
        throw std::runtime_error(o.domain_file + " names no process \"" + o.process_name + "\"");
    if (me->chips.size() > 8)
        throw std::runtime_error(o.domain_file + ": process \"" + me->name +
                                 "\" holds more chips than one jal-emu serves (8)");
    if (o.chips_given && o.chips != me->chips.size())
        throw std::runtime_error("--chips " + std::to_string(o.chips) + " but " + o.domain_file +
                                 " gives process \"" + me->name + "\" " +
                                 std::to_string(me->chips.size()) + " chip(s)");
    plan.chips = me->chips;
    for (unsigned c : plan.chips) plan.links.push_back(ports_of(plan.topology, c));
    const fabric::Topology& t = plan.topology;
    plan.switches = {t.scale_up_switched, t.scale_out_switched, t.rack_chips,
                     static_cast<unsigned>(t.chip_count())};
    return plan;
}

DomainPlan plan_tray(unsigned chips)
{
    DomainPlan plan;
    plan.switches = {true, false, kMaxRackChips, chips};
    for (unsigned c = 0; c < chips; ++c) {
        plan.chips.push_back(c);
        plan.links.emplace_back();
        switched_ports(false, plan.links.back());
    }
    return plan;
}

std::unique_ptr<fabric::Domain> join_domain(const DomainPlan& plan, const EmuOptions& o,
                                            const std::vector<std::unique_ptr<Chip>>& chips,
                                            LinkFabric& fabric)
{
    std::vector<fabric::LocalChipMemory> memory;
    for (const auto& c : chips) {
        const auto all = c->hbm().range(0, c->hbm().size());
        memory.push_back({all.data(), all.size()});
    }
    fabric::DomainOptions d;
    d.process = o.process_name;
    d.join_timeout = std::chrono::milliseconds(static_cast<long>(o.join_timeout_s * 1000));
    d.op_timeout = std::chrono::milliseconds(static_cast<long>(o.fabric_timeout_s * 1000));
    auto domain = std::make_unique<fabric::Domain>(plan.topology, d, memory);
    for (const auto& c : chips) c->attach_domain(domain.get());
    fabric.set_remote([joined = domain.get()](unsigned chip) { return joined->reachable(chip); });
    return domain;
}

}  // namespace jal::emu
