// collective.hpp: all-reduce (sum) of F32 vectors across the slices of a dispatch, in
// place: slice s's vector lives at the address in entry s of a table (place it in slice s's
// HBM); afterwards every vector holds the elementwise sum. For a GEMV that splits K over
// slices (each slice's partial y), or any data-parallel reduction.
//
// Ring (MPICH allreduce_intra_ring): the vector is cut into n chunks (chunk i is
// slice_range(L, n, i)); n−1 reduce-scatter steps (send chunk s−i to s+1, receive chunk
// s−i−1 from s−1 and add it), after which slice s holds the sum of chunk s+1; then n−1
// all-gather steps pass the finished chunks on. Each slice sends 2(n−1)/n of the vector.
// Vectors longer than a segment (512 Ki elements) are reduced segment by segment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/linear.hpp>

namespace jal::kernels::linear {

struct AllReduceConfig {
    uint32_t length = 0;  // F32 elements per vector
};

// Arguments: vectors (address of the table: one u64 device address per dispatch slice).
JAL_API CodeObject build_all_reduce(const AllReduceConfig& c);
JAL_API std::string all_reduce_name(const AllReduceConfig& c);

// Argument words: the device address of the table of vector addresses.
JAL_API std::vector<uint64_t> all_reduce_args(const AllReduceConfig& c, uint64_t vectors_table);

JAL_API jal_dispatch_report all_reduce(Launcher& launcher, const Program& program,
                                       const AllReduceConfig& c, uint64_t vectors_table,
                                       const DispatchOptions& options = {});

}  // namespace jal::kernels::linear
