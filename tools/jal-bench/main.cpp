// jal-bench: benchmarks of the Jalapeño stack that print figures. `jal-bench host` measures
// the host stack (libjal and the emulator's transport), `jal-bench kernels` the kernel
// library's linear kernels; each prints a table, or one JSON document with --json. It
// starts its own jal-emu (native firmware) unless JAL_EMU_DIR names a running one.
#include <iostream>

#include <CLI/CLI.hpp>

#include <jal/error.hpp>

#include "host_bench.hpp"
#include "kernel_bench.hpp"
#include "tools/common/emu_process.hpp"

int main(int argc, char** argv)
{
    CLI::App app{"jal-bench: benchmarks of the Jalapeño stack"};
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
    auto* kernels = app.add_subcommand(
        "kernels",
        "Linear kernels (GEMV/GEMM, expert GEMM, embedding, argmax, all-reduce, quantize) at "
        "decode and "
        "prefill shapes: modelled time, roofline fraction, emulator throughput vs OpenBLAS sgemm");
    kernels->add_flag("--json", kjson, "Print one JSON document instead of the table");
    kernels->add_option("-d,--device", ko.device, "Device index");
    kernels->add_option("--filter", ko.filter, "Only kernels whose name contains this");
    kernels->add_flag("--quick", ko.quick,
                      "Smaller shapes (vocab 32768, fewer tokens): a smoke run");
    kernels->add_flag("-q,--quiet", ko.quiet, "No progress lines on stderr");
    CLI11_PARSE(app, argc, argv);

    if (kernels->parsed()) {
        try {
            jal::tools::EmuLauncher emu("jal-bench", "", false, {"--fw", "native"});
            ko.emu_dir = emu.socket_dir();
            nlohmann::json doc = jal::bench::run_kernel_bench(ko);
            doc["emulator"] = emu.description();
            if (kjson)
                std::cout << doc["kernels"].dump(2) << '\n';
            else
                std::cout << jal::bench::format_kernel_table(doc);
            return 0;
        } catch (const jal::Error& e) {
            std::cerr << "jal-bench: " << e.what() << " (" << e.status_name() << ")\n";
            return 1;
        } catch (const std::exception& e) {
            std::cerr << "jal-bench: " << e.what() << '\n';
            return 1;
        }
    }

    o.file_bytes = file_mib << 20;
    o.max_copy_bytes = max_copy_mib << 20;
    if (quick) {
        o.roundtrips = 1000;
        o.submit_packets = 200000;
        o.max_copy_bytes = std::min<uint64_t>(o.max_copy_bytes, 64ull << 20);
        o.file_bytes = std::min<uint64_t>(o.file_bytes, 32ull << 20);
    }
    try {
        jal::tools::EmuLauncher emu("jal-bench", "", false, {"--fw", "native"});
        o.emu_dir = emu.socket_dir();
        nlohmann::json doc = jal::bench::run_host_bench(o);
        doc["emulator"] = emu.description();
        if (json)
            std::cout << doc.dump(2) << '\n';
        else
            std::cout << jal::bench::format_host_table(doc);
        return 0;
    } catch (const jal::Error& e) {
        std::cerr << "jal-bench: " << e.what() << " (" << e.status_name() << ")\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "jal-bench: " << e.what() << '\n';
        return 1;
    }
}
