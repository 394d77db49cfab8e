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

// out = in_0 + in_1 + ... + in_{n-1}, elementwise, over vectors of `length` elements of
// F32, BF16 or F16: the reduction step of the chips' collectives (jal/collectives.hpp),
// whose inputs may be anywhere the context maps (a peer's memory too). The sum is in F32,
// in input order, and rounded once to the dtype at the end (docs/multichip.md,
// "Collectives": the reduction order). Slice s of the dispatch's n does elements
// slice_range(length, n, s).
struct ReduceSumConfig {
    uint32_t inputs = 0;  // n >= 1
    uint32_t length = 0;  // elements of each vector
    jal_dtype dtype = JAL_DT_F32;
};

// Arguments: inputs (the address of a table of n u64 device addresses), out (address; may
// be one of the inputs only if it is input 0).
JAL_API CodeObject build_reduce_sum(const ReduceSumConfig& c);
JAL_API std::string reduce_sum_name(const ReduceSumConfig& c);
JAL_API std::vector<uint64_t> reduce_sum_args(uint64_t inputs_table, uint64_t out);

}  // namespace jal::kernels::linear
