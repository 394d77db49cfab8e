// Where the runtime's tensors live: one arena per slice (JAL_PLACE_SLICE: weights a slice
// reads, the KV heads it attends over), one replicated over all slices (what every slice
// reads whole: norms, biases, shard tables, activations that feed a split GEMM), one
// interleaved (everything else), and one replicated over each group of slices asked for
// (group_arena: a KV head read by the slices its keys are split over). Reservations come
// first, then one allocation per arena, so a model costs a handful of allocations however
// many tensors it has.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <jal/jal.hpp>

namespace jal::model::detail {

struct Place {
    int arena = 0;  // 0..slices-1: that slice; kReplicated; kInterleaved
    uint64_t offset = 0;
    uint64_t bytes = 0;
};

class Placement {
public:
    static constexpr int kReplicated = -1;
    static constexpr int kInterleaved = -2;

    explicit Placement(uint32_t slices) : slice_sizes_(slices, 0) {}

    // The arena replicated over the slices of `mask` (a copy on each; one slice: that
    // slice's own arena).
    int group_arena(uint64_t mask);

    // Room for `bytes` (256-byte aligned) in an arena.
    Place reserve(int arena, uint64_t bytes);
    // Allocates every arena (once, after all reservations).
    void allocate(const runtime::Context& context);
    uint64_t va(const Place& p) const;
    uint64_t bytes_reserved() const;  // replicas counted once
    // What one slice holds: its own arena, a replica, and its share of the interleaved one.
    uint64_t slice_load(uint32_t slice) const;
    // (va, bytes) of the per-slice arenas and the interleaved one.
    std::vector<std::pair<uint64_t, uint64_t>> data_ranges() const;

private:
    uint64_t& size_of(int arena);
    std::vector<uint64_t> slice_sizes_;
    uint64_t replicated_ = 0, interleaved_ = 0;
    struct Group {
        uint64_t mask = 0, size = 0;
        std::unique_ptr<runtime::Memory> mem;
    };
    // Group arena i is kFirstGroup - i.
    static constexpr int kFirstGroup = -3;
    std::vector<Group> groups_;
    std::vector<std::unique_ptr<runtime::Memory>> slice_mem_;
    std::unique_ptr<runtime::Memory> replicated_mem_, interleaved_mem_;
};

}  // namespace jal::model::detail
