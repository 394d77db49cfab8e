// rope.hpp: rotary position embedding, NEOX style (the first and second half of each head
// are the pairs), with YaRN scaling as llama.cpp computes it for GPT-OSS.
//
// For a head x of head_dim d (half = d/2), pair i = 0..half-1 at position p:
//   x'[i]        = x[i] * cos(theta_i(p)) - x[i+half] * sin(theta_i(p))
//   x'[i+half]   = x[i] * sin(theta_i(p)) + x[i+half] * cos(theta_i(p))
// with cos and sin both multiplied by mscale. theta and mscale follow ggml's rope_yarn
// (ggml/src/ggml-cpu/ops.cpp) and ggml_rope_yarn_corr_dims (ggml/src/ggml.c):
//   theta_extrap = p * base^(-2i/d),  theta_interp = theta_extrap / factor
//   corr = [max(0, floor(cd(beta_fast))), min(d-1, ceil(cd(beta_slow)))],
//     cd(beta) = d * ln(n_ctx_orig / (2 pi beta)) / (2 ln base)
//   ramp = (1 - clamp((i - corr0) / max(0.001, corr1 - corr0), 0, 1)) * ext_factor
//   theta = theta_interp * (1 - ramp) + theta_extrap * ramp
//   mscale = attn_factor * (1 + 0.1 ln factor)   (when ext_factor != 0)
// The cos/sin tables are computed here on the host in double and stored as F32; the
// rotation runs on the chip. llama.cpp itself computes theta in float by repeated
// multiplication, so its cos/sin drift from these by up to ~1e-4 absolute at positions in
// the thousands: a model-level comparison must allow for that.
//
// The kernel rotates rows of tokens in place: a row is n_head heads of head_dim F32
// (llama.cpp's Q or K after the projection). Slice s of n works on tokens
// [s*ceil(rows/n), (s+1)*ceil(rows/n)); it gathers the table rows of its tokens'
// positions (place the tables replicated) and reads and writes its own rows of x.
#pragma once

#include <cstdint>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/tensor.hpp>

namespace jal::kernels {

struct YarnParams {
    uint32_t head_dim = 64;  // n_rot: every dimension of the head is rotated
    double freq_base = 150000.0;
    double factor = 32.0;  // 1 / freq_scale; 1 disables scaling
    uint32_t n_ctx_orig = 4096;
    double beta_fast = 32.0;
    double beta_slow = 1.0;
    double ext_factor = 1.0;   // llama.cpp: 1 when the GGUF's rope scaling is YaRN
    double attn_factor = 1.0;  // llama.cpp's yarn_attn_factor for GPT-OSS works out to 1
};

// ggml_rope_yarn_corr_dims: the first and last pair index of the ramp.
JAL_API void yarn_corr_dims(const YarnParams& params, double dims[2]);

// cos and sin for positions 0..n_positions-1: row p holds head_dim/2 values, pair order.
struct RopeTables {
    uint32_t n_positions = 0;
    uint32_t half = 0;
    std::vector<float> cos;  // n_positions x half, mscale included
    std::vector<float> sin;
};
JAL_API RopeTables rope_yarn_tables(const YarnParams& params, uint32_t n_positions);

struct JAL_API RopeConfig {
    uint32_t n_head = 0;
    uint32_t head_dim = 64;   // even
    uint32_t block_rows = 0;  // tokens a slice holds in L1 at once; 0 = as many as fit (<= 64)
    uint32_t rows_per_block() const;
};

// Arguments, in order: x (address; rows x n_head*head_dim F32, rotated in place),
// x_stride, rows, positions (address of rows I32, or 0: positions pos_start, pos_start+1,
// ...), pos_start, cos (address of the table), sin (address of the table). Positions
// must lie inside the tables: the kernel does not check them.
JAL_API CodeObject build_rope_neox(const RopeConfig& config);

// Where the tables are on the device (each n_positions x head_dim/2 F32, packed).
struct RopeTablesRef {
    uint64_t cos_va = 0;
    uint64_t sin_va = 0;
    uint32_t n_positions = 0;
};

// Argument words for x (rows x n_head*head_dim F32, rotated in place) and either
// positions (I32, one a row of x; va 0 for none) or consecutive positions from pos_start
// (checked against the tables).
JAL_API std::vector<uint64_t> rope_neox_args(const RopeConfig& config, const TensorRef& x,
                                             const TensorRef& positions, uint32_t pos_start,
                                             const RopeTablesRef& tables);

// Runs build_rope_neox(config)'s program: rotates x in place. Throws jal::Error on a bad
// tensor (as rope_neox_args) or a failed dispatch (Launcher::run).
JAL_API jal_dispatch_report rope_neox(Launcher& launcher, const Program& program,
                                      const RopeConfig& config, const TensorRef& x,
                                      const TensorRef& positions, uint32_t pos_start,
                                      const RopeTablesRef& tables,
                                      const DispatchOptions& options = {});

}  // namespace jal::kernels
