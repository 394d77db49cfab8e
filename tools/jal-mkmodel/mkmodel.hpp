// What jal-mkmodel's two architectures share: the shape options as given on the command
// line, and the progress line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <jal/model/gguf.hpp>

namespace jal::tools::mkmodel {

struct ShapeArgs {
    // Both architectures.
    std::optional<uint32_t> layers, hidden, heads, experts, per_token, expert_ffn, context;
    std::optional<std::string> vocab;
    // GPT-OSS only.
    std::optional<uint32_t> kv_heads, head_dim, window;
    // DeepSeek-V3 only.
    std::optional<uint32_t> dense_layers, dense_ffn, shared_experts, expert_groups, groups_used,
        q_lora_rank, kv_lora_rank, rope_dim;
};

struct Request {
    std::string out_path;
    std::string preset;
    uint64_t seed = 0;
    jal::model::TensorType dense_type = jal::model::TensorType::F32;
    ShapeArgs shape;
    bool json = false;
    bool quiet = false;
};

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

// Writes a DeepSeek-V3-architecture preset (ds-tiny, kimi-tiny) with the overrides; the
// exit status (2: an option that does not apply).
int make_deepseek(const Request& r);
std::string deepseek_preset_help();

}  // namespace jal::tools::mkmodel
