// Synthetic GPT-OSS models: metadata as llama.cpp's gpt-oss loader reads it, weights drawn
// from a seeded generator, expert weights quantised to MXFP4 with ggml's rounding (the dense
// matrices F32, or F16, BF16 or Q8_0 on request).
#include <jal/model/synthetic_gpt_oss.hpp>

#include <fmt/format.h>

#include "../tokenizer/o200k_vocab.hpp"
#include "synthetic_common.hpp"

#include <cmath>

namespace jal::model {

namespace {

using detail::ends_with;

// How each tensor is drawn: mean + std * N(0, 1). The scales keep activations near unit
// size through the residual stream, and make attention and routing matter enough that the
// greedy continuation depends on the context (not one token forever).
struct Draw {
    float mean;
    float std;
};

Draw draw_for(const TensorSpec& spec, const GptOssConfig& c)
{
    const std::string_view n = spec.name;
    const float inv_sqrt_e = 1.0f / std::sqrt(static_cast<float>(c.n_embd));
    if (ends_with(n, "norm.weight")) return {1.0f, 0.1f};
    if (ends_with(n, "attn_sinks.weight")) return {0.0f, 1.0f};
    if (ends_with(n, ".bias"))
        return {0.0f, n.find("ffn_gate_inp") != std::string_view::npos ? 0.5f : 0.1f};
    if (n == "token_embd.weight") return {0.0f, 1.0f};
    if (n == "output.weight") return {0.0f, 4.0f * inv_sqrt_e};
    if (ends_with(n, "attn_q.weight") || ends_with(n, "attn_k.weight"))
        return {0.0f, 1.0f * inv_sqrt_e};
    if (ends_with(n, "attn_v.weight")) return {0.0f, inv_sqrt_e};
    if (ends_with(n, "attn_output.weight"))
        return {0.0f, 1.0f / std::sqrt(static_cast<float>(c.n_head * c.head_dim))};
    if (ends_with(n, "ffn_gate_inp.weight")) return {0.0f, 2.0f * inv_sqrt_e};
    if (ends_with(n, "ffn_down_exps.weight"))
        return {0.0f, 0.5f / std::sqrt(static_cast<float>(c.n_ff_exp))};
    return {0.0f, inv_sqrt_e};  // ffn_gate_exps, ffn_up_exps
}

TensorType storage_type(const TensorSpec& spec, TensorType dense)
{
    // MXFP4 for the experts, as the published GPT-OSS checkpoints; the dense matrices in
    // `dense` (F32 by default, so that those weights are exact in every implementation);
    // norms, biases and sinks always F32 (llama.cpp requires it).
    if (spec.ne.size() == 3) return TensorType::MXFP4;
    if (spec.ne.size() == 2 && ends_with(spec.name, ".weight")) return dense;
    return TensorType::F32;
}

void require(bool ok, std::string_view option, const std::string& why)
{
    if (!ok)
        throw Error(JAL_STATUS_INVALID_FIELD, fmt::format("synthetic model: --{} {}", option, why));
}

}  // namespace

std::optional<TensorType> synthetic_dense_type(std::string_view name)
{
    if (name == "f32") return TensorType::F32;
    if (name == "f16") return TensorType::F16;
    if (name == "bf16") return TensorType::BF16;
    if (name == "q8_0") return TensorType::Q8_0;
    return std::nullopt;
}

std::optional<SyntheticVocab> synthetic_vocab(std::string_view name)
{
    if (name == "none") return SyntheticVocab::none;
    if (name == "o200k") return SyntheticVocab::o200k;
    return std::nullopt;
}

std::vector<std::string> synthetic_preset_names()
{
    return {"tiny", "small", "gqa-window", "medium"};
}

std::optional<SyntheticGptOssOptions> synthetic_preset(std::string_view name)
{
    SyntheticGptOssOptions o;
    o.preset = std::string(name);
    if (name == "tiny") {
        // One expert per token, plain multi-head attention; the window covers any short prompt.
        o.n_layer = 2, o.n_embd = 64, o.n_head = 4, o.n_head_kv = 4, o.head_dim = 16;
        o.n_expert = 4, o.n_expert_used = 1, o.n_ff_exp = 64, o.n_vocab = 256,
        o.sliding_window = 128;
    } else if (name == "small") {
        // GQA 4:1, two experts per token, head_dim * heads != hidden (as GPT-OSS).
        o.n_layer = 4, o.n_embd = 128, o.n_head = 8, o.n_head_kv = 2, o.head_dim = 32;
        o.n_expert = 8, o.n_expert_used = 2, o.n_ff_exp = 96, o.n_vocab = 512,
        o.sliding_window = 128;
    } else if (name == "gqa-window") {
        // GQA 3:1, three experts per token, a 16-token window: a 64-token prompt makes the
        // sliding-window and full-attention layers differ.
        o.n_layer = 3, o.n_embd = 96, o.n_head = 6, o.n_head_kv = 2, o.head_dim = 16;
        o.n_expert = 6, o.n_expert_used = 3, o.n_ff_exp = 64, o.n_vocab = 384,
        o.sliding_window = 16;
    } else if (name == "medium") {
        // Big enough for throughput figures (about 110 MB), the GPT-OSS proportions scaled down.
        o.n_layer = 8, o.n_embd = 512, o.n_head = 16, o.n_head_kv = 4, o.head_dim = 64;
        o.n_expert = 16, o.n_expert_used = 4, o.n_ff_exp = 512, o.n_vocab = 4096,
        o.sliding_window = 128;
    } else {
        return std::nullopt;
    }
    return o;
}

GptOssConfig synthetic_config(const SyntheticGptOssOptions& o)
{
    require(o.n_layer >= 1 && o.n_layer <= 512, "layers",
            fmt::format("{}: expected 1..512", o.n_layer));
    require(o.n_embd >= 32 && o.n_embd % 32 == 0, "hidden",
            fmt::format("{}: expected a positive multiple of 32 (MXFP4 blocks)", o.n_embd));
    require(o.n_head >= 1, "heads", "0: expected at least 1");
    require(o.n_head_kv >= 1 && o.n_head % o.n_head_kv == 0, "kv-heads",
            fmt::format("{}: expected a divisor of --heads {}", o.n_head_kv, o.n_head));
    require(o.head_dim >= 2 && o.head_dim % 2 == 0, "head-dim",
            fmt::format("{}: expected a positive even number", o.head_dim));
    require(o.n_expert >= 1 && o.n_expert <= 512, "experts",
            fmt::format("{}: expected 1..512", o.n_expert));
    require(o.n_expert_used >= 1 && o.n_expert_used <= o.n_expert, "experts-per-token",
            fmt::format("{}: expected 1..--experts ({})", o.n_expert_used, o.n_expert));
    require(o.n_ff_exp >= 32 && o.n_ff_exp % 32 == 0, "expert-ffn",
            fmt::format("{}: expected a positive multiple of 32 (MXFP4 blocks)", o.n_ff_exp));
    require(o.n_vocab >= 2, "vocab", fmt::format("{}: expected at least 2", o.n_vocab));
    require(o.n_ctx >= 1, "context", "0: expected at least 1");
    require(o.sliding_window >= 1, "sliding-window", "0: expected at least 1");
    const TensorType dt = o.dense_type;
    require(dt == TensorType::F32 || dt == TensorType::F16 || dt == TensorType::BF16 ||
                dt == TensorType::Q8_0,
            "dense-type", fmt::format("{}: expected f32, f16, bf16 or q8_0", tensor_type_name(dt)));
    require(dt != TensorType::Q8_0 || (o.n_head * o.head_dim) % 32 == 0, "dense-type",
            fmt::format("q8_0 needs --heads x --head-dim ({}) a multiple of 32 (attn_output's rows "
                        "are Q8_0 blocks)",
                        o.n_head * o.head_dim));

    GptOssConfig c;
    c.n_layer = o.n_layer;
    c.n_ctx_train = o.n_ctx;
    c.n_embd = o.n_embd;
    c.n_ff = o.n_ff_exp;
    c.n_head = o.n_head;
    c.n_head_kv = o.n_head_kv;
    c.head_dim = c.head_dim_v = c.n_rot = o.head_dim;
    c.n_expert = o.n_expert;
    c.n_expert_used = o.n_expert_used;
    c.n_ff_exp = o.n_ff_exp;
    c.n_vocab = o.n_vocab;
    c.sliding_window = o.sliding_window;
    c.swa_period = 2;
    c.rms_eps = 1e-5f;
    // GPT-OSS's RoPE: theta 150000, YaRN factor 32 over an original 4096-token context.
    c.rope_freq_base = c.rope_freq_base_swa = 150000.0f;
    c.rope_scaling_type = "yarn";
    c.rope_scaling_factor = 32.0f;
    c.rope_orig_ctx = 4096;
    c.tokenizer_model = "none";
    if (o.vocab == SyntheticVocab::o200k) {
        require(!o.o200k_ranks.empty(), "vocab",
                "o200k: no o200k_base ranks (this build has none embedded; see "
                "scripts/fetch-tiktoken.sh)");
        c.n_vocab = tokenizer::kO200kHarmonyVocab;
        c.tokenizer_model = "gpt2";
    }
    return c;
}

namespace {

// The metadata llama.cpp's gpt-oss loader reads.
void write_metadata(GgufWriter& w, const GptOssConfig& c, const SyntheticGptOssOptions& o)
{
    const std::string arch = kGptOssArch;
    auto k = [&](std::string_view suffix) { return fmt::format("{}.{}", arch, suffix); };
    w.set_string("general.architecture", arch);
    w.set_string("general.name", fmt::format("jal synthetic gpt-oss{}{} seed {}",
                                             o.preset.empty() ? "" : " ", o.preset, o.seed));
    w.set_u32(k("context_length"), c.n_ctx_train);
    w.set_u32(k("embedding_length"), c.n_embd);
    w.set_u32(k("feed_forward_length"), c.n_ff);
    w.set_u32(k("block_count"), c.n_layer);
    w.set_u32(k("attention.head_count"), c.n_head);
    w.set_u32(k("attention.head_count_kv"), c.n_head_kv);
    w.set_u32(k("attention.key_length"), c.head_dim);
    w.set_u32(k("attention.value_length"), c.head_dim_v);
    w.set_f32(k("attention.layer_norm_rms_epsilon"), c.rms_eps);
    w.set_u32(k("attention.sliding_window"), c.sliding_window);
    w.set_f32(k("rope.freq_base"), c.rope_freq_base);
    w.set_string(k("rope.scaling.type"), c.rope_scaling_type);
    w.set_f32(k("rope.scaling.factor"), c.rope_scaling_factor);
    w.set_u32(k("rope.scaling.original_context_length"), c.rope_orig_ctx);
    w.set_u32(k("expert_count"), c.n_expert);
    w.set_u32(k("expert_used_count"), c.n_expert_used);
    w.set_u32(k("expert_feed_forward_length"), c.n_ff_exp);
    if (o.vocab == SyntheticVocab::o200k) {
        tokenizer::write_o200k_vocab(w, o.o200k_ranks);
    } else {
        // No tokenizer: token ids in, token ids out. llama.cpp's "none" vocabulary takes its
        // size from <arch>.vocab_size.
        w.set_string("tokenizer.ggml.model", c.tokenizer_model);
        w.set_u32(k("vocab_size"), c.n_vocab);
    }
    w.set_u64("jal.synthetic.seed", o.seed);
}

}  // namespace

SyntheticModelSummary write_synthetic_gpt_oss(const std::string& path,
                                              const SyntheticGptOssOptions& o,
                                              const SyntheticProgress& progress)
{
    const GptOssConfig c = synthetic_config(o);
    GgufWriter w;
    write_metadata(w, c, o);

    SyntheticModelSummary summary;
    summary.config = c;
    const std::vector<TensorSpec> specs = gpt_oss_tensor_specs(c);
    auto how = [&](const TensorSpec& spec) {
        const Draw d = draw_for(spec, c);
        return detail::TensorDraw{d.mean, d.std, storage_type(spec, o.dense_type)};
    };
    summary.parameters = detail::write_synthetic_file(w, path, o.seed, specs, how, progress);
    summary.tensors = specs.size();
    summary.file_bytes = w.file_size();
    return summary;
}

}  // namespace jal::model
