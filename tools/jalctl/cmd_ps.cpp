// jalctl ps: who holds what on a chip: each attached client (host function) with its
// contexts, queues, allocations and device memory, and memory per logical slice.
#include <unistd.h>

#include <fmt/format.h>

#include "context.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

struct PsOptions {
    bool all_slices = false;  // every slice, not only those holding memory
};

struct Row {
    jal_usage_function usage{};
    std::optional<jal::AttachedClient> client;  // who it is, when the backend can tell
    bool self = false;
};

// Functions holding anything or attached, with whoever the backend says they are. Through
// the kernel driver every process shares function 0: its processes come as extra rows.
std::vector<Row> collect_rows(jal::ChipFunction& dev, const jal_usage& u,
                              std::vector<jal::AttachedClient>& unmatched, bool& clients_known)
{
    std::vector<jal::AttachedClient> clients;
    clients_known = true;
    try {
        clients = dev.other_clients();
    } catch (const jal::Error& e) {
        if (e.status() != JAL_STATUS_UNSUPPORTED) throw;
        clients_known = false;
    }
    std::vector<Row> rows;
    for (const jal_usage_function& f : u.functions) {
        if (!f.present && !f.contexts && !f.pages) continue;
        Row row{f, std::nullopt, f.function == dev.host_function()};
        for (auto it = clients.begin(); it != clients.end(); ++it)
            if (it->function == f.function && it->pid != 0 && !row.self) {
                row.client = *it;
                clients.erase(it);
                break;
            }
        rows.push_back(row);
    }
    unmatched = clients;
    return rows;
}

json row_json(const Row& r, const jal_usage& u)
{
    json slices = json::array();
    for (uint32_t l = 0; l < u.slices && l < JAL_NUM_SLICES; l++)
        if (r.usage.slice_pages[l])
            slices.push_back(
                {{"slice", l}, {"bytes", uint64_t{r.usage.slice_pages[l]} * u.page_size}});
    json j = {{"function", r.usage.function},
              {"present", r.usage.present != 0},
              {"self", r.self},
              {"pid", r.self     ? json(getpid())
                      : r.client ? json(r.client->pid)
                                 : json(nullptr)},
              {"process", r.self     ? json("jalctl")
                          : r.client ? json(r.client->process)
                                     : json(nullptr)},
              {"client", r.self     ? json("jalctl")
                         : r.client ? json(r.client->client_name)
                                    : json(nullptr)},
              {"contexts", r.usage.contexts},
              {"queues", r.usage.queues},
              {"allocations", r.usage.allocations},
              {"memory_bytes", uint64_t{r.usage.pages} * u.page_size},
              {"slices", slices}};
    return j;
}

json slices_json(const jal_usage& u, bool all)
{
    json slices = json::array();
    for (uint32_t l = 0; l < u.slices && l < JAL_NUM_SLICES; l++) {
        uint32_t used = u.slice_pages_total[l] - u.slice_pages_free[l];
        if (!all && used == 0) continue;
        slices.push_back({{"slice", l},
                          {"total_bytes", uint64_t{u.slice_pages_total[l]} * u.page_size},
                          {"used_bytes", uint64_t{used} * u.page_size},
                          {"free_bytes", uint64_t{u.slice_pages_free[l]} * u.page_size}});
    }
    return slices;
}

std::string cell(const json& v)
{
    return v.is_null() ? "?" : v.is_string() ? v.get<std::string>() : v.dump();
}

void print_text(const json& doc)
{
    Table clients({{"FUNCTION", Table::Align::right},
                   {"PID", Table::Align::right},
                   {"PROCESS"},
                   {"CLIENT"},
                   {"CONTEXTS", Table::Align::right},
                   {"QUEUES", Table::Align::right},
                   {"ALLOCS", Table::Align::right},
                   {"MEMORY", Table::Align::right},
                   {"SLICES"}});
    for (const json& c : doc["clients"]) {
        std::string slices;
        for (const json& s : c["slices"])
            slices += fmt::format("{}{}:{}", slices.empty() ? "" : " ", s["slice"].get<int>(),
                                  bytes_text(s["bytes"].get<uint64_t>()));
        clients.add_row({cell(c["function"]), cell(c["pid"]), cell(c["process"]), cell(c["client"]),
                         cell(c["contexts"]), cell(c["queues"]), cell(c["allocations"]),
                         bytes_text(c["memory_bytes"].get<uint64_t>()), slices});
    }
    clients.print(std::cout);
    const json& m = doc["memory"];
    std::cout << fmt::format(
        "\nmemory: {} used of {} ({:.1f}%), {} free; {} contexts, {} queues, "
        "{} allocations\n",
        bytes_text(m["used_bytes"].get<uint64_t>()), bytes_text(m["total_bytes"].get<uint64_t>()),
        m["used_percent"].get<double>(), bytes_text(m["free_bytes"].get<uint64_t>()),
        doc["contexts"].dump(), doc["queues"].dump(), doc["allocations"].dump());
    if (doc["slices"].empty()) return;
    Table slices({{"SLICE", Table::Align::right},
                  {"USED", Table::Align::right},
                  {"FREE", Table::Align::right},
                  {"TOTAL", Table::Align::right}});
    for (const json& s : doc["slices"])
        slices.add_row({cell(s["slice"]), bytes_text(s["used_bytes"].get<uint64_t>()),
                        bytes_text(s["free_bytes"].get<uint64_t>()),
                        bytes_text(s["total_bytes"].get<uint64_t>())});
    std::cout << '\n';
    slices.print(std::cout);
}

int run_ps(Context& ctx, const PsOptions& opts)
{
    jal::ChipFunction dev = ctx.open_booted();
    jal_usage u = dev.usage();
    std::vector<jal::AttachedClient> extra;
    bool clients_known = false;
    std::vector<Row> rows = collect_rows(dev, u, extra, clients_known);
    json clients = json::array();
    for (const Row& r : rows) clients.push_back(row_json(r, u));
    // Processes the backend lists beyond the functions (the kernel driver's, all on one
    // function): shown with what the driver knows of them.
    for (const auto& c : extra)
        clients.push_back({{"function", c.function},
                           {"present", true},
                           {"self", false},
                           {"pid", c.pid},
                           {"process", c.process},
                           {"client", c.client_name},
                           {"contexts", c.contexts},
                           {"queues", nullptr},
                           {"allocations", nullptr},
                           {"memory_bytes", 0},
                           {"slices", json::array()}});
    json doc = {{"device", dev.index()},    {"clients_known", clients_known},
                {"clients", clients},       {"contexts", u.contexts},
                {"queues", u.queues},       {"allocations", u.allocations},
                {"memory", memory_json(u)}, {"slices", slices_json(u, opts.all_slices)}};
    if (ctx.json)
        ctx.print_json(doc);
    else
        print_text(doc);
    return kExitOk;
}

}  // namespace

void add_ps_command(CLI::App& app, Context& ctx)
{
    auto opts = std::make_shared<PsOptions>();
    CLI::App* sub = app.add_subcommand(
        "ps",
        "Clients of a device (host functions: pid, process, name) with their contexts, queues,\n"
        "allocations and device memory per logical slice; then memory used and free, and\n"
        "memory per slice (the slices holding any; --all-slices for every one).");
    add_common_options(*sub, ctx);
    sub->add_flag("--all-slices", opts->all_slices, "List every slice, not only those in use");
    sub->callback([&ctx, opts] {
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx, opts] { return run_ps(ctx, *opts); };
    });
}

}  // namespace jal::ctl
