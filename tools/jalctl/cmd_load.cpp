// jalctl load FILE: loads a file into device memory with libjal's io_uring loader and shows
// a progress bar. A bring-up and throughput check: the memory is freed when jalctl exits.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include <fmt/format.h>

#include <jal/emu_dir.hpp>
#include <jal/jal.hpp>

#include "context.hpp"
#include "exit_codes.hpp"

namespace jal::ctl {

namespace {

struct LoadArgs {
    std::string file;
    uint64_t slice_mask = 0xffff;  // logical slices to interleave over
    bool no_direct = false;
    bool no_progress = false;
};

std::string bar(uint64_t done, uint64_t total, double seconds)
{
    constexpr int kWidth = 40;
    double f = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    int filled = static_cast<int>(f * kWidth);
    double mib = static_cast<double>(done) / (1 << 20);
    return fmt::format("\r[{}{}] {:5.1f}%  {:.0f} MiB  {:.0f} MiB/s", std::string(filled, '#'),
                       std::string(kWidth - filled, ' '), f * 100, mib,
                       seconds > 0 ? mib / seconds : 0.0);
}

int run_load(Context& ctx, const LoadArgs& args)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(args.file, ec))
        throw jal::Error(JAL_STATUS_INVALID_FIELD,
                         fmt::format("{}: {}", args.file,
                                     ec ? ec.message() : "not a regular file (load reads files)"));
    const uint64_t size = std::filesystem::file_size(args.file);
    jal::runtime::Device dev(ctx.device, ctx.socket_dir());
    jal::runtime::Context context(dev);
    jal::runtime::Memory mem(context, std::max<uint64_t>(size, 1), JAL_PLACE_INTERLEAVED,
                             args.slice_mask);
    jal::runtime::Queue queue(context, 256);
    bool show = !ctx.json && !args.no_progress && ::isatty(STDERR_FILENO);
    auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    auto r = queue.load_file(
        args.file, mem.va(), mem.size(),
        [&](uint64_t done, uint64_t total) {
            if (show) std::fputs(bar(done, total, elapsed()).c_str(), stderr);
            return true;
        },
        args.no_direct ? JAL_LOAD_NO_DIRECT : 0);
    double seconds = elapsed();
    if (show) std::fputs("\n", stderr);
    double mbps = seconds > 0 ? static_cast<double>(r.bytes) / seconds / 1e6 : 0;
    if (ctx.json) {
        ctx.print_json({{"device", ctx.device},
                        {"file", args.file},
                        {"bytes", r.bytes},
                        {"va", mem.va()},
                        {"slice_mask", args.slice_mask},
                        {"direct_io", r.direct_io},
                        {"seconds", seconds},
                        {"mb_per_s", mbps}});
        return kExitOk;
    }
    std::cout << fmt::format(
        "loaded {} bytes of {} into device {} at va {:#x} ({} I/O) in {:.3f} s: {:.0f} MB/s\n",
        r.bytes, args.file, ctx.device, mem.va(), r.direct_io ? "direct" : "buffered", seconds,
        mbps);
    return kExitOk;
}

}  // namespace

void add_load_command(CLI::App& app, Context& ctx)
{
    static LoadArgs args;
    CLI::App* sub = app.add_subcommand(
        "load",
        "Load FILE into device memory (io_uring, O_DIRECT where possible) with a progress bar;\n"
        "prints the rate. The memory is freed when jalctl exits.");
    add_common_options(*sub, ctx);
    sub->add_option("FILE", args.file, "File to load")->required()->check(CLI::ExistingFile);
    sub->add_option("--slices", args.slice_mask,
                    "Logical slice mask to interleave over (default 0xffff)");
    sub->add_flag("--no-direct", args.no_direct, "Use buffered reads, not O_DIRECT");
    sub->add_flag("--no-progress", args.no_progress, "No progress bar");
    sub->callback([&ctx] { ctx.action = [&ctx] { return run_load(ctx, args); }; });
}

}  // namespace jal::ctl
