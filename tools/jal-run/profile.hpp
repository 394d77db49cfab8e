// jal-run --profile: a graph run's modelled time by kernel (label), with each kernel's HBM
// traffic and FLOPs, so a prefill can be read against the compute roof and a decode step
// against the bandwidth roof (docs/performance.md).
#pragma once

#include <cstdio>
#include <map>
#include <string>

#include <jal/model/runtime.hpp>

namespace jal::run {

// Prints `title`, then one line a kernel: dispatches, modelled µs, HBM MB and GB/s, TFLOP
// and TFLOP/s, and the share of the run's time; then the total.
void print_profile(std::FILE* out, const char* title,
                   const std::map<std::string, jal::model::ChipTotals>& kernels);

}  // namespace jal::run
