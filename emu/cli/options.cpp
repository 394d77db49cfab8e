#include "emu/cli/options.hpp"

#include "jal/hw/admin.h"
#include "jal/hw/chip.h"

#include "jal/emu/socket_dir.hpp"
#include "tools/common/version.hpp"

#include <jal/isa/version.hpp>

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <unistd.h>

namespace jal::emu {

namespace {

// Refuses NaN and infinity; CLI::Range lets NaN through (every comparison with NaN is false).
const CLI::Validator kFinite(
    [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str()) return {};  // not a number at all: CLI11 reports that
        return std::isfinite(v) ? std::string{} : "not a finite number: " + text;
    },
    "FINITE");

std::vector<std::string_view> split(std::string_view s, char sep)
{
    std::vector<std::string_view> out;
    while (true) {
        const auto pos = s.find(sep);
        out.push_back(s.substr(0, pos));
        if (pos == std::string_view::npos) break;
        s.remove_prefix(pos + 1);
    }
    return out;
}

std::uint32_t number(std::string_view s, std::uint32_t limit, const char* what)
{
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || s.empty())
        throw std::invalid_argument(std::string("'") + std::string(s) + "' is not a " + what);
    if (v >= limit)
        throw std::invalid_argument(std::string(what) + " " + std::to_string(v) +
                                    " is out of range (0-" + std::to_string(limit - 1) + ")");
    return v;
}

#ifndef JAL_FW_IMAGE_FROM_BINDIR
#error "JAL_FW_IMAGE_FROM_BINDIR is set by emu/CMakeLists.txt (cmake/firmware_image.cmake)"
#endif

// Where the firmware image may be, in order: beside the jal-emu executable (the build tree puts
// it in build/bin), then where `cmake --install` puts it, relative to the executable's
// directory (e.g. ../share/jal/firmware) so that an installed prefix can be moved.
std::vector<std::string> firmware_image_candidates()
{
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return {"jal-fw.bin"};
    std::string path(exe, static_cast<std::size_t>(n));
    const std::string dir = path.substr(0, path.rfind('/') + 1);
    return {dir + "jal-fw.bin", dir + JAL_FW_IMAGE_FROM_BINDIR "/jal-fw.bin"};
}

// The first candidate that exists; if none does, the first (the error then names it).
std::string default_firmware_image()
{
    const auto candidates = firmware_image_candidates();
    for (const auto& path : candidates)
        if (access(path.c_str(), R_OK) == 0) return path;
    return candidates.front();
}

}  // namespace

std::uint64_t parse_slice_list(const std::string& text)
{
    std::uint64_t mask = 0;
    if (text.empty()) return 0;
    for (auto item : split(text, ',')) {
        const auto dash = item.find('-');
        if (dash == std::string_view::npos) {
            mask |= 1ull << number(item, JAL_NUM_SLICES, "slice number");
            continue;
        }
        const auto a = number(item.substr(0, dash), JAL_NUM_SLICES, "slice number");
        const auto b = number(item.substr(dash + 1), JAL_NUM_SLICES, "slice number");
        if (a > b)
            throw std::invalid_argument("slice range " + std::string(item) + " runs backwards");
        for (auto s = a; s <= b; ++s) mask |= 1ull << s;
    }
    return mask;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> parse_lane_list(const std::string& text)
{
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    if (text.empty()) return out;
    for (auto item : split(text, ',')) {
        const auto colon = item.find(':');
        if (colon == std::string_view::npos)
            throw std::invalid_argument("'" + std::string(item) + "' is not CHANNEL:LANE");
        out.emplace_back(number(item.substr(0, colon), JAL_HBM_CHANNELS, "HBM channel"),
                         number(item.substr(colon + 1), JAL_HBM_LANES, "HBM lane"));
    }
    return out;
}

namespace {
// What one client (host function) may hold; the memory limit is in GiB until parsed.
void add_client_limits(CLI::App& app, EmuOptions& o, double& memory_gib)
{
    app.add_option("--max-contexts-per-client", o.chip.max_contexts_per_fn,
                   "Contexts one client (host function) may hold, 0 = no limit (the chip has 63)")
        ->check(CLI::Range(0, 63))
        ->capture_default_str();
    app.add_option("--max-queues-per-client", o.chip.max_queues_per_fn,
                   "User queues one client may hold, 0 = no limit (the chip has 256)")
        ->check(CLI::Range(0, 256))
        ->capture_default_str();
    app.add_option("--max-memory-per-client", memory_gib,
                   "Device memory one client may hold over all its contexts, in GiB (whole "
                   "2 MiB pages, every replica counted), 0 = no limit (a chip has 216)")
        ->check(kFinite)
        ->check(CLI::Range(0.0, 216.0))
        ->capture_default_str();
}
// The GDB stub (docs/management-core.md, "Debugging the firmware with gdb").
void add_debug_options(CLI::App& app, EmuOptions& o)
{
    app.add_option("--gdb", o.gdb_port,
                   "Serve the GDB remote protocol for the firmware image's core on "
                   "127.0.0.1:PORT (chip i on PORT+i; 0 = free ports, logged as \"chipN: gdb "
                   "remote stub on 127.0.0.1:P\"); the chips boot normally until a debugger "
                   "halts them. Needs --fw image. Debug with gdb-multiarch and jal-fw.elf, "
                   "the image's ELF beside it (build/bin/jal-fw.elf; installed, <jal-emu's "
                   "directory>/" JAL_FW_IMAGE_FROM_BINDIR "/jal-fw.elf)")
        ->type_name("PORT")
        ->check(CLI::Range(0, 65535));
    app.add_flag("--gdb-wait", o.chip.debug_wait,
                 "With --gdb: hold each chip's core at reset until a debugger continues it");
}

// Cross-option rules CLI11 cannot express. Throws std::invalid_argument.
void check_debug_options(const EmuOptions& o, const std::string& fw)
{
    if (o.gdb_port < 0) {
        if (o.chip.debug_wait) throw std::invalid_argument("--gdb-wait needs --gdb PORT");
        return;
    }
    if (fw != "image")
        throw std::invalid_argument(
            "--gdb debugs the firmware image (--fw image); debug --fw native with host gdb");
    if (o.gdb_port != 0 && o.gdb_port + o.chips - 1 > 65535)
        throw std::invalid_argument("--gdb " + std::to_string(o.gdb_port) + " with " +
                                    std::to_string(o.chips) + " chips runs past port 65535");
}
// The log and the trace.
void add_output_options(CLI::App& app, EmuOptions& o)
{
    app.add_option("--log", o.log_file, "Append the log to FILE instead of stderr");
    app.add_option("--trace", o.trace_file,
                   "Write a trace Perfetto's UI (ui.perfetto.dev) opens to FILE, in the Chrome "
                   "JSON format: every chip's dispatches on each slice in modelled time, with the "
                   "stages of a staged program; each queue's packets, the admin queue's commands, "
                   "the firmware's log lines and power and clock counters (docs/emulator.md, "
                   "\"Traces\"). Complete once jal-emu exits; a large run writes tens of MB");
    app.add_option("--trace-ops", o.trace_ops,
                   "With --trace, also every engine op (DMA, matrix, vector, network: from its "
                   "start to its completion) and every stall of the scalar unit (a WAIT, a "
                   "scalar cache miss, a barrier, a STAGE's drain) of these physical slices, "
                   "e.g. 0,8-9, each named by its instruction, on tracks of their own: where "
                   "a slice's modelled time goes, op by op (docs/emulator.md, \"Traces\"). "
                   "About 100 bytes an op");
    app.add_flag("-v,--verbose", o.verbose, "Also log POST codes and debug events");
}

void check_output_options(EmuOptions& o)
{
    o.chip.trace_op_slices = parse_slice_list(o.trace_ops);
    if (o.chip.trace_op_slices && o.trace_file.empty())
        throw std::invalid_argument("--trace-ops needs --trace FILE");
}
// Several jal-emu processes as one domain over libfabric (docs/fabric.md).
void add_domain_options(CLI::App& app, EmuOptions& o)
{
    auto* domain =
        app.add_option("--domain", o.domain_file,
                       "Join the fabric domain FILE describes (JSON: the libfabric provider, "
                       "which process holds which chips and listens where, which links join "
                       "them; docs/fabric.md). Every process of the domain is started with the "
                       "same FILE and its own --process; this one serves the chips FILE gives "
                       "it, as jal0, jal1, ... in FILE's order, and reaches the others' over "
                       "libfabric. Its console's `fabric` command shows the domain's state")
            ->type_name("FILE")
            ->check(CLI::ExistingFile);
    app.add_option("--process", o.process_name, "This process's name in the --domain file")
        ->type_name("NAME")
        ->needs(domain);
    app.add_option("--join-timeout", o.join_timeout_s,
                   "Seconds the domain's other processes have to start and answer; then the "
                   "domain is marked failed (the chips keep serving on their own)")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    app.add_option("--fabric-timeout", o.fabric_timeout_s,
                   "Seconds a transfer to another process's chip may take, and a peer may stay "
                   "silent before it is declared dead")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
}
void check_domain_options(const EmuOptions& o)
{
    if (!o.domain_file.empty() && o.process_name.empty())
        throw std::invalid_argument("--domain needs --process NAME (this process's name in " +
                                    o.domain_file + ")");
}
}  // namespace

EmuOptions parse_options(int argc, char** argv)
{
    EmuOptions o;
    o.socket_dir = jal::default_emu_dir();  // where clients look
    std::string fuse, fail, lanes, fw = "image";
    o.chip.firmware_image = default_firmware_image();
    CLI::App app{
        "jal-emu: functional emulator of Jalapeno-class inference chips.\n"
        "Serves each chip on DIR/jalN.sock for userlib's direct transport and the QEMU device.\n"
        "The socket directory defaults to $JAL_EMU_DIR, else $XDG_RUNTIME_DIR/jal-emu, else "
        "/tmp/jal-emu-UID."};
    app.set_version_flag("--version",
                         jal::tools::version_text(
                             "jal-emu", {std::string("tile ISA ") + jal::isa::version_string()}));
    app.add_option("--socket-dir", o.socket_dir,
                   "Directory for the chips' sockets (created if missing)");
    app.add_option("--chips", o.chips, "Number of chips to emulate")->check(CLI::Range(1, 8));
    app.add_option("--fuse-slices", fuse, "Slices fused off at manufacturing, e.g. 3,17,40-43");
    app.add_option("--fail-slices", fail, "Slices that fail self-test at boot");
    app.add_option("--bad-lanes", lanes,
                   "Dead HBM DQ lanes as CHANNEL:LANE,... (lanes 64-67 are spares)");
    app.add_option("--seed", o.chip.seed,
                   "Seed of the modelled silicon (PHY skews, self-test times)");
    app.add_option("--load-watts", o.chip.load_watts, "Synthetic load: package watts at full clock")
        ->check(kFinite)
        ->check(CLI::Range(0.0, 5000.0));
    app.add_option("--ambient-c", o.chip.ambient_c, "Inlet temperature in degrees Celsius")
        ->check(kFinite)
        ->check(CLI::Range(-40.0, 125.0));
    app.add_option("--speed", o.chip.speed,
                   "Modelled seconds per wall-clock second when idle (0 = unpaced)")
        ->check(kFinite)
        ->check(CLI::Range(0.0, 1000.0));
    app.add_option("--fw", fw,
                   "Firmware: image (the Cortex-M7 image on Unicorn, as flashed) or native (the "
                   "same sources "
                   "built into jal-emu: faster, for debugging)")
        ->check(CLI::IsMember({"native", "image"}));
    app.add_option("--fw-image", o.chip.firmware_image,
                   "Firmware image to run with --fw image (default: the first that exists of "
                   "jal-fw.bin beside jal-emu and <jal-emu's directory>/" JAL_FW_IMAGE_FROM_BINDIR
                   "/jal-fw.bin)")
        ->capture_default_str();
    double hello_timeout_s = 5.0;
    app.add_option("--hello-timeout", hello_timeout_s,
                   "Seconds a new connection has to send HELLO before it is closed")
        ->check(CLI::Range(0.001, 3600.0))
        ->capture_default_str();
    app.add_option("--max-pending", o.session.max_pending,
                   "Connections per chip that may wait for HELLO at once; more are closed")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    double memory_gib = 0;
    add_client_limits(app, o, memory_gib);
    app.add_option("--allow-uid", o.allow_uids,
                   "Also serve clients running as this uid (repeatable; by default only the "
                   "emulator's own uid and root). Their access to the socket directory is up "
                   "to you: it must stay writable by its owner only");
    add_debug_options(app, o);
    add_output_options(app, o);
    add_domain_options(app, o);
    try {
        app.parse(argc, argv);
        o.chips_given = app.count("--chips") > 0;
        check_domain_options(o);
        o.chip.fused_slices = parse_slice_list(fuse);
        o.chip.failing_slices = parse_slice_list(fail);
        o.chip.dead_lanes = parse_lane_list(lanes);
        check_debug_options(o, fw);
        check_output_options(o);
    } catch (const CLI::ParseError& e) {
        std::exit(app.exit(e));
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "jal-emu: %s\n", e.what());
        std::exit(2);
    }
    o.chip.firmware = fw == "image" ? FirmwareMode::image : FirmwareMode::native;
    o.chip.debuggable = o.gdb_port >= 0;
    o.chip.max_memory_pages_per_fn = static_cast<std::uint32_t>(
        std::ceil(memory_gib * static_cast<double>((std::uint64_t{1} << 30) / JAL_PAGE_SIZE)));
    o.session.hello_timeout = std::chrono::milliseconds(static_cast<long>(hello_timeout_s * 1000));
    return o;
}

}  // namespace jal::emu
