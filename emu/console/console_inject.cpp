#include "emu/console/console_inject.hpp"

#include "emu/chip/chip.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/chip.h"
#include "jal/hw/events.h"
#include "jal/hw/mgmt.h"

#include <cmath>
#include <stdexcept>

namespace jal::emu {

const char* const kInjectHelp =
    "inject slice-fail SLICE | slice-hang SLICE | hbm-lane CHANNEL LANE | link-lane PORT LANE | "
    "ecc-corrected CHANNEL [COUNT] | ecc-uncorrected CHANNEL PAGE | ambient CELSIUS | "
    "load WATTS | crash | hang-main-loop";

namespace {

struct Kind {
    const char* name;
    std::uint32_t kind;
    std::size_t min_args, max_args;
};

constexpr Kind kKinds[] = {
    {"slice-fail", JAL_DEBUG_FAULT_SLICE_FAIL, 1, 1},
    {"slice-hang", JAL_DEBUG_FAULT_SLICE_HANG, 1, 1},
    {"hbm-lane", JAL_DEBUG_FAULT_HBM_LANE, 2, 2},
    {"link-lane", JAL_DEBUG_FAULT_LINK_LANE, 2, 2},
    {"ecc-corrected", JAL_DEBUG_FAULT_ECC_CORRECTED, 1, 2},
    {"ecc-uncorrected", JAL_DEBUG_FAULT_ECC_UNCORRECTED, 2, 2},
    {"ambient", JAL_DEBUG_FAULT_AMBIENT, 1, 1},
    {"load", JAL_DEBUG_FAULT_LOAD, 1, 1},
    {"crash", JAL_DEBUG_FAULT_CRASH, 0, 0},
    {"hang-main-loop", JAL_DEBUG_FAULT_HANG_MAIN_LOOP, 0, 0},
};

std::uint32_t number(const std::string& s, const char* what, std::uint64_t max)
{
    std::uint64_t v = 0;
    try {
        std::size_t used = 0;
        v = std::stoull(s, &used, 0);
        if (used != s.size() || s[0] == '-') throw std::invalid_argument(s);
    } catch (const std::exception&) {
        throw std::invalid_argument("'" + s + "' is not a " + what);
    }
    if (v > max)
        throw std::invalid_argument(std::string(what) + " " + s + " is out of range (0-" +
                                    std::to_string(max) + ")");
    return static_cast<std::uint32_t>(v);
}

std::uint32_t celsius_mc(const std::string& s)
{
    double c = 0;
    try {
        std::size_t used = 0;
        c = std::stod(s, &used);
        if (used != s.size()) throw std::invalid_argument(s);
    } catch (const std::exception&) {
        throw std::invalid_argument("'" + s + "' is not a temperature in degrees C");
    }
    if (!(c >= -40 && c <= 150))
        throw std::invalid_argument("ambient " + s + " C is outside -40..150 C");
    return static_cast<std::uint32_t>(static_cast<std::int32_t>(std::lround(c * 1000)));
}

FaultInjector::Request parse(const Kind& k, const std::vector<std::string>& w)
{
    FaultInjector::Request r;
    r.kind = k.kind;
    const auto arg = [&](std::size_t i) -> const std::string& { return w[2 + i]; };
    switch (k.kind) {
    case JAL_DEBUG_FAULT_SLICE_FAIL:
    case JAL_DEBUG_FAULT_SLICE_HANG:
        r.args[0] = number(arg(0), "logical slice", JAL_NUM_SLICES - 1);
        break;
    case JAL_DEBUG_FAULT_HBM_LANE:
        r.args[0] = number(arg(0), "channel", JAL_HBM_CHANNELS - 1);
        r.args[1] = number(arg(1), "lane", JAL_HBM_LANES - 1);
        break;
    case JAL_DEBUG_FAULT_LINK_LANE:
        r.args[0] = number(arg(0), "fabric port", JAL_LINK_PORTS - 1);
        r.args[1] = number(arg(1), "link lane", JAL_LINK_LANES - 1);
        break;
    case JAL_DEBUG_FAULT_ECC_CORRECTED:
        r.args[0] = number(arg(0), "channel", JAL_HBM_CHANNELS - 1);
        r.args[1] = w.size() > 3 ? number(arg(1), "error count", JAL_DEBUG_ECC_MAX) : 1;
        if (r.args[1] == 0) throw std::invalid_argument("error count must be at least 1");
        break;
    case JAL_DEBUG_FAULT_ECC_UNCORRECTED:
        r.args[0] = number(arg(0), "channel", JAL_HBM_CHANNELS - 1);
        r.args[1] = number(arg(1), "page", JAL_HBM_CHANNEL_BYTES / JAL_PAGE_SIZE - 1);
        break;
    case JAL_DEBUG_FAULT_AMBIENT:
        r.args[0] = celsius_mc(arg(0));
        break;
    case JAL_DEBUG_FAULT_LOAD:
        r.args[0] = number(arg(0), "load in watts", 1000);
        break;
    default:
        break;
    }
    return r;
}

}  // namespace

nlohmann::json inject_command(Chip& chip, const std::vector<std::string>& w)
{
    if (w.size() < 2) throw std::invalid_argument(std::string("usage: ") + kInjectHelp);
    for (const Kind& k : kKinds) {
        if (w[1] != k.name) continue;
        const std::size_t n = w.size() - 2;
        if (n < k.min_args || n > k.max_args)
            throw std::invalid_argument(std::string("usage: ") + kInjectHelp);
        const FaultInjector::Request r = parse(k, w);
        chip.faults().queue(r);
        // The firmware injects it when it next runs; `jalctl log` shows the debug_fault event.
        return {{"queued", jal_debug_fault_name(r.kind)},
                {"args", {r.args[0], r.args[1], r.args[2]}},
                {"pending", chip.faults().pending()}};
    }
    throw std::invalid_argument("unknown fault '" + w[1] + "'; " + kInjectHelp);
}

}  // namespace jal::emu
