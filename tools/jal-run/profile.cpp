#include "profile.hpp"

namespace jal::run {

namespace {

void print_row(std::FILE* out, const char* name, const jal::model::ChipTotals& t, double total_ns)
{
    const double ns = static_cast<double>(t.modelled_ns);
    std::fprintf(out, "%-28s %6llu %12.2f %10.1f %9.1f %10.3f %9.1f %6.1f %10.1f\n", name,
                 static_cast<unsigned long long>(t.dispatches), ns / 1e3, t.hbm_bytes / 1e6,
                 ns > 0 ? double(t.hbm_bytes) / ns : 0.0, t.flops / 1e12,
                 ns > 0 ? double(t.flops) / ns / 1e3 : 0.0, total_ns > 0 ? 100 * ns / total_ns : 0,
                 t.instructions / 1e3);
}

}  // namespace

void print_profile(std::FILE* out, const char* title,
                   const std::map<std::string, jal::model::ChipTotals>& kernels)
{
    jal::model::ChipTotals total;
    for (const auto& [name, t] : kernels) {  // operator+= is not exported by libjal
        total.dispatches += t.dispatches;
        total.modelled_ns += t.modelled_ns;
        total.energy_nj += t.energy_nj;
        total.flops += t.flops;
        total.hbm_bytes += t.hbm_bytes;
        total.instructions += t.instructions;
    }
    // Labels are summed over dispatches: the sum is the run's time when nothing ran on lanes
    // side by side (a prefill; a decode step of one sequence).
    const double total_ns = static_cast<double>(total.modelled_ns);
    // The last column: thousands of instructions, every slice's (the emulator's work).
    std::fprintf(out, "%s\n%-28s %6s %12s %10s %9s %10s %9s %6s %10s\n", title, "kernel", "count",
                 "time us", "HBM MB", "GB/s", "TFLOP", "TFLOP/s", "%", "k insn");
    for (const auto& [name, t] : kernels) print_row(out, name.c_str(), t, total_ns);
    print_row(out, "(sum)", total, total_ns);
}

}  // namespace jal::run
