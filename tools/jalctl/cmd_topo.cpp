// jalctl topo: which chip reaches which over the fabric, like nvidia-smi topo -m: a matrix
// of the chips jalctl sees against every chip their ports lead to (over which kind of link,
// how many ports up, at what speed), and with --ports each port's training and counters.
// Chips in other jal-emu processes appear as columns, named by their domain chip id.
#include <fmt/format.h>

#include <map>
#include <set>

#include <jal/hw/admin.h>
#include <jal/hw/events.h>
#include <jal/hw/mgmt.h>

#include "context.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

struct TopoOptions {
    bool ports = false;
};

struct ChipLinks {
    unsigned device = 0;
    jal::LinkReport report;
};

std::vector<ChipLinks> read_reports(Context& ctx)
{
    std::vector<unsigned> devices;
    if (!ctx.all_devices) {
        devices.push_back(ctx.device);
    } else {
        for (const auto& entry : jal::ChipFunction::enumerate(ctx.socket_dir()))
            devices.push_back(entry.index);
        if (devices.empty())
            throw jal::Error(JAL_STATUS_NO_DEVICE,
                             fmt::format("no devices found in {} (is jal-emu running? set "
                                         "JAL_EMU_DIR)",
                                         ctx.socket_dir()));
    }
    std::vector<ChipLinks> out;
    for (unsigned d : devices) {
        ctx.device = d;
        jal::ChipFunction dev = ctx.open_booted(true);
        out.push_back({d, dev.link_report(0, JAL_LINK_PORTS)});
    }
    return out;
}

// What joins one chip to one peer: ports of each kind, how many up, their width and speed.
struct PeerLinks {
    unsigned scale_up = 0, scale_out = 0, up = 0, lanes = 0, degraded = 0;
    double gbytes_per_s = 0;
};

std::map<unsigned, PeerLinks> peers_of(const jal::LinkReport& r)
{
    std::map<unsigned, PeerLinks> peers;
    for (const jal_link_port_report& p : r.ports) {
        if (p.state == JAL_LINK_PORT_NOT_CABLED || (p.flags & JAL_LINK_PORT_SWITCHED)) continue;
        PeerLinks& l = peers[p.peer_chip];
        (p.kind == JAL_LINK_KIND_SCALE_OUT ? l.scale_out : l.scale_up)++;
        if (p.state == JAL_LINK_PORT_UP || p.state == JAL_LINK_PORT_DEGRADED) {
            l.up++;
            l.lanes += p.lanes;
            l.gbytes_per_s += p.mbytes_per_s / 1000.0;
        }
        l.degraded += p.state == JAL_LINK_PORT_DEGRADED;
    }
    return peers;
}

json peer_json(unsigned chip, const PeerLinks& l)
{
    return {{"chip", chip},
            {"kind", l.scale_up && l.scale_out ? "mixed"
                     : l.scale_out             ? "scale-out"
                                               : "scale-up"},
            {"ports", l.scale_up + l.scale_out},
            {"ports_up", l.up},
            {"ports_degraded", l.degraded},
            {"lanes", l.lanes},
            {"gbytes_per_s", l.gbytes_per_s}};
}

json chip_json(const ChipLinks& c)
{
    const jal_link_report_header& h = c.report.header;
    json ports = json::array(), peers = json::array();
    for (const jal_link_port_report& p : c.report.ports)
        if (p.state != JAL_LINK_PORT_NOT_CABLED) ports.push_back(link_port_json(p));
    for (const auto& [chip, l] : peers_of(c.report)) peers.push_back(peer_json(chip, l));
    return {{"device", c.device},
            {"chip", h.self_chip},
            {"ports_cabled", h.ports_cabled},
            {"ports_up", h.ports_up},
            {"ports_degraded", h.ports_degraded},
            {"peers", peers},
            {"ports", ports}};
}

// A matrix cell: SU (scale-up) or SO (scale-out) and the ports up, "/N" when some of the N
// cabled are down, the speed each way, "*" when a port runs on fewer lanes.
std::string cell(const PeerLinks& l)
{
    const std::string kind = l.scale_up && l.scale_out ? "SX" : l.scale_out ? "SO" : "SU";
    const unsigned cabled = l.scale_up + l.scale_out;
    std::string s = kind + std::to_string(l.up);
    if (l.up < cabled) s += "/" + std::to_string(cabled);
    if (l.up) s += fmt::format(" {:g}G", l.gbytes_per_s);
    if (l.degraded) s += "*";
    return s;
}

void print_matrix(const std::vector<ChipLinks>& chips)
{
    std::set<unsigned> columns;
    for (const ChipLinks& c : chips) {
        columns.insert(c.report.header.self_chip);
        for (const auto& [chip, l] : peers_of(c.report)) columns.insert(chip);
    }
    std::vector<Table::Column> header{{"CHIP"}, {"DEV", Table::Align::right}};
    for (unsigned col : columns) header.push_back({fmt::format("chip{}", col)});
    Table table(header);
    for (const ChipLinks& c : chips) {
        const auto peers = peers_of(c.report);
        std::vector<std::string> row{fmt::format("chip{}", c.report.header.self_chip),
                                     std::to_string(c.device)};
        for (unsigned col : columns) {
            const auto it = peers.find(col);
            row.push_back(col == c.report.header.self_chip ? "X"
                          : it == peers.end()              ? "-"
                                                           : cell(it->second));
        }
        table.add_row(row);
    }
    table.print(std::cout);
    std::cout << "\nSU = scale-up ports, SO = scale-out, SX = both; the count is the ports up "
                 "(/N: of N cabled),\nthen GB/s each way over them; * = a port on fewer "
                 "lanes (degraded); - = no link; X = itself.\n";
}

void print_ports(const ChipLinks& c)
{
    std::cout << fmt::format("\nchip{} (device {}): {} ports cabled, {} up, {} degraded\n",
                             c.report.header.self_chip, c.device, c.report.header.ports_cabled,
                             c.report.header.ports_up, c.report.header.ports_degraded);
    Table table({{"PORT", Table::Align::right},
                 {"KIND"},
                 {"PEER"},
                 {"STATE"},
                 {"REASON"},
                 {"LANES", Table::Align::right},
                 {"GB/s", Table::Align::right},
                 {"MARGINS mUI"},
                 {"RETRAINS", Table::Align::right},
                 {"ERRORS", Table::Align::right},
                 {"TX", Table::Align::right},
                 {"RX", Table::Align::right},
                 {"TRANSFERS", Table::Align::right}});
    for (const jal_link_port_report& p : c.report.ports) {
        if (p.state == JAL_LINK_PORT_NOT_CABLED) continue;
        std::string margins;
        for (uint16_t m : p.margin_mui) margins += (margins.empty() ? "" : ",") + std::to_string(m);
        const std::string peer = (p.flags & JAL_LINK_PORT_SWITCHED)
                                     ? fmt::format("plane{}", p.peer_port)
                                     : fmt::format("chip{}:{}", p.peer_chip, p.peer_port);
        table.add_row(
            {std::to_string(p.port), p.kind == JAL_LINK_KIND_SCALE_OUT ? "scale-out" : "scale-up",
             peer, link_state_name(p.state), p.reason ? jal_link_down_reason_name(p.reason) : "-",
             std::to_string(p.lanes), fmt::format("{:g}", p.mbytes_per_s / 1000.0), margins,
             std::to_string(p.retrains), std::to_string(p.errors), bytes_text(p.tx_bytes),
             bytes_text(p.rx_bytes), std::to_string(p.transfers)});
    }
    table.print(std::cout);
}

int run_topo(Context& ctx, const TopoOptions& opts)
{
    const std::vector<ChipLinks> chips = read_reports(ctx);
    if (ctx.json) {
        json list = json::array();
        for (const ChipLinks& c : chips) list.push_back(chip_json(c));
        ctx.print_json({{"chips", list}});
        return kExitOk;
    }
    bool any = false;
    for (const ChipLinks& c : chips) any |= c.report.header.ports_cabled != 0;
    if (!any) {
        std::cout << (chips.size() == 1 ? "no fabric links: this chip is not in a domain\n"
                                        : "no fabric links: these chips are not in a domain\n");
        return kExitOk;
    }
    print_matrix(chips);
    if (opts.ports)
        for (const ChipLinks& c : chips) print_ports(c);
    return kExitOk;
}

}  // namespace

void add_topo_command(CLI::App& app, Context& ctx)
{
    auto opts = std::make_shared<TopoOptions>();
    CLI::App* sub = app.add_subcommand(
        "topo",
        "Fabric topology, like nvidia-smi topo -m: which chip reaches which, over scale-up (SU)\n"
        "or scale-out (SO) ports, how many are up and at what speed (GB/s each way; * marks a\n"
        "port trained on fewer lanes). -d all: every device as a row; chips in other jal-emu\n"
        "processes appear as columns by domain chip id. --ports: each port's peer, state, lanes,\n"
        "eye margins, retrains, errors and byte counters.");
    add_common_options(*sub, ctx);
    sub->add_flag("--ports", opts->ports, "Also list every cabled port of each chip");
    sub->callback([&ctx, opts] {
        ctx.all_mode = Context::AllDevices::self;
        ctx.action = [&ctx, opts] { return run_topo(ctx, *opts); };
    });
}

}  // namespace jal::ctl
