// The expert GEMM's generator (expert_gemm.hpp), shared by its files: expert_gemm.cpp (the
// plan, the layout, the build and the public calls), expert_gemm_sort.cpp (bucketing the
// pairs by expert), expert_gemm_chunk.cpp (the per-expert loop over chunks of pairs) and
// expert_gemm_rows.cpp (split by rows, streaming every expert without a pause) and
// expert_gemm_pipe.cpp (the per-expert loop with the next chunk's gather in flight).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <jal/kernels/builder.hpp>
#include <jal/kernels/library/expert_gemm.hpp>

#include "emit.hpp"

namespace jal::kernels::linear::detail {

constexpr uint32_t kL1 = JAL_SLICE_L1_BYTES;
constexpr uint32_t kWeightBudget = 1u << 20;
// Staged gathers (split by experts, converted activations): F32 rows per staging block.
constexpr uint32_t kStageRows = 8;
// Split by rows, up to this many pairs are sorted by sort_few_pairs.
constexpr uint32_t kFewSortPairs = 16;
// The chunk the prefetching path (ExpertPlan::prefetch) must keep: a 2 048-row prompt's
// share of an expert of 128 with top-4 routing.
constexpr uint32_t kPrefetchPairs = 64;

// What the generator derives from a configuration (checked).
struct ExpertPlan {
    uint32_t pairs;  // tokens·k
    jal_dtype act;   // the activation format
    uint64_t wrow, arow;
    bool convert;  // x is converted to act before the MMA
    uint32_t tn;   // W rows per tile
    uint32_t mc;   // pairs per chunk
    // Split by rows with every pair in L1 at once: the slice's rows of several experts are
    // gathered into one W tile and streamed without a pause between experts (on slices
    // whose rows of an expert fit one tile; the others take the per-expert loop).
    bool streamed;
    uint64_t streamed_extra;  // the L1 that path needs beyond the chunk buffers
    // Split by experts with converted activations: a chunk's F32 rows are gathered, normed
    // and converted kStageRows at a time through two staging buffers, so only the converted
    // rows and the accumulator stay in L1 per pair (more pairs a chunk: each expert's
    // weights stream once for more rows).
    bool staged;
    // Split by experts, the next chunk's gather issued before this chunk's epilogue and
    // scatter (expert_gemm_pipe.cpp): staged with every F32 row of a chunk in L1 (instead of
    // the two staging buffers), or x gathered as the MMA reads it (two buffers of it).
    bool prefetch;
    // Split by experts: each slice lists only its own experts' pairs, each with one VTOPK over
    // all pairs (sort_own_pairs) instead of the scalar counting sort of every pair.
    bool vsort;
    // Split by rows with few pairs (decode): the pairs put in expert order by one VTOPK and
    // listed in one pass over them (sort_few_pairs) instead of the counting sort's passes
    // over every expert.
    bool fsort;
    // Streamed with few pairs and x a row a token (gate|up): the tokens' rows load as they
    // are, right after the ids (not gathered a pair at a time once the pairs are sorted),
    // are normed and converted once, and each pair multiplies its token's row.
    bool token_rows;
    uint64_t xrow;  // a row of x as it is gathered
    uint64_t yrow;  // a converted row of y (0: y is stored F32 from the accumulator)
};

ExpertPlan plan(const ExpertGemmConfig& c, const std::string& name);
// W rows per tile of an expert GEMM of n rows an expert, rows of wrow bytes.
uint32_t expert_tile_rows(uint32_t n, uint64_t wrow);

// The generator: bucket the pairs by expert, then per expert the slice works on, per chunk
// of the pairs that chose it, gather x, multiply by the slice's W tiles of that expert and
// scatter the rows (or, split by rows, the slice's columns of them) to y.
class ExpertGemmKernel {
public:
    ExpertGemmKernel(const ExpertGemmConfig& c, const std::string& name);
    CodeObject build();

private:
    CodeObject finish(Label done);
    void timing_only_counts();
    void declare();
    void layout();
    void issue_ids();
    void finish_ids();
    void route_ids();
    void sort_pairs();
    void sort_own_pairs(X e_lo, X e_hi);
    void sort_few_pairs();
    X list_few_pairs(T order, bool experts_pass);
    void write_entry(X at, X pr, X id, X t);
    void list_own_pairs(X e, X run, X np);
    void for_each_valid_pair(const std::function<void(X pr, X id)>& body);
    void expert_loop(X e_begin, X e_end, X w, X e_stride);
    void expert_pairs(X e);
    void pipelined_loop(X e, X e_end, X w, X e_stride);
    void seek_expert(X e, X e_end, X e_stride);
    void gather_issue(X c0, X rows);
    void gather_finish(X rows);
    void epilogue(X rows);
    void layout_streamed();
    void stream_rows(X w);
    void stream_load(X j, int buf, X na, X per_tile, bool prefetched = false);
    void issue_next_w(X na, T dst);
    void stream_body(X j, int buf, X na, X per_tile);
    void stream_finish();
    void gather_bias_rows(X np);
    void glu_rows(X np);
    X halved(X v);
    uint32_t glu_stride() const;
    void issue_combine_loads();
    void combine_rows(X np);
    void receive_x(X np);
    void even_share(X g, X na, X lo, X n, X t0, X t1);
    void norm_rows(X rows);
    void gather_x(X rows);
    void issue_token_rows();
    void prepare_token_rows();
    void multiply_pairs(X lo, X n, X end, X a);
    void prepare_x(X rows);
    void load_bias(X e);
    void chunk(X c0, X mc_reg);
    void gather_staged(X c0, X rows);
    void swiglu_rows(X rows);
    void stage_block(X c0, X rows, X j, int buf);
    void convert_block(X r0, X nb, X a);
    void block_bounds(X j, X rows, X r0, X nb, X a);
    void block_ids(X c0, X r0, X nb, X a);
    void load_w_tile(X i, int buf);
    void multiply(X rows);
    X tile_rows(X i);
    void scatter(X base, X rows);
    void store_row(X slot, X acc_row, uint32_t acc_stride);

    const ExpertGemmConfig& c;
    const ExpertPlan p;
    const bool by_rows;
    Builder b;
    X x{}, x_stride{}, norm_w{}, ids{}, w_shards{}, w_stride{}, expert_stride{}, bias{}, y{},
        y_stride{};
    X logits{}, logits_stride{}, weights{};  // the fused routing's (weights: and combine's)
    X out{}, out_stride{};                   // the fused combine's
    SliceShare share{};
    X w_exp{}, first{}, cnt{};  // the expert's first row of W; its pairs' place in the lists
    X col0{}, ncols{};          // the columns of y this slice writes
    X nvalid{};                 // streamed: pairs whose expert is in [0, E)
    X nactive{};                // streamed: experts with pairs (talist)
    uint32_t l1_ids = 0, l1_plist = 0, l1_glist = 0, l1_count = 0, l1_start = 0, l1_w[2] = {};
    uint32_t l1_bias = 0, l1_x = 0, l1_a = 0, l1_acc = 0, l1_y = 0;
    uint32_t l1_x2 = 0;  // prefetching x as the MMA reads it: the other chunk's rows
    X xbuf{};            // and which of l1_x, l1_x2 holds the chunk's
    X preloaded{};       // nonzero: multiply finds W tiles 0 and 1 loading
    uint32_t l1_elist = 0, l1_alist = 0, l1_widx[2] = {}, l1_brows = 0;  // streamed only
    T telist{}, talist{}, twidx{}, tbrows{};
    uint32_t l1_nw = 0, l1_sq = 0, l1_sc = 0;      // the fused norm's weight and scratch
    uint32_t l1_glu = 0;                           // the SwiGLU's σ, kStageRows rows
    uint32_t l1_gu = 0, l1_sw = 0;                 // the input's SwiGLU: gate | up rows, scratch
    uint32_t l1_logits = 0, l1_rw = 0, l1_rs = 0;  // the fused routing's
    uint32_t l1_po = 0, l1_cw = 0, l1_cx = 0, l1_cto = 0;  // the fused combine's
    uint32_t l1_vids = 0, l1_vkey = 0, l1_vidx = 0, l1_viota = 0, l1_vone = 0, l1_vsum = 0;
    T tnw{};
    Q qn{};
    T tids{}, tplist{}, tglist{}, tcount{}, tstart{}, tgidx{}, tx{}, ta{}, tw[2] = {}, tbias{};
    T tacc{}, tsub{};
    Q qio{}, qw[2] = {}, qst{}, qg{};  // qg: the prefetched gather's blocks
    Q qc{};                            // the fused combine's loads, issued first
    Q qt{};                            // token_rows: the tokens' rows
    Q qr{};                            // recv_input: the received rows
    X one{}, four{}, kdim{}, experts{};
    ExpertPrefetchRegion region{};  // prefetch_n or w0_prefetched: the top of L1
};

}  // namespace jal::kernels::linear::detail
