// What the model runtimes of every architecture share beyond the weight upload (upload.hpp):
// the chip's element type of a GGUF tensor, a batch's report as chip totals, a tray's
// exchange, slice masks, the program cache, a prompt's checks and chunks, and a step's
// logits a row.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <jal/hw/isa.h>
#include <jal/kernels/dispatch.hpp>
#include <jal/model/gguf.hpp>
#include <jal/model/runtime.hpp>

namespace jal::model::detail {

// The element type the chip's kernels take for a tensor of type t; throws INVALID_FIELD
// naming the tensor for a type they do not take.
jal_dtype chip_dtype(TensorType t, std::string_view name);

// The batch's totals (its modelled time: each lane region's slowest) and each dispatch's
// figures added to by_kernel under its label.
ChipTotals batch_totals(const jal::kernels::BatchReport& r,
                        std::map<std::string, ChipTotals>& by_kernel);

// The exchange between a tray's chips a pass of `rows` rows adds (RuntimeOptions::
// tray_allreduce_ns): two all-reduces a layer of the rows' residual stream (`row_bytes` a
// row) and one of a value and an index for each of the `out_rows` sampled rows. Zero
// without a tray or without the cost function.
ChipTotals tray_exchange(const RuntimeOptions& o, uint32_t n_layer, uint64_t row_bytes,
                         uint32_t rows, uint32_t out_rows);

// The mask of `count` slices from slice `first` on.
inline uint64_t mask_of(uint32_t first, uint32_t count)
{
    const uint64_t m = count >= 64 ? ~0ull : (1ull << count) - 1;
    return m << first;
}

// The i-th slice (ascending) not in `mask`.
inline uint32_t nth_slice_outside(uint64_t mask, uint32_t i)
{
    uint64_t free = ~mask;
    for (; i; i--) free &= free - 1;  // drop the lowest i
    return static_cast<uint32_t>(std::countr_zero(free));
}

// A runtime's loaded programs, by key.
using ProgramCache = std::map<std::string, std::unique_ptr<jal::kernels::Program>>;

// The program under `key`, built (build()) and loaded on first use: interleaved over the
// slices of all_mask, as every dispatch slice fetches it and no slice is to be the hot spot.
const jal::kernels::Program& cached_program(ProgramCache& programs, const std::string& key,
                                            const std::function<jal::kernels::CodeObject()>& build,
                                            const runtime::Device& device,
                                            runtime::Context& context, runtime::Queue& queue,
                                            uint64_t all_mask);

// A dispatch's options in a runtime's graph: on the slices of `mask`, labelled `what` (the
// by-kernel figures), timing only or not, on lane `lane` of a batch (-1: its own queue).
jal::kernels::DispatchOptions graph_dispatch(uint64_t mask, bool timing_only, const char* what,
                                             int lane = -1);

// Checks a prompt for sequence `seq`, which holds `len` positions: at least one token, room
// for them in its cache of n_ctx positions, every id in the vocabulary of n_vocab.
void check_prompt(int seq, uint32_t len, std::span<const int32_t> tokens, uint32_t n_ctx,
                  uint32_t n_vocab);

// Runs a prompt in chunks of at most max_rows tokens, each at the sequence's next positions
// (`len`, advanced past each chunk): run_chunk(chunk, pos) runs one and returns its logits.
// Returns the last chunk's.
template <class RunChunk>
std::vector<float> run_prompt_chunks(std::span<const int32_t> tokens, uint32_t max_rows,
                                     uint32_t& len, RunChunk run_chunk)
{
    std::vector<float> logits;
    for (size_t at = 0; at < tokens.size(); at += max_rows) {
        const uint32_t n = static_cast<uint32_t>(std::min<size_t>(max_rows, tokens.size() - at));
        std::vector<int32_t> pos(n);
        for (uint32_t i = 0; i < n; i++) pos[i] = static_cast<int32_t>(len + i);
        logits = run_chunk(tokens.subspan(at, n), std::span<const int32_t>(pos));
        len += n;
    }
    return logits;
}

// Checks a decode step of `rows` sequences fits a graph run (at most max_rows, one a
// sequence).
void check_decode_step(size_t rows, uint32_t max_rows);

// Throws for a decode row of sequence seq, which holds len positions, that may not join a
// step: the sequence already in it (`twice`), or no room in its cache of n_ctx positions.
void check_decode_row(int seq, uint32_t len, bool twice, uint32_t n_ctx);

// Appends sequence seq's decode row (token tok at its next position, len) to a step: its
// segment, token and position, after check_decode_row.
template <class Segment>
void add_decode_row(std::vector<Segment>& segs, std::vector<int32_t>& tokens,
                    std::vector<int32_t>& pos, int seq, int32_t tok, uint32_t len, uint32_t n_ctx)
{
    const bool twice =
        std::any_of(segs.begin(), segs.end(), [&](const Segment& o) { return o.seq == seq; });
    check_decode_row(seq, len, twice, n_ctx);
    segs.push_back({seq, static_cast<uint32_t>(tokens.size()), 1, len});
    tokens.push_back(tok);
    pos.push_back(static_cast<int32_t>(len));
}

// Runtime::decode_greedy chosen on the host: decode() a step at a time, each row's argmax
// the next token. `last` (the runtime's last()) becomes the sum of the steps'.
std::vector<std::vector<int32_t>>
greedy_on_host(Runtime& rt, std::span<const std::pair<int, int32_t>> batch, uint32_t steps,
               const std::function<void(std::span<const int32_t>)>& on_step, ChipTotals& last);

// Splits `logits` (rows of `vocab`) into one vector a row.
std::vector<std::vector<float>> split_rows(const std::vector<float>& logits, uint32_t rows,
                                           uint32_t vocab);

}  // namespace jal::model::detail
