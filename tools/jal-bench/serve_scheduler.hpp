// The scheduler of `jal-bench serve --timing-only`: jal-serve's (Engine::admit then
// Engine::step, tools/jal-serve/engine.cpp) replayed in modelled chip time over a ChipCost.
// At most `concurrency` requests are in flight: that many are sent at time 0 and each
// finished one is followed by the next at the time it finished. Each step admits waiting
// requests into free slots; `mixed` (jal-serve's): each step is one pass decoding every
// sequence whose prompt is done, with the next chunk of the oldest prompt still running
// beside them (its last chunk gives the first token); serial: each admitted prompt is
// prefilled alone (giving its first token), then every running sequence decodes together.
// A request ends at its output length (ignore_eos).
#pragma once

#include <cstdint>
#include <vector>

#include "serve_chip_cost.hpp"
#include "serve_stats.hpp"
#include "serve_workload.hpp"

namespace jal::bench {

// The point's requests' timings (seconds of modelled time), its duration and the chip's
// use (dynamic energy plus static power over the modelled time). `progress`: lines on
// stderr every few seconds.
PointRun run_scheduler(ChipCost& cost, uint32_t concurrency,
                       const std::vector<BenchRequest>& requests, bool progress, bool mixed);

}  // namespace jal::bench
