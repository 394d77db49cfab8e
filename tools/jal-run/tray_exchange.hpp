// The exchange between the chips of a tray that runs a model together (jal-run --chips N,
// RuntimeOptions::tray_chips), priced by the link model: an all-reduce over the chips'
// switched scale-up planes with the schedule a tuned collective library would pick at that
// size (emu/fabric/collective_model.hpp, docs/multichip.md "Timing-only projections over chips").
#pragma once

#include <cstdint>
#include <functional>

namespace jal::run {

// Modelled ns of an all-reduce of `bytes` (each chip's contribution) over `chips` chips;
// remembered by size, since a pass asks for the same few sizes again and again.
std::function<uint64_t(uint64_t bytes)> tray_allreduce_cost(unsigned chips);

}  // namespace jal::run
