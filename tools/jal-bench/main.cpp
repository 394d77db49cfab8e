// jal-bench: benchmarks of the Jalapeño stack that print figures. `jal-bench host` measures
// the host stack (libjal and the emulator's transport), `jal-bench kernels` the kernel
// library's linear kernels, `jal-bench dispatch` the emulator's wall-clock cost of one
// dispatch, `jal-bench mma` the matrix engine's arithmetic alone (no emulator), `jal-bench
// memory` the host's read and copy bandwidth and `jal-bench decode-mma` a model's decode step's
// matrix arithmetic alone (two floors under an emulated decode step); each prints a
// table, or one JSON document with --json. It starts its own jal-emu
// (native firmware) unless JAL_EMU_DIR names a running one. `jal-bench serve` is the
// InferenceX-style serving benchmark (serve_command.hpp) against a live jal-serve or a
// timing-only model.
#include <iostream>

#include <CLI/CLI.hpp>

#include <jal/error.hpp>

#include "decode_mma_bench.hpp"
#include "dispatch_bench.hpp"
#include "fabric_bench.hpp"
#include "host_bench.hpp"
#include "kernel_bench.hpp"
#include "memory_bench.hpp"
#include "mma_bench.hpp"
#include "serve_command.hpp"
#include "tools/common/emu_process.hpp"
#include "tools/common/version.hpp"

namespace {

// Runs `bench(socket_dir)` on a jal-emu (started unless JAL_EMU_DIR names one) and prints
// its document: `json_of(doc)` with --json, else `table(doc)`. Returns the exit status.
template <class Bench, class JsonOf, class Table>
int run_bench(bool json, Bench bench, JsonOf json_of, Table table)
{
    try {
        jal::tools::EmuLauncher emu("jal-bench", "", false, {"--fw", "native"});
        nlohmann::json doc = bench(emu.socket_dir());
        doc["emulator"] = emu.description();
        if (json)
            std::cout << json_of(doc).dump(2) << '\n';
        else
            std::cout << table(doc);
        return 0;
    } catch (const jal::Error& e) {
        std::cerr << "jal-bench: " << e.what() << " (" << e.status_name() << ")\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "jal-bench: " << e.what() << '\n';
        return 1;
    }
}

const nlohmann::json& whole(const nlohmann::json& doc)
{
    return doc;
}

CLI::App* add_dispatch_command(CLI::App& app, jal::bench::DispatchBenchOptions& o, bool& json,
                               bool& quick)
{
    auto* c = app.add_subcommand("dispatch",
                                 "Wall-clock cost of one dispatch of an empty program on 1 and on "
                                 "every slice, batched and one at a time, against a NOP packet");
    c->add_flag("--json", json, "Print one JSON document instead of the table");
    c->add_option("-d,--device", o.device, "Device index");
    c->add_option("--batch", o.batch, "Dispatches a batch (default 256)")
        ->check(CLI::Range(1, 16384));
    c->add_option("--repeats", o.repeats, "Repeats; the median counts (default 5)")
        ->check(CLI::Range(1, 1000));
    c->add_flag("--quick", quick, "32 dispatches, 2 repeats (a smoke run)");
    c->add_flag("-q,--quiet", o.quiet, "No progress lines on stderr");
    return c;
}

// "4096", "4K", "64M", "1G" (powers of 1024) into bytes.
std::uint64_t parse_size(const std::string& text)
{
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
        v = std::stoull(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    const std::string unit = text.substr(used);
    const int shift = unit.empty()  ? 0
                      : unit == "K" ? 10
                      : unit == "M" ? 20
                      : unit == "G" ? 30
                                    : -1;
    if (used == 0 || shift < 0 || v == 0 || v > (std::uint64_t{1} << (40 - shift)))
        throw CLI::ValidationError("size", "\"" + text + "\" is not a size (4096, 4K, 64M, 1G)");
    return v << shift;
}

CLI::App* add_kernels_command(CLI::App& app, jal::bench::KernelBenchOptions& o, bool& json)
{
    auto* c = app.add_subcommand(
        "kernels",
        "Linear kernels (GEMV/GEMM, expert GEMM, embedding, argmax, all-reduce, quantize) at "
        "decode and "
        "prefill shapes: modelled time, roofline fraction, emulator throughput vs OpenBLAS sgemm");
    c->add_flag("--json", json, "Print one JSON document instead of the table");
    c->add_option("-d,--device", o.device, "Device index");
    c->add_option("--filter", o.filter, "Only kernels whose name contains this");
    c->add_flag("--quick", o.quick, "Smaller shapes (vocab 32768, fewer tokens): a smoke run");
    c->add_flag("-q,--quiet", o.quiet, "No progress lines on stderr");
    return c;
}

CLI::App* add_mma_command(CLI::App& app, jal::bench::MmaBenchOptions& o, bool& json)
{
    auto* c = app.add_subcommand(
        "mma", "The matrix engine's arithmetic on this host (what jal-emu's MMA runs): GEMV and "
               "GEMM shapes for each weight format, against single-thread OpenBLAS sgemm");
    c->add_flag("--json", json, "Print one JSON document instead of the table");
    c->add_flag("--quick", o.quick, "M = 1 and 64 only, shorter timing (a smoke run)");
    c->add_flag("-q,--quiet", o.quiet, "No progress lines on stderr");
    return c;
}

CLI::App* add_memory_command(CLI::App& app, jal::bench::MemoryBenchOptions& o, bool& json,
                             bool& quick)
{
    auto* c = app.add_subcommand(
        "memory", "The host's memory floor for an emulated decode step: what one thread and all "
                  "threads read and copy a second (what jal-emu's TLOADs and llama.cpp's weight "
                  "reads are bound by)");
    c->add_option("--bytes", o.bytes,
                  "Bytes each thread reads, or copies, once a pass (bench-model.sh: a decode "
                  "step's)");
    c->add_option("--ring", o.ring,
                  "Each thread's copy destination, reused in turn (bytes; default a slice's L1)");
    c->add_option("--piece", o.piece, "Bytes a copy");
    c->add_option("--threads", o.threads, "Threads of the second row (default: one a host CPU)");
    c->add_flag("--json", json, "Print one JSON document instead of the table");
    c->add_flag("--quick", quick, "Shorter timing (a smoke run)");
    c->add_flag("-q,--quiet", o.quiet, "No progress lines on stderr");
    return c;
}

CLI::App* add_decode_mma_command(CLI::App& app, jal::bench::DecodeMmaBenchOptions& o, bool& json,
                                 bool& quick)
{
    auto* c = app.add_subcommand(
        "decode-mma",
        "A GPT-OSS model's decode step's matrix arithmetic alone on this host: every matrix a "
        "batch-1 step multiplies (q, k, v, output projection, router, the used experts' gate, up "
        "and down, the output head) through the MMA functions jal-emu runs, with the runtime's "
        "layouts (dense F32/BF16/F16 K-major), activations F32 (the default numerics; Q8_0 "
        "for Q8_0 matrices), each "
        "thread its share of every matrix's columns; no emulator. A floor under an emulated "
        "decode step on that many threads (bench-model.sh prints it beside llama.cpp's step)");
    c->add_option("model", o.model, "The model (a GPT-OSS GGUF file)")->required();
    c->add_option("--threads", o.threads, "Threads of the second row (default: one a host CPU)");
    c->add_flag("--json", json, "Print one JSON document instead of the table");
    c->add_flag("--quick", quick, "Shorter timing (a smoke run)");
    c->add_flag("-q,--quiet", o.quiet, "No progress lines on stderr");
    return c;
}

// A benchmark run in this process (no emulator): its JSON document, or its table.
template <typename Run>
int print_in_process(bool json, Run run, std::string (*table)(const nlohmann::json&))
{
    try {
        const nlohmann::json doc = run();
        std::cout << (json ? doc.dump(2) + "\n" : table(doc));
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "jal-bench: " << e.what() << '\n';
        return 1;
    }
}

int run_memory_command(jal::bench::MemoryBenchOptions& o, bool json, bool quick)
{
    if (quick) o.min_seconds = 0.1;
    return print_in_process(
        json, [&] { return jal::bench::run_memory_bench(o); }, jal::bench::format_memory_table);
}

int run_decode_mma_command(jal::bench::DecodeMmaBenchOptions& o, bool json, bool quick)
{
    if (quick) o.min_seconds = 0.05;
    return print_in_process(
        json, [&] { return jal::bench::run_decode_mma_bench(o); },
        jal::bench::format_decode_mma_table);
}

int run_mma_command(jal::bench::MmaBenchOptions& o, bool json)
{
    if (o.quick) o.min_seconds = 0.05;
    return print_in_process(
        json, [&] { return jal::bench::run_mma_bench(o); }, jal::bench::format_mma_table);
}

// The benchmarks that run in this process, without an emulator.
struct InProcessCommands {
    jal::bench::MmaBenchOptions mma;
    jal::bench::MemoryBenchOptions memory;
    jal::bench::DecodeMmaBenchOptions decode_mma;
    bool mma_json = false, memory_json = false, memory_quick = false;
    bool decode_mma_json = false, decode_mma_quick = false;
    CLI::App *mma_app = nullptr, *memory_app = nullptr, *decode_mma_app = nullptr;
};

void add_in_process_commands(CLI::App& app, InProcessCommands& c)
{
    c.mma_app = add_mma_command(app, c.mma, c.mma_json);
    c.memory_app = add_memory_command(app, c.memory, c.memory_json, c.memory_quick);
    c.decode_mma_app =
        add_decode_mma_command(app, c.decode_mma, c.decode_mma_json, c.decode_mma_quick);
}

// The exit status of the one that was parsed, or -1 when none was.
int run_in_process_command(InProcessCommands& c)
{
    if (c.mma_app->parsed()) return run_mma_command(c.mma, c.mma_json);
    if (c.memory_app->parsed()) return run_memory_command(c.memory, c.memory_json, c.memory_quick);
    if (c.decode_mma_app->parsed())
        return run_decode_mma_command(c.decode_mma, c.decode_mma_json, c.decode_mma_quick);
    return -1;
}

struct FabricCommand {
    jal::bench::FabricBenchOptions o;
    std::vector<std::string> sizes, collective_sizes;
    bool json = false;
    CLI::App* app = nullptr;
};

void add_fabric_command(CLI::App& app, FabricCommand& f)
{
    f.app = app.add_subcommand(
        "fabric", "The chip-to-chip fabric: raw libfabric and the emulator's chip-to-chip transfer "
                  "between two processes (bandwidth, latency, their ratio), and the modelled bus "
                  "bandwidth of all-reduce and all-to-all over 8 and 128 switched chips");
    f.app->add_flag("--json", f.json, "Print one JSON document instead of the table");
    f.app->add_option("--provider", f.o.provider, "libfabric provider: tcp (default) or shm")
        ->check(CLI::IsMember({"tcp", "shm"}));
    f.app->add_option("--sizes", f.sizes, "Measured message sizes (default 4K,16K,...,64M)")
        ->delimiter(',');
    f.app
        ->add_option("--collective-sizes", f.collective_sizes,
                     "Modelled collective sizes per chip (default 8,64,...,1G)")
        ->delimiter(',');
    f.app
        ->add_option("--seconds", f.o.seconds_per_size,
                     "Measuring time per size and path (default 0.25)")
        ->check(CLI::Range(0.0, 60.0));
    f.app->add_flag("-q,--quiet", f.o.quiet, "No progress lines on stderr");
}

int run_fabric_command(FabricCommand& f)
{
    try {
        if (!f.sizes.empty()) f.o.sizes.clear();
        for (const auto& s : f.sizes) f.o.sizes.push_back(parse_size(s));
        if (!f.collective_sizes.empty()) f.o.collective_sizes.clear();
        for (const auto& s : f.collective_sizes) f.o.collective_sizes.push_back(parse_size(s));
        const nlohmann::json doc = jal::bench::run_fabric_bench(f.o);
        if (f.json)
            std::cout << doc.dump(2) << '\n';
        else
            std::cout << jal::bench::format_fabric_table(doc);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "jal-bench: " << e.what() << '\n';
        return 1;
    }
}

}  // namespace

int main(int argc, char** argv)
{
    CLI::App app{"jal-bench: benchmarks of the Jalapeño stack"};
    app.set_version_flag("--version", jal::tools::version_text("jal-bench"));
    app.require_subcommand(1);
    jal::bench::HostBenchOptions o;
    bool json = false, quick = false;
    uint64_t file_mib = o.file_bytes >> 20, max_copy_mib = o.max_copy_bytes >> 20;
    auto* host = app.add_subcommand(
        "host", "Host stack: packet round trips, submission rate, copy bandwidth, file loading");
    host->add_flag("--json", json, "Print one JSON document instead of the table");
    host->add_option("-d,--device", o.device, "Device index");
    host->add_option("--roundtrips", o.roundtrips, "Round trips per wait mode");
    host->add_option("--packets", o.submit_packets, "Packets per submission-rate run");
    host->add_option("--max-copy-mib", max_copy_mib,
                     "Largest copy (MiB, a power of 4 times 4 KiB)");
    host->add_option("--file", o.file, "Load this file instead of a generated one");
    host->add_option("--file-mib", file_mib, "Size of the generated file (MiB)");
    host->add_flag("--quick", quick, "Fewer samples and smaller sizes (a smoke run)");
    host->add_flag("-q,--quiet", o.quiet, "No progress lines on stderr");
    jal::bench::KernelBenchOptions ko;
    bool kjson = false;
    CLI::App* kernels = add_kernels_command(app, ko, kjson);
    jal::bench::DispatchBenchOptions dop;
    bool djson = false, dquick = false;
    CLI::App* dispatch = add_dispatch_command(app, dop, djson, dquick);
    jal::bench::ServeCommand& serve = jal::bench::add_serve_command(app);
    FabricCommand fabric;
    add_fabric_command(app, fabric);
    InProcessCommands in_process;
    add_in_process_commands(app, in_process);
    CLI11_PARSE(app, argc, argv);

    if (const int status = run_in_process_command(in_process); status >= 0) return status;

    if (fabric.app->parsed()) return run_fabric_command(fabric);

    if (jal::bench::serve_command_parsed(serve)) return jal::bench::run_serve_command(serve);

    if (kernels->parsed())
        return run_bench(
            kjson,
            [&](const std::string& dir) {
                ko.emu_dir = dir;
                return jal::bench::run_kernel_bench(ko);
            },
            [](const nlohmann::json& doc) { return doc["kernels"]; },
            jal::bench::format_kernel_table);
    if (dispatch->parsed()) {
        if (dquick) dop.batch = 32, dop.repeats = 2, dop.nops = 2000;
        return run_bench(
            djson,
            [&](const std::string& dir) {
                dop.emu_dir = dir;
                return jal::bench::run_dispatch_bench(dop);
            },
            whole, jal::bench::format_dispatch_table);
    }

    o.file_bytes = file_mib << 20;
    o.max_copy_bytes = max_copy_mib << 20;
    if (quick) {
        o.roundtrips = 1000;
        o.submit_packets = 200000;
        o.max_copy_bytes = std::min<uint64_t>(o.max_copy_bytes, 64ull << 20);
        o.file_bytes = std::min<uint64_t>(o.file_bytes, 32ull << 20);
    }
    return run_bench(
        json,
        [&](const std::string& dir) {
            o.emu_dir = dir;
            return jal::bench::run_host_bench(o);
        },
        whole, jal::bench::format_host_table);
}
