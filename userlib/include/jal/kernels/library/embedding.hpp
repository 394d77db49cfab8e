// embedding.hpp: out (F32, T×D) row t = table row ids[t], dequantized (the table may be
// F32, BF16, F16, MXFP8, MXFP4 or Q8_0). An id outside [0, vocab) fails the dispatch with
// OUT_OF_RANGE before anything of its block is written.
//
// Split: slice s handles tokens slice_range(T, slices, s) and writes those rows of out. The
// table is read at random rows by every slice: place it replicated (or accept remote reads).
// Blocks of ids go through TGATHER into L1, then VCVT to F32, then one store per block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/linear.hpp>

namespace jal::kernels::linear {

struct EmbeddingConfig {
    uint32_t tokens = 1;
    uint32_t vocab = 0;
    uint32_t dim = 0;  // a multiple of 32 for block formats
    jal_dtype table = JAL_DT_F32;
};

// Arguments: ids (address of `tokens` I32), table (address), table_stride (bytes between
// rows), out (address), out_stride.
JAL_API CodeObject build_embedding(const EmbeddingConfig& c);
JAL_API std::string embedding_name(const EmbeddingConfig& c);

// Argument words: ids (tokens×1 I32), table (vocab×dim), out (tokens×dim F32).
JAL_API std::vector<uint64_t> embedding_args(const EmbeddingConfig& c, const TensorRef& ids,
                                             const TensorRef& table, const TensorRef& out);

JAL_API jal_dispatch_report embedding(Launcher& launcher, const Program& program,
                                      const EmbeddingConfig& c, const TensorRef& ids,
                                      const TensorRef& table, const TensorRef& out,
                                      const DispatchOptions& options = {});

}  // namespace jal::kernels::linear
