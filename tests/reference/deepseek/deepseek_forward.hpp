// A straightforward double-precision forward pass of the DeepSeek-V3 architecture
// (deepseek2) on the host, written from llama.cpp's models/deepseek2.cpp, build_moe_ffn and
// ggml's operators, and independent of the kernel library: the oracle for the DeepSeek
// model runtime, itself checked against llama.cpp (deepseek_reference_test.cpp).
//
// Attention is MLA in the absorbed form llama.cpp decodes with: per position the cache
// holds the normalised latent c (kv_lora_rank) and the RoPE key k_pe (n_rot); each head's
// query is [k_b·q_nope, rope(q_pe)], scores are q·[c, k_pe] × mscale²/sqrt(head_dim_k),
// the head's output v_b·(Σ p·c). Routing: sigmoid (or softmax) scores, the correction bias
// added for selection only, the best n_group_used groups by the sum of their two best
// biased scores, the top n_expert_used experts among them, weighted by their unbiased
// scores (normalised, times expert_weights_scale), plus the shared expert.
//
// ggml numerics also reproduce llama.cpp's rounding of activations to the weight's
// vec_dot_type (common/host_matrix.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include <jal/model/deepseek_config.hpp>
#include <jal/model/gguf.hpp>

#include "common/host_matrix.hpp"

namespace jal::test {

class DeepseekReference {
public:
    // `expanded_mla`: attention in the expanded form instead (per cached position and head
    // k_nope = K_bᵀ·c and v = V_b·c, then ordinary attention over Dk-wide keys), the same
    // function in other arithmetic, as a prefill kernel may compute it. `half_kv`: the cache
    // holds each latent entry rounded to F32 (the chip's activations) and then to F16
    // (nearest even), as --kv-type f16 stores it.
    DeepseekReference(const jal::model::GgufFile& file, bool ggml_numerics,
                      bool expanded_mla = false, bool half_kv = false);

    // A sequence's state: per layer, per position, [c (kv_lora_rank), k_pe (n_rot)].
    struct Sequence {
        std::vector<std::vector<double>> kv;
        uint32_t len = 0;
    };
    Sequence new_sequence() const;
    // Runs `tokens` at the sequence's next positions; returns the last one's logits.
    std::vector<double> forward(Sequence& seq, const std::vector<int32_t>& tokens) const;

    // The experts layer `il` routes the normalised hidden state `h` to, with their weights,
    // in selection order (exposed for tests of the routing itself).
    struct Route {
        std::vector<uint32_t> experts;
        std::vector<double> weights;
    };
    Route route(uint32_t il, const std::vector<double>& h) const;

    const jal::model::DeepseekConfig& config() const { return c_; }
    double kq_scale() const { return kq_scale_; }

private:
    struct Layer {
        std::vector<double> attn_norm, q_a_norm, kv_a_norm, ffn_norm, expert_bias;
        HostMatrix wq_a, wq_b, wq, wkv_a, wk_b, wv_b, wo;
        HostMatrix ffn_gate, ffn_up, ffn_down;             // dense layers
        HostMatrix router, gate_exps, up_exps, down_exps;  // MoE layers
        HostMatrix gate_shexp, up_shexp, down_shexp;
    };
    Layer load_layer(uint32_t il) const;
    std::vector<double> mv(const HostMatrix& m, const std::vector<double>& x,
                           uint32_t slice = 0) const
    {
        return host_matvec(m, x, ggml_, slice);
    }
    void rope(double* pairs, uint32_t pos) const;  // n_rot values, consecutive pairs
    // One head's attention output (Dv) for query head `q` (Dk, its q_pe already rotated)
    // over the layer's cache, in either form.
    std::vector<double> head_absorbed(const Layer& L, uint32_t hh, const double* q,
                                      const std::vector<double>& cache, uint32_t n) const;
    std::vector<double> head_expanded(const Layer& L, uint32_t hh, const double* q,
                                      const std::vector<double>& cache, uint32_t n) const;
    std::vector<double> attention(uint32_t il, Sequence& seq, const std::vector<double>& h,
                                  uint32_t pos) const;
    std::vector<double> swiglu(const HostMatrix& gate, const HostMatrix& up, const HostMatrix& down,
                               const std::vector<double>& h, uint32_t slice = 0) const;
    std::vector<double> moe(uint32_t il, const std::vector<double>& h) const;

    const jal::model::GgufFile& file_;
    jal::model::DeepseekConfig c_;
    bool ggml_;
    bool expanded_;
    bool half_kv_;
    double freq_scale_ = 1, ext_factor_ = 0, rope_mscale_ = 1, kq_scale_ = 1;
    double corr_[2] = {0, 0};
    std::vector<Layer> layers_;
    HostMatrix embd_, out_;
    std::vector<double> out_norm_;
};

}  // namespace jal::test
