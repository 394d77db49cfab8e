// `jal-bench fabric`: the chip-to-chip fabric, measured and modelled in one run. Measured
// on this machine between two processes over one libfabric provider: raw RMA writes
// (FabricEndpoint) and the emulator's chip-to-chip transfer (two Domains, one chip each,
// as two jal-emu processes), bandwidth and latency per message size, and their ratio.
// Modelled: the bus bandwidth of all-reduce and all-to-all over 8 and 128 chips of a
// switched scale-up domain, the schedules run through the link model (collective_model).
// docs/fabric.md, "jal-bench fabric".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace jal::bench {

struct FabricBenchOptions {
    std::string provider = "tcp";  // tcp or shm
    // Measured message sizes: 4 KiB .. 64 MiB by 4×.
    std::vector<std::uint64_t> sizes{4u << 10, 16u << 10, 64u << 10, 256u << 10,
                                     1u << 20, 4u << 20,  16u << 20, 64u << 20};
    // Modelled collective sizes (bytes per chip): 8 B .. 1 GiB by 8×.
    std::vector<std::uint64_t> collective_sizes{
        8, 64, 512, 4u << 10, 32u << 10, 256u << 10, 2u << 20, 16u << 20, 128u << 20, 1u << 30};
    double seconds_per_size = 0.25;  // measuring one size for one path, at least 3 transfers
    bool quiet = false;
};

nlohmann::json run_fabric_bench(const FabricBenchOptions& options);
std::string format_fabric_table(const nlohmann::json& doc);

// Parts, for the pieces' own files.
nlohmann::json measure_fabric(const FabricBenchOptions& options);  // fabric_measure.cpp
nlohmann::json model_collectives(const FabricBenchOptions& options);

}  // namespace jal::bench
