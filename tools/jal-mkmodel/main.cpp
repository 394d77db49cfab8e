// jal-mkmodel: writes a synthetic GPT-OSS-architecture GGUF model from a seed and a shape
// (a preset, then any shape options on top), loadable by llama.cpp and jal-run.
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
#include <jal/model/synthetic_gpt_oss.hpp>

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
    return s;
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

// Progress only when it is worth watching: big models on a terminal.
struct Progress {
    bool show = false;
    int last_pct = -1;
    void operator()(uint64_t done, uint64_t total)
    {
        const int pct = total ? static_cast<int>(done * 100 / total) : 100;
        if (show && total > (64u << 20) && pct != last_pct) {
            std::fprintf(stderr, "\rjal-mkmodel: %3d%% of %.1f MiB", pct, total / 1048576.0);
            last_pct = pct;
        }
    }
};

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
    "jal-mkmodel: write a synthetic GPT-OSS-architecture GGUF model (random weights from a "
    "seed, MXFP4 experts, dense matrices F32 (or --dense-type), norms and biases F32, no "
    "tokenizer unless --vocab o200k). Shape options override the preset (default tiny).";

}  // namespace

int main(int argc, char** argv)
{
    CLI::App app{kAbout};
    app.set_version_flag("--version", jal::tools::version_text("jal-mkmodel"));
    std::string out_path, preset = "tiny", dense_type = "f32";
    jal::model::SyntheticGptOssOptions o;
    std::optional<uint32_t> layers, hidden, heads, kv_heads, head_dim, experts, per_token,
        expert_ffn, context, window;
    std::optional<std::string> vocab;
    bool json = false, quiet = false;
    app.add_option("OUT", out_path, "the GGUF file to write")->required();
    app.add_option("--seed", o.seed, "seed of the random weights")->required();
    app.add_option("--preset", preset, preset_help())->capture_default_str();
    app.add_option("--layers", layers, "transformer blocks");
    app.add_option("--hidden", hidden, "embedding width (a multiple of 32)");
    app.add_option("--heads", heads, "attention (query) heads");
    app.add_option("--kv-heads", kv_heads, "key/value heads (GQA; divides --heads)");
    app.add_option("--head-dim", head_dim, "width of each head (even)");
    app.add_option("--experts", experts, "experts per layer");
    app.add_option("--experts-per-token", per_token, "experts each token is routed to");
    app.add_option("--expert-ffn", expert_ffn, "expert feed-forward width (a multiple of 32)");
    app.add_option("--vocab", vocab,
                   "vocabulary: a size (token ids only, no tokenizer) or o200k (GPT-OSS's "
                   "o200k_harmony with its tokenizer, 201088 tokens)");
    app.add_option("--context", context, "context_length (default 131072, as GPT-OSS)");
    app.add_option("--sliding-window", window, "window of the sliding-window (even) layers");
    app.add_option("--dense-type", dense_type,
                   "type of the dense matrices (token_embd, output, attn_q/k/v, attn_output, "
                   "ffn_gate_inp): f32, f16, bf16 or q8_0, rounded as ggml does")
        ->capture_default_str();
    app.add_flag("--json", json, "print a JSON summary on stdout");
    app.add_flag("-q,--quiet", quiet, "no progress on stderr");
    CLI11_PARSE(app, argc, argv);

    const auto base = jal::model::synthetic_preset(preset);
    if (!base) {
        std::cerr << "jal-mkmodel: unknown preset '" << preset << "'\n" << preset_help() << '\n';
        return 2;
    }
    const auto dense = jal::model::synthetic_dense_type(dense_type);
    if (!dense) {
        std::cerr << "jal-mkmodel: --dense-type " << dense_type
                  << ": expected f32, f16, bf16 or q8_0\n";
        return 2;
    }
    const uint64_t seed = o.seed;
    o = *base;
    o.seed = seed;
    o.dense_type = *dense;
    if (vocab && !apply_vocab(*vocab, o)) {
        std::cerr << "jal-mkmodel: --vocab " << *vocab << ": expected a size or o200k\n";
        return 2;
    }
    auto set = [](uint32_t& field, const std::optional<uint32_t>& v) {
        if (v) field = *v;
    };
    set(o.n_layer, layers);
    set(o.n_embd, hidden);
    set(o.n_head, heads);
    set(o.n_head_kv, kv_heads);
    set(o.head_dim, head_dim);
    set(o.n_expert, experts);
    set(o.n_expert_used, per_token);
    set(o.n_ff_exp, expert_ffn);
    set(o.n_ctx, context);
    set(o.sliding_window, window);

    try {
        Progress progress{!quiet && isatty(STDERR_FILENO)};
        const auto s = jal::model::write_synthetic_gpt_oss(out_path, o, std::ref(progress));
        if (progress.last_pct >= 0) std::fputc('\n', stderr);
        if (json)
            std::cout << summary_json(out_path, o, s).dump(2) << '\n';
        else
            std::cout << summary_text(out_path, o, s);
        return 0;
    } catch (const jal::Error& e) {
        std::cerr << "jal-mkmodel: " << e.what() << '\n';
        return 1;
    }
}
