// jalctl debug inject FAULT [ARGS]: a fault injected at run time through the admin
// DEBUG_FAULT command (privileged: through jal.ko it needs CAP_SYS_ADMIN). The firmware
// injects it, logs it (`jalctl log`) and recovers as docs/reliability.md ("Fault model")
// says.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <jal/error.hpp>
#include <jal/hw/admin.h>
#include <jal/hw/chip.h>
#include <jal/hw/events.h>
#include <jal/hw/mgmt.h>

#include "context.hpp"
#include "exit_codes.hpp"

namespace jal::ctl {

namespace {

struct Fault {
    const char* name;
    uint32_t kind;
    const char* args;  // usage
    const char* what;
};

constexpr Fault kFaults[] = {
    {"slice-fail", JAL_DEBUG_FAULT_SLICE_FAIL, "SLICE",
     "the dispatch running on logical slice SLICE (or the next to use it) fails HW_FAILED"},
    {"slice-hang", JAL_DEBUG_FAULT_SLICE_HANG, "SLICE",
     "logical slice SLICE hangs: its dispatch fails TIMEOUT after the 100 ms dispatch timeout"},
    {"hbm-lane", JAL_DEBUG_FAULT_HBM_LANE, "CHANNEL LANE",
     "a lane (0-67) of an HBM channel dies; the firmware retrains the channel (a spare "
     "repairs it, or it fails and leaves service)"},
    {"link-lane", JAL_DEBUG_FAULT_LINK_LANE, "PORT LANE",
     "lane LANE (0-3) of fabric port PORT (0-15, as `jalctl topo --ports` numbers them) dies; "
     "the firmware retrains the port (up on fewer lanes, or down)"},
    {"ecc-corrected", JAL_DEBUG_FAULT_ECC_CORRECTED, "CHANNEL [COUNT]",
     "COUNT (1-1000, default 1) correctable ECC errors on a channel: counted, nothing lost"},
    {"ecc-uncorrected", JAL_DEBUG_FAULT_ECC_UNCORRECTED, "CHANNEL PAGE",
     "an uncorrectable error poisons page PAGE (0-575) of a channel: reads of it fail "
     "ECC_UNCORRECTED, the page is retired"},
    {"ambient", JAL_DEBUG_FAULT_AMBIENT, "CELSIUS",
     "the inlet temperature becomes CELSIUS (-40-150)"},
    {"load", JAL_DEBUG_FAULT_LOAD, "WATTS", "a synthetic load of WATTS (0-1000; 0 ends it)"},
    {"crash", JAL_DEBUG_FAULT_CRASH, "",
     "the firmware crashes; the watchdog resets the management core"},
    {"hang-main-loop", JAL_DEBUG_FAULT_HANG_MAIN_LOOP, "",
     "the firmware stops feeding its watchdog, which resets the management core"},
};

[[noreturn]] void usage_error(const std::string& msg)
{
    throw CLI::ValidationError("debug inject", msg);
}

uint32_t number(const std::string& s, const char* what, uint64_t max)
{
    uint64_t v = 0;
    try {
        size_t used = 0;
        v = std::stoull(s, &used, 0);
        if (used != s.size() || s[0] == '-') throw std::invalid_argument(s);
    } catch (const std::exception&) {
        usage_error(fmt::format("'{}' is not a {}", s, what));
    }
    if (v > max) usage_error(fmt::format("{} {} is out of range (0-{})", what, s, max));
    return static_cast<uint32_t>(v);
}

uint32_t celsius_mc(const std::string& s)
{
    double c = 0;
    try {
        size_t used = 0;
        c = std::stod(s, &used);
        if (used != s.size()) throw std::invalid_argument(s);
    } catch (const std::exception&) {
        usage_error(fmt::format("'{}' is not a temperature in degrees C", s));
    }
    if (!(c >= -40 && c <= 150)) usage_error(fmt::format("ambient {} C is outside -40..150 C", s));
    return static_cast<uint32_t>(static_cast<int32_t>(std::lround(c * 1000)));
}

const Fault& find_fault(const std::string& name)
{
    for (const Fault& f : kFaults)
        if (name == f.name) return f;
    std::string names;
    for (const Fault& f : kFaults) names += std::string(names.empty() ? "" : ", ") + f.name;
    usage_error(fmt::format("unknown fault '{}'; faults: {}", name, names));
}

// The DEBUG_FAULT arguments of `f` from the command line's words after its name.
std::array<uint32_t, 3> parse_args(const Fault& f, const std::vector<std::string>& a)
{
    const size_t want = f.args[0] ? std::count(f.args, f.args + std::strlen(f.args), ' ') + 1 : 0;
    const bool optional_last = std::strchr(f.args, '[') != nullptr;
    if (a.size() > want || a.size() + (optional_last ? 1 : 0) < want)
        usage_error(fmt::format("usage: jalctl debug inject {} {}", f.name, f.args));
    std::array<uint32_t, 3> r{};
    switch (f.kind) {
    case JAL_DEBUG_FAULT_SLICE_FAIL:
    case JAL_DEBUG_FAULT_SLICE_HANG:
        r[0] = number(a[0], "logical slice", JAL_NUM_SLICES - 1);
        break;
    case JAL_DEBUG_FAULT_HBM_LANE:
        r[0] = number(a[0], "channel", JAL_HBM_CHANNELS - 1);
        r[1] = number(a[1], "lane", JAL_HBM_LANES - 1);
        break;
    case JAL_DEBUG_FAULT_LINK_LANE:
        r[0] = number(a[0], "fabric port", JAL_LINK_PORTS - 1);
        r[1] = number(a[1], "link lane", JAL_LINK_LANES - 1);
        break;
    case JAL_DEBUG_FAULT_ECC_CORRECTED:
        r[0] = number(a[0], "channel", JAL_HBM_CHANNELS - 1);
        r[1] = a.size() > 1 ? number(a[1], "error count", JAL_DEBUG_ECC_MAX) : 1;
        if (r[1] == 0) usage_error("the error count must be at least 1");
        break;
    case JAL_DEBUG_FAULT_ECC_UNCORRECTED:
        r[0] = number(a[0], "channel", JAL_HBM_CHANNELS - 1);
        r[1] = number(a[1], "page", JAL_HBM_CHANNEL_BYTES / JAL_PAGE_SIZE - 1);
        break;
    case JAL_DEBUG_FAULT_AMBIENT:
        r[0] = celsius_mc(a[0]);
        break;
    case JAL_DEBUG_FAULT_LOAD:
        r[0] = number(a[0], "load in watts", 1000);
        break;
    default:
        break;
    }
    return r;
}

int run_inject(Context& ctx, const Fault& f, const std::array<uint32_t, 3>& args)
{
    jal::ChipFunction dev = ctx.open_booted();
    jal_admin_sqe sqe{};
    sqe.opcode = JAL_ADMIN_DEBUG_FAULT;
    sqe.cdw[0] = f.kind;
    for (size_t i = 0; i < args.size(); ++i) sqe.cdw[1 + i] = args[i];
    const jal::RawAdminResult r = dev.admin_execute_raw(sqe);
    if (r.completion.status != JAL_STATUS_OK)
        throw jal::Error(r.completion.status,
                         fmt::format("device {}: the firmware refused fault {}: {}", dev.index(),
                                     f.name, jal_status_name(r.completion.status)));
    const bool resets = f.kind == JAL_DEBUG_FAULT_CRASH || f.kind == JAL_DEBUG_FAULT_HANG_MAIN_LOOP;
    if (ctx.json) {
        ctx.print_json({{"device", dev.index()},
                        {"fault", jal_debug_fault_name(f.kind)},
                        {"args", {args[0], args[1], args[2]}},
                        {"injected", true},
                        {"watchdog_reset_expected", resets}});
        return kExitOk;
    }
    std::cout << fmt::format("device {}: injected {}{}; `jalctl log` shows what followed\n",
                             dev.index(), f.name,
                             resets ? " (the watchdog will reset the management core)" : "");
    return kExitOk;
}

std::string inject_help()
{
    std::string h =
        "Inject a fault at run time (bring-up and tests; privileged: through jal.ko it needs\n"
        "CAP_SYS_ADMIN). Slices are logical, as `jalctl slices` numbers them. Faults:\n";
    for (const Fault& f : kFaults) h += fmt::format("  {} {}\n      {}\n", f.name, f.args, f.what);
    return h;
}

}  // namespace

void add_debug_command(CLI::App& app, Context& ctx)
{
    CLI::App* sub = app.add_subcommand("debug", "Bring-up and test aids (privileged)");
    add_common_options(*sub, ctx);
    sub->require_subcommand(1);
    auto words = std::make_shared<std::vector<std::string>>();
    CLI::App* inject = sub->add_subcommand("inject", inject_help());
    add_common_options(*inject, ctx);
    inject->add_option("FAULT ARGS", *words, "The fault's name, then its arguments")->required();
    inject->callback([&ctx, words] {
        const Fault& f = find_fault(words->front());
        const auto args = parse_args(f, {words->begin() + 1, words->end()});
        ctx.action = [&ctx, &f, args] { return run_inject(ctx, f, args); };
    });
}

}  // namespace jal::ctl
