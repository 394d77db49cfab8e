// A straightforward double-precision GPT-OSS forward pass on the host, written from the
// architecture (llama.cpp's models/openai-moe.cpp and ggml's operators) and independent of
// the kernel library: the oracle the model runtime's logits are checked against.
//
// Numerics::ggml also reproduces llama.cpp's rounding of activations to the weight's
// vec_dot_type: Q8_0 blocks (F16 scale, int8 values) before every MXFP4 dot product, F16
// before F16 weights. Activations meet Q8_0 weights rounded to Q8_0 in both modes (llama.cpp
// does; so does the chip, whose matrix engine multiplies Q8_0 only by Q8_0).
// half_kv: the KV cache holds each key and value rounded to F32 (the chip's activations) and
// then to F16 (the compiler's _Float16, nearest even), as --kv-type f16 stores them.
#pragma once

#include <cstdint>
#include <vector>

#include <jal/model/gguf.hpp>
#include <jal/model/gpt_oss_config.hpp>

#include "common/host_matrix.hpp"

namespace jal::test {

class ReferenceModel {
public:
    ReferenceModel(const jal::model::GgufFile& file, bool ggml_numerics, bool half_kv = false);

    // A sequence's state: its K and V per layer (positions × n_head_kv·head_dim).
    struct Sequence {
        std::vector<std::vector<double>> k, v;
        uint32_t len = 0;
    };
    Sequence new_sequence() const;
    // Runs `tokens` at the sequence's next positions; returns the last one's logits.
    std::vector<double> forward(Sequence& seq, const std::vector<int32_t>& tokens) const;

    const jal::model::GptOssConfig& config() const { return c_; }

private:
    using Matrix = HostMatrix;
    Matrix load(const std::string& name) const { return load_host_matrix(file_, name); }
    std::vector<double> vec(const std::string& name) const { return load_host_vector(file_, name); }
    // y = W[expert] x, rounding x as llama.cpp does for the weight's type.
    std::vector<double> matvec(const Matrix& m, const std::vector<double>& x,
                               uint32_t expert = 0) const
    {
        return host_matvec(m, x, ggml_, expert);
    }

    const jal::model::GgufFile& file_;
    jal::model::GptOssConfig c_;
    bool ggml_;
    bool half_kv_;
    struct Layer {
        std::vector<double> attn_norm, post_norm, bq, bk, bv, bo, sinks, br, bg, bu, bd;
        Matrix wq, wk, wv, wo, wr, wg, wu, wd;
    };
    std::vector<Layer> layers_;
    // forward()'s steps: RoPE (YaRN) of one head in place; layer il's attention output
    // (appending the position's K and V to the sequence); the MoE block's output.
    void rope(double* head, uint32_t pos) const;
    std::vector<double> attention(uint32_t il, Sequence& seq, const std::vector<double>& h,
                                  uint32_t pos) const;
    std::vector<double> moe(const Layer& L, const std::vector<double>& h) const;
    Matrix embd_, out_;
    std::vector<double> out_norm_;
};

}  // namespace jal::test
