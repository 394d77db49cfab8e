// gemm.hpp: y (F32, M×N) = x (M×K) × Wᵀ (+ bias), W in weight layout (N rows of K) in
// MXFP4, MXFP8 E4M3, BF16, F16, Q8_0 or F32. GEMV is the same kernel with a small M.
//
// Split: slice s owns the contiguous rows slice_range(N, slices, s) of W (and of the bias,
// and those columns of y). Place each slice's rows in its local HBM and pass their first
// addresses as the shard table (linear.hpp); x is read whole by every slice (place it
// replicated, or quantize it once with quantize.hpp when several slices share it).
//
// Per slice: x is brought into L1 once per chunk of M rows (converted to the numerics'
// activation format there if it is F32 in memory), then W streams through two tile
// buffers, tile_n rows of all K at a time: the load of tile i+1 is in flight while the
// matrix engine works on tile i, so a GEMV runs at the slice's HBM bandwidth and a large-M
// GEMM at the matrix engine's rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/linear.hpp>

namespace jal::kernels::linear {

struct GemmConfig {
    uint32_t m = 1;  // rows of x and y
    uint32_t n = 0;  // rows of W, columns of y
    uint32_t k = 0;  // columns of x and W (a multiple of 32 for block formats)
    jal_dtype weight = JAL_DT_MXFP4;
    Numerics numerics = Numerics::native;
    // x's format in memory: F32, or already activation_dtype(weight, numerics) (for
    // example the output of quantize.hpp), which is then loaded as is.
    jal_dtype x_dtype = JAL_DT_F32;
    bool bias = false;
    // Fused RMS norm of x (F32 in memory) on its way in: each slice normalises the rows it
    // loads (x / sqrt(mean(x²) + eps) · norm_weight, the same instructions as rms_norm.hpp)
    // before converting them, so no normalised copy of x is written and read back.
    bool rms_norm = false;
    float norm_eps = 1e-5f;
    // y += x × Wᵀ (+ bias): each tile of y is read and added before it is stored back (a
    // residual add in the epilogue, y + (x·Wᵀ + bias) as the elementwise add would give it).
    // Not together with rms_norm (tile registers).
    bool accumulate = false;
    uint32_t tile_n = 0;  // rows of W per tile; 0 chooses
    // W's shards K-major (F32, BF16 or F16 only): each shard, the rows of W one slice owns
    // (count of them), is stored as K rows of count elements (k_major_shard), and w_stride is
    // the element size. Each tile is then K rows of its tile_n columns and the MMA takes it
    // K-major (ISA 1.4): the same products in the same order, so the same bits, and the
    // emulator's GEMV needs no transposes (docs/kernels.md, "K-major weights").
    bool w_kmajor = false;
    // Row groups (a large M, e.g. a prefill): the dispatch's n slices form `row_groups`
    // groups (it must divide n; the kernel traps INVALID_FIELD otherwise). Slice s takes the
    // rows slice_range(M, row_groups, s mod row_groups) of x and y, and the columns of the
    // row_groups shards s − s mod row_groups … + row_groups − 1 of the shard table (one of
    // them its own): every slice then reads 1/row_groups of x and row_groups shards of W
    // instead of all of x and one shard. Every element of y is still one slice's dot
    // product over all of K in K order: the same bits as row_groups = 1.
    uint32_t row_groups = 1;
    // Row groups only: w_shards is one table per slice (n × n entries, slice s's at s·n), so
    // that each slice can name its own local copies of its column group's shards (the
    // runtime's dense copies: the a shards then stream from local HBM, not a − 1 of them
    // over the NoC). The same rows of W, so the same bits.
    bool slice_tables = false;
    // The first W tiles (and their bias) load before the kernel's ACQUIRE, so that in a
    // staged program they stream while the stage before still runs; x and y are read after
    // it as always. It pays on slices the stage before leaves idle (the runtime's output
    // projection beside the attention: docs/model-runtime.md). W and the bias must not be
    // written by earlier work of the program. Needs one chunk of x (M ≤ the plan's m_chunk)
    // and no row groups. The same bits.
    bool w_before_acquire = false;
    // x received, not loaded (F32, as stored; one chunk of rows, no row groups, not
    // accumulating, and converted through one staging block): the rows come as messages
    // from the stage before on the same slices, sender r sending its columns
    // slice_range(K, slices, r) of all M rows (expert_gemm.hpp's send_residual). The W tiles
    // load first, with no ACQUIRE: the code object is marked after_messages, so a staged
    // program starts it without a barrier. Every slice must have columns of y (the kernel
    // traps INVALID_FIELD otherwise: its messages would stay in the FIFOs). x and x_stride
    // are still arguments but not read. The same bits as loading the stored rows.
    bool recv_x = false;
    // x_senders (with recv_x): the senders are not this stage's slices but the dispatch
    // slices set in a mask, a stage on other slices (ISA 1.3 dispatch peers): the i-th set
    // bit of `count` sends slice_range(K, count, i), received in one RECVALL over the mask
    // (ISA 1.7). One more argument, last: x_senders (the mask). The router after the output
    // projection beside the attention (docs/model-runtime.md).
    bool x_senders = false;
    // forward_x (with recv_x): the whole received rows (F32, before the norm) also go to this
    // slice as one message, ahead of y, for an expert GEMM after it that takes them from
    // here (expert_gemm.hpp's x_from_self) instead of from every sender again.
    bool forward_x = false;
    // y sent as messages (docs/kernels.md, "Rows as messages"): each slice sends its columns
    // of y (all M rows, as one tile) to every slice of the whole dispatch (named as dispatch
    // slices, so also from a stage on fewer), itself included, send_y times over (all of the
    // first copy, then the second, ...), for kernels in the next stages that receive them (recv_x, or the expert GEMM's
    // recv_logits and recv_x), one copy each. One chunk of rows, no row groups, and a
    // slice's columns must fit one W tile (the kernel traps INVALID_FIELD otherwise: its
    // receivers take one message a sender). store_y = false leaves y unwritten (only with
    // send_y: the receivers are y's only readers).
    uint32_t send_y = 0;
    bool store_y = true;
    uint32_t max_m_chunk =
        0;  // cap on x rows resident at once (tests of the M loop); 0: L1 decides
};

// How a configuration uses L1 (for documentation and tests).
struct GemmPlan {
    jal_dtype activation = JAL_DT_F32;
    bool convert_x = false;   // x is F32 in memory and converted on the chip
    uint32_t tile_n = 0;      // W rows per tile
    uint32_t m_chunk = 0;     // x rows resident in L1 at once
    uint32_t stage_rows = 0;  // F32 rows of x per conversion step
    uint32_t l1_bytes = 0;
};
JAL_API GemmPlan
plan_gemm(const GemmConfig& c);  // throws jal::Error (INVALID_FIELD) if it cannot fit

// The kernel. Arguments, in order:
//   x (address), x_stride (bytes between rows of x), norm_weight (address of K F32; only
//   with config.rms_norm),
//   w_shards (address of the shard table: one u64 per dispatch slice), w_stride (bytes
//   between rows of W; with config.w_kmajor the element size), bias (address of N F32; only with config.bias),
//   y (address), y_stride (bytes between rows of y),
//   x_senders (a mask of dispatch slices; only with config.x_senders).
JAL_API CodeObject build_gemm(const GemmConfig& c);
JAL_API std::string gemm_name(const GemmConfig& c);

// One shard of W as a K-major GEMM reads it (GemmConfig::w_kmajor): `rows` rows of k
// elements of `dtype` (F32, BF16 or F16; packed) into k rows of `rows` elements at out.
JAL_API void k_major_shard(const void* rows, uint32_t n_rows, uint32_t k, jal_dtype dtype,
                           void* out);

// Floating-point operations of one run (2·M·N·K, plus M·N for the bias).
JAL_API uint64_t gemm_flops(const GemmConfig& c);

// The kernel's argument words. x: M×K (F32 or config.x_dtype); w: N×K of config.weight
// (only its dtype, shape and stride are used: the rows are found through w_shards, a
// device table of shard_table(w, slices) addresses); bias: 1×N F32 (va 0 without);
// y: M×N F32. Throws jal::Error(INVALID_FIELD) on a mismatch.
JAL_API std::vector<uint64_t> gemm_args(const GemmConfig& c, const TensorRef& x, uint64_t w_shards,
                                        const TensorRef& w, const TensorRef& bias,
                                        const TensorRef& y, const TensorRef& norm_weight = {});

// Runs build_gemm(c)'s program (throws jal::Error on a bad tensor or a failed dispatch).
JAL_API jal_dispatch_report gemm(Launcher& launcher, const Program& program, const GemmConfig& c,
                                 const TensorRef& x, uint64_t w_shards, const TensorRef& w,
                                 const TensorRef& bias, const TensorRef& y,
                                 const DispatchOptions& options = {});

}  // namespace jal::kernels::linear
