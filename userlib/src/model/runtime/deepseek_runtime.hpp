// The DeepSeek-V3 architecture (deepseek2: DeepSeek R1, Kimi K2.5) on the chip
// (docs/deepseek.md §5, docs/model-runtime.md): the model runtime's second graph, one
// dispatch a kernel, from the kernel library's GEMMs, expert GEMMs, norms, RoPE, KV append,
// attention, the group routing, SwiGLU and combine.
//
// Multi-head latent attention in the absorbed form, built from kernels that exist:
//   * the cache is one KV head of C + R (576) values a position: [rmsnorm(c), rope(k_pe)],
//     appended as both the key and the value;
//   * every query head's [k_b·q_nope, q_pe] is one expert GEMM with the heads as experts:
//     head h's "expert" is [[K_b[h], 0], [0, I_R]] ((C + R) × Dk, F32), so q_pe passes through
//     exactly and the query comes out C + R wide;
//   * attention is then MQA of head_dim C + R (the value's last R columns are k_pe, unused);
//   * each head's output goes back through V_b[h] padded with R zero columns (Dv × (C + R)),
//     again one expert GEMM, then the output projection.
// RoPE: ggml's NORM mode (consecutive pairs) on the R dims equals the library's NEOX
// rotation (halves) once the pe rows of attn_kv_a_mqa and attn_q_b are permuted from pairs
// to halves at load: q_pe and k_pe are then both in the permuted order and their dot product
// is unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <jal/kernels/dispatch.hpp>
#include <jal/model/deepseek_config.hpp>
#include <jal/model/runtime.hpp>

#include "placement.hpp"

namespace jal::model::detail {

// A weight matrix split by rows (GEMM) or experts (expert GEMM) over the slices.
struct DsMatrix {
    uint32_t n = 0, kdim = 0, experts = 0;
    jal_dtype dtype = JAL_DT_F32;
    uint64_t row_bytes = 0;
    const std::byte* data = nullptr;  // host bytes (nullptr: timing only)
    std::vector<Place> shards;
    std::vector<uint32_t> first_row;
    Place table;
    // Routed experts, when the runtime keeps the second layout (docs/model-runtime.md, "Expert
    // split"): per slice its rows slice_range(n) of every expert, and their shard table.
    std::vector<Place> row_shards;
    Place row_table;
};

struct DsVec {  // read whole by every slice (replicated)
    Place place;
    const std::byte* data = nullptr;
    uint64_t bytes = 0;
};

struct DsLayer {
    DsVec attn_norm, q_a_norm, kv_a_norm, ffn_norm, expert_bias;
    DsMatrix wa;     // attn_q_a | attn_kv_a_mqa (pe rows as halves): one GEMM
    DsMatrix wq_b;   // attn_q_b (each head's pe rows as halves)
    DsMatrix k_abs;  // H experts of (C + R) × Dk
    DsMatrix v_abs;  // H experts of Dv × (C + R)
    DsMatrix wo;
    DsMatrix gate_up, down;  // dense layers: ffn_gate | ffn_up, ffn_down
    DsMatrix router, gate_up_exps, down_exps, sh_gate_up, sh_down;  // MoE layers
};

struct DsActivations {
    Place x, a, q, qf, att, o, rlog, ids, wts, gu, act, sgu, sact, eo, logits, tokens, pos, qpos,
        hids;
};

class DeepseekRuntime final : public Runtime {
public:
    DeepseekRuntime(std::optional<GgufFile> file, const DeepseekConfig& config,
                    const runtime::Device& device, const RuntimeOptions& options);

    const GptOssConfig& config() const override { return summary_; }
    const RuntimeOptions& options() const override { return o_; }
    uint32_t slices() const override { return S_; }
    uint64_t weight_bytes() const override { return weight_bytes_; }
    int create_sequence() override;
    void free_sequence(int seq) override;
    uint32_t sequence_length(int seq) const override { return slot(seq).len; }
    void assume_length(int seq, uint32_t len) override;
    std::vector<float> prefill(int seq, std::span<const int32_t> tokens) override;
    std::vector<std::vector<float>> decode(std::span<const std::pair<int, int32_t>> batch) override;
    // `greedy` changes nothing: decode_greedy runs decode().
    void prepare_decode(std::span<const int> seqs, bool greedy = false) override;
    // Chosen on the host (detail::greedy_on_host).
    std::vector<std::vector<int32_t>>
    decode_greedy(std::span<const std::pair<int, int32_t>> batch, uint32_t steps,
                  const std::function<void(std::span<const int32_t>)>& on_step) override;
    // Not yet one pass (docs/deepseek.md §7): the decode step, then the chunk; the same
    // numbers, the weights streamed twice.
    std::vector<std::vector<float>> mixed_step(std::span<const std::pair<int, int32_t>> batch,
                                               int prompt_seq,
                                               std::span<const int32_t> chunk) override;
    std::vector<uint8_t> read_back_data_for_test(uint64_t max_bytes) override;
    const ChipTotals& last() const override { return last_; }
    const ChipTotals& total() const override { return total_; }
    uint64_t decode_min_bytes(uint32_t users, uint32_t context) const override;
    const std::map<std::string, ChipTotals>& last_by_kernel() const override { return by_kernel_; }

private:
    struct Slot {
        bool used = false;
        uint32_t len = 0;
        std::vector<Place> heads;  // per layer: the head table {k_va, vt_va}
        std::vector<Place> cache;  // per layer: K then Vᵀ, interleaved over the slices
    };
    struct Segment {  // one sequence's rows of a graph run
        int seq;
        uint32_t row0, rows, pos0;
    };

    const Slot& slot(int seq) const;
    Slot& slot(int seq) { return const_cast<Slot&>(std::as_const(*this).slot(seq)); }
    // The slice that appends slot j's latent rows of layer il (the cache itself is
    // interleaved): successive layers and slots on successive slices.
    uint32_t kv_slice(uint32_t j, uint32_t il) const { return (j + il) % S_; }
    uint32_t local_experts() const;
    void shard_for_tray();

    // deepseek_weights.cpp
    const GgufTensor* tensor(const std::string& name) const;
    void plan_weights();
    void plan_layer(DsLayer& L, uint32_t il);
    void plan_attention(DsLayer& L, uint32_t il);
    void plan_ffn(DsLayer& L, uint32_t il);
    void plan_absorbed(DsLayer& L, uint32_t il);
    void plan_rope_tables();
    void plan_caches();
    void plan_activations();
    void plan_expert_rows();
    bool split_by_rows(const DsMatrix& m, uint32_t tokens, uint32_t k, bool per_pair) const;
    void plan_vec(DsVec& v, const std::byte* data, uint64_t bytes);
    void plan_vec(DsVec& v, const std::string& name, uint64_t bytes);
    DsMatrix matrix(const std::string& name, uint32_t n, uint32_t kdim, uint32_t experts,
                    jal_dtype timing_dtype);
    DsMatrix fused(const std::vector<std::string>& names, uint32_t n, uint32_t kdim,
                   uint32_t experts, jal_dtype timing_dtype);
    void plan_matrix(DsMatrix& m, const std::byte* data, uint32_t n, uint32_t kdim,
                     uint32_t experts, jal_dtype dtype);
    const std::byte* keep(std::vector<std::byte>&& bytes);
    void upload_tables();
    void upload_weights();

    // deepseek_graph.cpp
    const kernels::Program& program(const std::string& key,
                                    const std::function<kernels::CodeObject()>& build);
    void add(const kernels::Program& p, uint64_t mask, const kernels::Args& args, const char* what);
    void gemm(const DsMatrix& m, uint32_t rows, uint64_t x, uint64_t x_stride, uint64_t y,
              uint64_t y_stride, const char* what, const DsVec* norm = nullptr,
              bool accumulate = false);
    void expert_gemm(const DsMatrix& m, uint32_t tokens, uint32_t k, bool per_pair, uint64_t x,
                     uint64_t x_stride, uint64_t ids, uint64_t y, uint64_t y_stride,
                     const char* what, const DsVec* norm = nullptr);
    void timing_expert_gemm(const DsMatrix& m, uint32_t tokens, uint32_t k, uint64_t x,
                            uint64_t x_stride, uint64_t y, const char* what, const DsVec* norm);
    void rope(uint32_t rows, uint64_t x, uint64_t stride, uint64_t positions, const char* what);
    void swiglu(uint32_t rows, uint32_t cols, uint64_t gu, uint64_t out, const char* what);
    void add_attention(uint32_t il, const std::vector<Segment>& segs);
    void add_mla(uint32_t il, const std::vector<Segment>& segs, uint32_t T);
    void add_dense_ffn(uint32_t il, uint32_t T);
    void add_moe(uint32_t il, uint32_t T);
    std::vector<float> run(const std::vector<Segment>& segs, std::span<const int32_t> tokens,
                           std::span<const int32_t> pos, uint32_t out_row0, uint32_t out_rows);
    // run()'s pass, added to the Launcher's batch up to its cut.
    void add_pass(const std::vector<Segment>& segs, std::span<const int32_t> tokens,
                  std::span<const int32_t> pos, uint32_t out_row0, uint32_t out_rows);
    ChipTotals run_batch();
    uint64_t va(const Place& p) const { return placement_.va(p); }
    void check_tokens(std::span<const int32_t> tokens) const;

    std::optional<GgufFile> file_;
    DeepseekConfig c_;
    GptOssConfig summary_;  // the fields every architecture shares (n_vocab, n_layer, ...)
    RuntimeOptions o_;
    const runtime::Device& device_;
    runtime::Context context_;
    uint32_t S_ = 0;
    uint64_t all_mask_ = 0;
    uint32_t T_ = 0;                   // rows of a graph run
    uint32_t W_ = 0;                   // C + R: a cache row, the absorbed query's width
    jal_dtype kv_dtype_ = JAL_DT_F32;  // the latent caches' elements (o_.kv_type)
    uint32_t kv_bytes_ = 4;            // of one element
    uint32_t A_ = 0;                   // a row of wa's output: q_lora + C + R
    uint32_t k_local_ = 0;             // pairs a token routes to this chip's experts
    uint32_t shared_ff_ = 0;           // the shared experts' width on this chip
    double kq_scale_ = 0;     // the score scale with YaRN's magnitude (docs/deepseek.md §1)
    double rope_attn_ = 1.0;  // YarnParams::attn_factor of the RoPE tables
    Placement placement_;
    std::unique_ptr<runtime::Queue> queue_;
    std::unique_ptr<kernels::Launcher> launch_;
    std::map<std::string, std::unique_ptr<kernels::Program>> programs_;
    std::map<std::string, std::unique_ptr<runtime::Memory>> timing_tables_;
    std::map<std::string, ChipTotals> by_kernel_;
    std::vector<std::vector<std::byte>> owned_;
    std::vector<std::pair<Place, const DsVec*>> vec_uploads_;
    std::vector<DsMatrix*> matrices_;
    DsVec embd_, out_norm_, rope_cos_, rope_sin_, zero_bias_;
    jal_dtype embd_dtype_ = JAL_DT_BF16;
    uint64_t embd_row_bytes_ = 0;
    DsMatrix output_;
    std::vector<DsLayer> layers_;
    std::vector<Slot> slots_;
    DsActivations a_;
    std::vector<float> cos_, sin_;
    uint64_t weight_bytes_ = 0;
    ChipTotals last_, total_;
};

// DeepSeek-V3's score scale and the RoPE tables' attn_factor, as llama_context and the
// deepseek2 graph derive them (docs/deepseek.md §1).
void deepseek_scales(const DeepseekConfig& c, double& kq_scale, double& rope_attn_factor);

}  // namespace jal::model::detail
