// jal-run --trace: libjal's host trace (jal/trace.h) merged into the trace jal-emu wrote,
// so Perfetto shows the host's API calls and waits next to the device's packets.
#pragma once

#include <string>

namespace jal::tools {

// Appends the events of the host trace at `host_path` to the jal-emu trace at
// `device_path` (rewritten in place), their times moved onto jal-emu's wall clock: both
// traces start with a "clock origin" instant holding their CLOCK_MONOTONIC start, and the
// host's times shift by the difference. Throws std::runtime_error naming the file that is
// unreadable, incomplete or has no origin.
void merge_host_trace(const std::string& device_path, const std::string& host_path);

}  // namespace jal::tools
