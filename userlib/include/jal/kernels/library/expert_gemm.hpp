// expert_gemm.hpp: the grouped GEMM of a mixture-of-experts layer. For every token t and
// each of its k selected experts e = ids[t][j] (I32, tokens × k):
//     y[t·k + j] (N F32) = x[row] × W[e]ᵀ + bias[e]
// where W holds E experts stacked, each N rows of K (expert e's first row is row e·N), the
// bias is E × N F32, and x's row is t (up/gate projection: one input row per token) or
// t·k + j (down projection: one input row per selected pair, e.g. the SwiGLU output).
//
// Two splits over the slices (ExpertSplit):
//   experts  slice s owns experts slice_range(E, slices, s) whole; entry s of the shard table
//            is the address of its first expert's first row (expert_shard_table). Expert
//            parallelism: at small batch only the slices holding a selected expert work.
//   rows     slice s owns rows slice_range(N, slices, s) of every expert, stored together:
//            expert e's rows at e·count rows into its block (pack_expert_rows,
//            expert_row_shard_table). Expert tensor parallelism: every slice streams its
//            share of each selected expert, so at batch 1 the whole chip reads the weights.
// Each slice buckets the pairs by expert (a counting sort in L1), and per expert it works
// on gathers the pairs' x rows (TGATHER), converts them to the numerics' activation format,
// streams its W rows of that expert through two tile buffers into an accumulator, adds the
// bias and stores each row (or its columns of it) where its pair goes. Every output element
// is one slice's dot product over all of K, so both splits give the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/linear.hpp>

namespace jal::kernels::linear {

enum class ExpertSplit : uint8_t { experts, rows };

struct ExpertGemmConfig {
    uint32_t tokens = 1;
    uint32_t k = 1;        // experts per token
    uint32_t experts = 0;  // E
    uint32_t n = 0;        // rows per expert (output width)
    uint32_t kdim = 0;     // K
    jal_dtype weight = JAL_DT_MXFP4;
    Numerics numerics = Numerics::native;
    bool bias = true;
    // Split by experts only: the bias argument is a table of one address per slice, slice s's
    // entry + e·N·4 being expert e's bias row for each of its experts (the model runtime keeps
    // each slice's experts' rows in its own HBM instead of the whole table on every slice).
    bool bias_shards = false;
    bool input_per_pair = false;  // x has tokens·k rows (down projection), else tokens rows
    ExpertSplit split = ExpertSplit::experts;
    // Fused RMS norm of the gathered x rows before they are converted (as GemmConfig's):
    // the gate and up projections read the residual stream and normalise it themselves.
    bool rms_norm = false;
    float norm_eps = 1e-5f;
    // GPT-OSS's SwiGLU in the epilogue (N even): each pair's row of N = gate | up columns
    // becomes N/2 columns min(g,limit)·σ(α·min(g,limit))·(clamp(u, ±limit)+1), the
    // instruction sequence of swiglu_oai, so y has N/2 columns and the separate SwiGLU
    // dispatch (and y's other half) is not needed. Bit for bit the two. Split by rows, each
    // slice's share of the N rows must be even and its shard must hold, for every expert,
    // the gate rows [c0/2, c0/2 + h) and then the up rows N/2 + [c0/2, c0/2 + h) (c0, 2h: the
    // slice's slice_range of N; pack_expert_rows does it), so that it computes both halves
    // of its h output columns; the bias stays the plain E × N table. It must stream (its
    // share of an expert at most a W tile, every pair in L1), as the fused combine.
    bool swiglu = false;
    float swiglu_alpha = 1.702f, swiglu_limit = 7.0f;
    uint32_t out_cols() const { return swiglu ? n / 2 : n; }
    // Split by experts only: x already in the activation format (activation_dtype(weight,
    // numerics)), gathered as is (no norm then), and y stored converted to y_dtype (VCVT in
    // the numerics' mode) instead of F32. An expert GEMM whose output another one reads
    // (gate|up's SwiGLU rows into down) can so hand over the rows the reader would convert
    // anyway: the same bits, a quarter of the bytes for Q8_0.
    jal_dtype x_dtype = JAL_DT_F32;
    jal_dtype y_dtype = JAL_DT_F32;
    // Fused SwiGLU of the gathered rows (swiglu.hpp, the same instructions), for the down
    // projection split by rows: each row of x is gate | up (2·kdim F32) and the GEMM
    // multiplies swiglu(gate, up) (the constants are swiglu_alpha and swiglu_limit). Needs
    // input_per_pair, not with rms_norm. Every slice computes it for every pair it gathers,
    // so it pays only for few pairs (a separate kernel computes each row once).
    bool swiglu_input = false;
    // Fused routing (moe.hpp's moe_routing, the same instructions), for the gate|up
    // projection: every slice reads the tokens' router logits (tokens × experts F32), takes
    // the top k and their softmax weights itself, and slice 0 writes ids and weights for the
    // kernels after it. Not with input_per_pair. Every slice routes every token, so it pays
    // only for few tokens.
    bool route = false;
    // Fused MoE combine with the residual (moe.hpp's moe_combine, the same instructions), for
    // the down projection split by rows when every slice streams (expert_gemm_streams): each
    // slice adds Σ_j w_j · y[t·k + j] of its columns to the tokens' rows of `out` instead of
    // storing y. Needs input_per_pair; a slice that cannot stream traps INVALID_FIELD.
    bool combine = false;
    // Rows handed over as messages (docs/kernels.md, "Expert GEMM"), for a decode step's
    // gate|up and down projections split by rows on the same slices of one staged program.
    // send_output (split by rows, the SwiGLU epilogue, route): each slice sends its routing
    // (the ids, then the weights: tokens × k each) to itself, and its output columns of every
    // pair (its accumulator rows, in the sorted order: by expert, ties in pair order) to
    // every slice of the dispatch or stage (SEND), instead of storing y.
    bool send_output = false;
    // recv_input (split by rows, input_per_pair, combine, F32 x, no route): the routing and
    // the input rows are a send_output GEMM's of N = 2·kdim in the stage before, on the same
    // slices: each slice receives its sender's ids and weights from itself and every
    // sender's columns of every pair (RECV) into its x rows instead of loading ids and
    // gathering x, the pairs then sorted as the sender sorted them. Its code object is
    // after_messages: link_stages starts it without the barrier, so its W streams while the
    // senders finish. Both kernels trap INVALID_FIELD on a slice without rows of their N.
    bool recv_input = false;
    // send_residual (recv_input): the combined residual columns, once stored, also go to
    // every slice (itself included) as one message of tokens rows each, for a GEMM that
    // receives its x (gemm.hpp's recv_x) in the next stage on the same slices. Traps
    // INVALID_FIELD where no pair chose a valid expert (nothing would be sent).
    bool send_residual = false;
    // The router's logits and the residual rows as messages (docs/model-runtime.md, "The
    // router as messages"), for a decode step's gate|up with the routing fused, taking the
    // token rows as they are (expert_gemm_token_rows). recv_logits: the logits are a GEMM's
    // y sent in the stage before on the same slices (gemm.hpp's send_y: sender r's columns
    // slice_range(E, slices, r) of every token), received instead of loaded. recv_x: the
    // tokens' rows likewise, an earlier GEMM's y (sender r's columns slice_range(K, slices,
    // r)), received before the logits (a FIFO keeps each pair's order). Either makes the code
    // object after_messages: a staged program starts it without the barrier, so what it
    // still loads from memory must be ordered by an earlier one (x without recv_x: the
    // router's stage has its barrier). Their arguments are left out (x and x_stride, logits
    // and logits_stride). The same bits as loading the stored rows.
    bool recv_logits = false;
    bool recv_x = false;
    // The next expert GEMM's first W tile issued by this one (docs/kernels.md, "Down's
    // weights issued by gate|up"), for a decode step's gate|up (send_output, streamed) and
    // the down projection receiving its rows (recv_input). prefetch_n > 0 (gate|up): once its
    // last W tile is issued, each slice also issues the first W tile of the expert GEMM after
    // it, whose experts are prefetch_n rows of prefetch_kdim columns of prefetch_weight
    // (split by rows: its rows slice_range(prefetch_n) of the first active experts of the
    // same sorted list, as many as that kernel's first tile holds) into the top of L1
    // (expert_gemm_prefetch_region), so that the transfer follows its own on the DMA engine
    // while it multiplies and sends. Its last argument, next_w_shards, is that kernel's
    // shard table. w0_prefetched (down): the first W tile is not loaded but found there
    // (its MMA waits for the transfer as for any op writing what it reads: L1 hazards are
    // tracked), so it must run right after such a gate|up on the same slices with the same
    // routing. Both kernels keep their own L1 below the region (INVALID_FIELD otherwise).
    uint32_t prefetch_n = 0, prefetch_kdim = 0;
    jal_dtype prefetch_weight = JAL_DT_MXFP4;
    bool w0_prefetched = false;
    // x_from_self (with recv_x): the rows come whole, as one message from this slice (the
    // router's gemm.hpp forward_x), not as every sender's columns. Beside the attention
    // (docs/model-runtime.md, "The router as messages"): send_x_columns (gate|up with recv_x
    // and send_output): the raw rows' columns slice_range(kdim) also go to this slice's down
    // projection, right after the routing it sends itself; recv_x_columns (down: recv_input
    // and combine): the columns of the rows its combine adds to are received from that
    // gate|up, not loaded (no slice wrote them where down could read them without a barrier:
    // the projection beside the attention does not store them).
    bool x_from_self = false, send_x_columns = false, recv_x_columns = false;
};

// Where a prefetched first W tile of an expert GEMM of n rows a expert of kdim columns of
// `weight` goes (ExpertGemmConfig::prefetch_n): its gather's row list at [list, tile), the
// tile at [tile, JAL_SLICE_L1_BYTES).
struct ExpertPrefetchRegion {
    uint32_t list = 0, tile = 0;
};
JAL_API ExpertPrefetchRegion expert_gemm_prefetch_region(uint32_t n, uint32_t kdim,
                                                         jal_dtype weight);

// Arguments: x (address, F32 rows), x_stride, norm_weight (address of K F32; only with
// config.rms_norm), ids (address, tokens·k I32; with config.route written, not read),
// logits, logits_stride, weights (only with config.route: the router logits in, tokens·k
// F32 weights out), w_shards
// (address of the shard table), w_stride (bytes between rows), expert_stride (bytes from
// one expert's first row to the next's; ignored when split by rows), bias (address; only with config.bias),
// y (address, tokens·k rows of N F32), y_stride, then with config.combine: out (address,
// tokens rows of N F32 added to), out_stride, weights (address, tokens·k F32; not with
// config.recv_input, whose weights the combine receives). With config.recv_input x,
// x_stride, ids, y and y_stride are left out too (the kernel reads and writes none of
// them): its arguments then fit one scalar-cache line. With config.prefetch_n the last
// argument is next_w_shards (the next expert GEMM's shard table). With config.recv_x x and x_stride,
// with config.recv_logits logits and logits_stride, and with config.send_output y and
// y_stride are left out likewise. An id outside
// [0, E) is ignored (no slice owns it): its row of y is not written.
JAL_API CodeObject build_expert_gemm(const ExpertGemmConfig& c);
JAL_API std::string expert_gemm_name(const ExpertGemmConfig& c);
JAL_API uint64_t expert_gemm_flops(const ExpertGemmConfig& c);  // of the tokens·k selected rows
// Split by rows over `slices`, every slice streams the experts' rows without a pause between
// experts (all pairs fit in L1 and each slice's rows of an expert fit one W tile).
JAL_API bool expert_gemm_streams(const ExpertGemmConfig& c, uint32_t slices);
// Few pairs and one row a token, streamed: the tokens' rows load as they are, once (what
// recv_x needs).
JAL_API bool expert_gemm_token_rows(const ExpertGemmConfig& c);
// Uniform routing, the model of expert choice timing-only runs use (the model runtime's
// modelled ids): token t's j-th of k experts is (j·⌊E/k⌋ + t mod ⌊E/k⌋) mod E, distinct
// within a token and every expert used equally over ⌊E/k⌋ tokens.
JAL_API uint32_t uniform_expert(uint32_t experts, uint32_t k, uint32_t t, uint32_t j);
// The experts uniform routing makes active for c's tokens. Split by rows and streaming, a
// timing-only dispatch is charged for the pairs spread evenly over this many experts: its
// ids read as zeros there.
JAL_API uint32_t uniform_active(const ExpertGemmConfig& c);

// Argument words. x: tokens (or tokens·k) × K F32; ids: tokens×k I32 (packed); w: (E·N)×K
// of config.weight, reached through w_shards (shard tables of experts: expert_shard_table);
// bias: E×N F32 (va 0 without); y: tokens·k × out_cols() F32.
JAL_API std::vector<uint64_t>
expert_gemm_args(const ExpertGemmConfig& c, const TensorRef& x, const TensorRef& ids,
                 uint64_t w_shards, const TensorRef& w, const TensorRef& bias, const TensorRef& y,
                 const TensorRef& norm_weight = {}, const TensorRef& logits = {},
                 const TensorRef& weights = {}, const TensorRef& out = {},
                 uint64_t next_w_shards = 0);

// Shard table of stacked expert weights in one allocation: entry s is the address of the
// first row of slice s's first expert (slice_range(E, slices, s).begin · N).
JAL_API std::vector<uint64_t> expert_shard_table(const ExpertGemmConfig& c, const TensorRef& w,
                                                 uint32_t slices);

// Split by rows: the shard table of W packed by pack_expert_rows at w.va, and the packing
// itself (host bytes of (E·N) rows of row_bytes, as stacked in the model file, reordered
// into the slices' blocks one after another: slice s's block, at row E·begin_s, holds rows
// [begin_s, end_s) of expert 0, then of expert 1, ...; with c.swiglu, of each expert the
// gate rows [begin_s/2, end_s/2) then the up rows N/2 + [begin_s/2, end_s/2)).
JAL_API std::vector<uint64_t> expert_row_shard_table(const ExpertGemmConfig& c, const TensorRef& w,
                                                     uint32_t slices);
JAL_API std::vector<std::byte> pack_expert_rows(const ExpertGemmConfig& c,
                                                std::span<const std::byte> w, uint64_t row_bytes,
                                                uint32_t slices);

JAL_API jal_dispatch_report expert_gemm(Launcher& launcher, const Program& program,
                                        const ExpertGemmConfig& c, const TensorRef& x,
                                        const TensorRef& ids, uint64_t w_shards, const TensorRef& w,
                                        const TensorRef& bias, const TensorRef& y,
                                        const DispatchOptions& options = {});

}  // namespace jal::kernels::linear
