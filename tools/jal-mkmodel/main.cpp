// jal-mkmodel: writes a synthetic GGUF model of the GPT-OSS or the DeepSeek-V3 architecture
// from a seed and a shape (a preset, then any shape options on top), loadable by llama.cpp
// (and, for GPT-OSS, jal-run).
#include <charconv>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <jal/error.hpp>
#include <jal/model/synthetic_deepseek.hpp>
#include <jal/model/synthetic_gpt_oss.hpp>

#include "mkmodel.hpp"
#include "tools/common/o200k_ranks.hpp"
#include "tools/common/version.hpp"

namespace {

std::string preset_help()
{
    std::string s = "start from a named shape:";
    for (const std::string& name : jal::model::synthetic_preset_names()) {
        const auto o = *jal::model::synthetic_preset(name);
        s += fmt::format(
            "\n  {:<11} {} layers, hidden {}, {}/{} heads x {}, {} experts ({} per token) x {}, "
            "vocab {}, window {}",
            name, o.n_layer, o.n_embd, o.n_head, o.n_head_kv, o.head_dim, o.n_expert,
            o.n_expert_used, o.n_ff_exp, o.n_vocab, o.sliding_window);
    }
    return s + jal::tools::mkmodel::deepseek_preset_help();
}

nlohmann::json summary_json(const std::string& path, const jal::model::SyntheticGptOssOptions& o,
                            const jal::model::SyntheticModelSummary& s)
{
    const auto& c = s.config;
    return {
        {"path", path},
        {"preset", o.preset},
        {"seed", o.seed},
        {"architecture", jal::model::kGptOssArch},
        {"shape",
         {{"layers", c.n_layer},
          {"hidden", c.n_embd},
          {"heads", c.n_head},
          {"kv_heads", c.n_head_kv},
          {"head_dim", c.head_dim},
          {"experts", c.n_expert},
          {"experts_per_token", c.n_expert_used},
          {"expert_ffn", c.n_ff_exp},
          {"vocab", c.n_vocab},
          {"context", c.n_ctx_train},
          {"sliding_window", c.sliding_window}}},
        {"dense_type", jal::model::tensor_type_name(o.dense_type)},
        {"tokenizer", c.tokenizer_model},
        {"bytes", s.file_bytes},
        {"parameters", s.parameters},
        {"tensors", s.tensors},
    };
}

// --vocab: a size (token ids only, no tokenizer) or "o200k" (GPT-OSS's vocabulary from the
// ranks embedded in this program). False when it is neither.
bool apply_vocab(const std::string& v, jal::model::SyntheticGptOssOptions& o)
{
    if (v == "o200k") {
        o.vocab = jal::model::SyntheticVocab::o200k;
        o.o200k_ranks = jal::tools::o200k_ranks();
        return true;
    }
    uint32_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{} || end != v.data() + v.size()) return false;
    o.n_vocab = n;
    return true;
}

std::string summary_text(const std::string& path, const jal::model::SyntheticGptOssOptions& o,
                         const jal::model::SyntheticModelSummary& s)
{
    const auto& c = s.config;
    return fmt::format(
        "{}: gpt-oss {} seed {}: {} layers, hidden {}, {}/{} heads x {}, {} experts ({} per "
        "token) x {}, vocab {}, window {}, dense {}; {} tensors, {} parameters, {} bytes\n",
        path, o.preset, o.seed, c.n_layer, c.n_embd, c.n_head, c.n_head_kv, c.head_dim, c.n_expert,
        c.n_expert_used, c.n_ff_exp, c.n_vocab, c.sliding_window,
        jal::model::tensor_type_name(o.dense_type), s.tensors, s.parameters, s.file_bytes);
}

const char* const kAbout =
    "jal-mkmodel: write a synthetic GGUF model of the GPT-OSS architecture (presets tiny, "
    "small, gqa-window, medium) or the DeepSeek-V3 one (ds-tiny, kimi-tiny): random weights "
    "from a seed, MXFP4 experts, dense matrices F32 (or --dense-type), norms and biases F32, "
    "no tokenizer unless --vocab o200k (GPT-OSS). Shape options override the preset (default "
    "tiny).";

}  // namespace

namespace {

using jal::tools::mkmodel::Request;
using jal::tools::mkmodel::ShapeArgs;

void add_shape_options(CLI::App& app, ShapeArgs& a)
{
    app.add_option("--layers", a.layers, "transformer blocks");
    app.add_option("--hidden", a.hidden, "embedding width (a multiple of 32)");
    app.add_option("--heads", a.heads, "attention (query) heads");
    app.add_option("--kv-heads", a.kv_heads, "gpt-oss: key/value heads (GQA; divides --heads)");
    app.add_option("--head-dim", a.head_dim, "gpt-oss: width of each head (even)");
    app.add_option("--experts", a.experts, "routed experts per layer");
    app.add_option("--experts-per-token", a.per_token, "experts each token is routed to");
    app.add_option("--expert-ffn", a.expert_ffn, "expert feed-forward width (a multiple of 32)");
    app.add_option("--vocab", a.vocab,
                   "vocabulary: a size (token ids only, no tokenizer) or o200k (gpt-oss: "
                   "GPT-OSS's o200k_harmony with its tokenizer, 201088 tokens)");
    app.add_option("--context", a.context, "context_length (default: the preset's model's)");
    app.add_option("--sliding-window", a.window,
                   "gpt-oss: window of the sliding-window (even) layers");
    app.add_option("--dense-layers", a.dense_layers,
                   "deepseek2: leading layers with a dense FFN instead of experts");
    app.add_option("--dense-ffn", a.dense_ffn, "deepseek2: the dense layers' FFN width");
    app.add_option("--shared-experts", a.shared_experts, "deepseek2: shared experts");
    app.add_option("--expert-groups", a.expert_groups,
                   "deepseek2: expert groups (1: none; else divides --experts)");
    app.add_option("--groups-used", a.groups_used, "deepseek2: groups kept per token");
    app.add_option("--q-lora-rank", a.q_lora_rank, "deepseek2: MLA query rank");
    app.add_option("--kv-lora-rank", a.kv_lora_rank, "deepseek2: MLA latent (KV cache) width");
    app.add_option("--rope-dim", a.rope_dim, "deepseek2: RoPE part of each query/key head");
}

bool is_deepseek_preset(const std::string& name)
{
    return jal::model::synthetic_deepseek_preset(name).has_value();
}

// The DeepSeek-only options, which have no meaning for GPT-OSS.
bool refuse_deepseek_options(const ShapeArgs& a)
{
    const std::pair<const char*, bool> given[] = {
        {"--dense-layers", a.dense_layers.has_value()},
        {"--dense-ffn", a.dense_ffn.has_value()},
        {"--shared-experts", a.shared_experts.has_value()},
        {"--expert-groups", a.expert_groups.has_value()},
        {"--groups-used", a.groups_used.has_value()},
        {"--q-lora-rank", a.q_lora_rank.has_value()},
        {"--kv-lora-rank", a.kv_lora_rank.has_value()},
        {"--rope-dim", a.rope_dim.has_value()}};
    for (const auto& [name, set] : given)
        if (set) {
            std::cerr << "jal-mkmodel: " << name
                      << " applies to the deepseek2 presets (ds-tiny, kimi-tiny) only\n";
            return false;
        }
    return true;
}

int make_gpt_oss(const Request& r)
{
    const ShapeArgs& a = r.shape;
    if (!refuse_deepseek_options(a)) return 2;
    jal::model::SyntheticGptOssOptions o = *jal::model::synthetic_preset(r.preset);
    o.seed = r.seed;
    o.dense_type = r.dense_type;
    if (a.vocab && !apply_vocab(*a.vocab, o)) {
        std::cerr << "jal-mkmodel: --vocab " << *a.vocab << ": expected a size or o200k\n";
        return 2;
    }
    auto set = [](uint32_t& field, const std::optional<uint32_t>& v) {
        if (v) field = *v;
    };
    set(o.n_layer, a.layers);
    set(o.n_embd, a.hidden);
    set(o.n_head, a.heads);
    set(o.n_head_kv, a.kv_heads);
    set(o.head_dim, a.head_dim);
    set(o.n_expert, a.experts);
    set(o.n_expert_used, a.per_token);
    set(o.n_ff_exp, a.expert_ffn);
    set(o.n_ctx, a.context);
    set(o.sliding_window, a.window);
    try {
        jal::tools::mkmodel::Progress progress{!r.quiet && isatty(STDERR_FILENO)};
        const auto s = jal::model::write_synthetic_gpt_oss(r.out_path, o, std::ref(progress));
        if (progress.last_pct >= 0) std::fputc('\n', stderr);
        if (r.json)
            std::cout << summary_json(r.out_path, o, s).dump(2) << '\n';
        else
            std::cout << summary_text(r.out_path, o, s);
        return 0;
    } catch (const jal::Error& e) {
        std::cerr << "jal-mkmodel: " << e.what() << '\n';
        return 1;
    }
}

}  // namespace

int main(int argc, char** argv)
{
    CLI::App app{kAbout};
    app.set_version_flag("--version", jal::tools::version_text("jal-mkmodel"));
    Request r;
    r.preset = "tiny";
    std::string dense_type = "f32";
    app.add_option("OUT", r.out_path, "the GGUF file to write")->required();
    app.add_option("--seed", r.seed, "seed of the random weights")->required();
    app.add_option("--preset", r.preset, preset_help())->capture_default_str();
    add_shape_options(app, r.shape);
    app.add_option("--dense-type", dense_type,
                   "type of the dense matrices (everything but the routed experts, norms and "
                   "biases): f32, f16, bf16 or q8_0, rounded as ggml does")
        ->capture_default_str();
    app.add_flag("--json", r.json, "print a JSON summary on stdout");
    app.add_flag("-q,--quiet", r.quiet, "no progress on stderr");
    CLI11_PARSE(app, argc, argv);

    if (!jal::model::synthetic_preset(r.preset) && !is_deepseek_preset(r.preset)) {
        std::cerr << "jal-mkmodel: unknown preset '" << r.preset << "'\n" << preset_help() << '\n';
        return 2;
    }
    const auto dense = jal::model::synthetic_dense_type(dense_type);
    if (!dense) {
        std::cerr << "jal-mkmodel: --dense-type " << dense_type
                  << ": expected f32, f16, bf16 or q8_0\n";
        return 2;
    }
    r.dense_type = *dense;
    return is_deepseek_preset(r.preset) ? jal::tools::mkmodel::make_deepseek(r) : make_gpt_oss(r);
}
