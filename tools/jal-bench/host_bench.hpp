// `jal-bench host`: the host stack's figures (ARCHITECTURE.md §10), measured on one device.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace jal::bench {

struct HostBenchOptions {
    std::string emu_dir;
    uint32_t device = 0;
    uint64_t roundtrips = 20000;        // per mode
    uint64_t submit_packets = 2000000;  // per rate measurement
    uint64_t max_copy_bytes = 256ull << 20;
    uint64_t file_bytes = 256ull << 20;
    std::string file;    // existing file to load instead of a generated one
    bool quiet = false;  // no progress lines on stderr
};

// Runs every measurement; returns the results as one JSON document.
nlohmann::json run_host_bench(const HostBenchOptions& options);

// The human table of a run_host_bench document.
std::string format_host_table(const nlohmann::json& doc);

}  // namespace jal::bench
