// jal-mkmodel's DeepSeek-V3-architecture presets (ds-tiny, kimi-tiny): the overrides that
// apply to them, the summary.
#include <functional>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <jal/error.hpp>
#include <jal/model/synthetic_deepseek.hpp>

#include "mkmodel.hpp"

namespace jal::tools::mkmodel {

namespace {

using jal::model::SyntheticDeepseekOptions;

// The GPT-OSS-only options, which have no meaning here.
bool refuse_gpt_oss_options(const ShapeArgs& a)
{
    const std::pair<const char*, bool> given[] = {{"--kv-heads", a.kv_heads.has_value()},
                                                  {"--head-dim", a.head_dim.has_value()},
                                                  {"--sliding-window", a.window.has_value()}};
    for (const auto& [name, set] : given)
        if (set) {
            std::cerr << "jal-mkmodel: " << name
                      << " applies to the gpt-oss presets only (MLA: --q-lora-rank, "
                         "--kv-lora-rank, --rope-dim)\n";
            return false;
        }
    return true;
}

bool apply(const ShapeArgs& a, SyntheticDeepseekOptions& o)
{
    if (!refuse_gpt_oss_options(a)) return false;
    if (a.vocab) {
        try {
            size_t used = 0;
            const unsigned long n = std::stoul(*a.vocab, &used);
            if (used != a.vocab->size() || n > UINT32_MAX) throw std::invalid_argument("");
            o.n_vocab = static_cast<uint32_t>(n);
        } catch (const std::exception&) {
            std::cerr << "jal-mkmodel: --vocab " << *a.vocab
                      << ": expected a size (the deepseek2 presets have no tokenizer)\n";
            return false;
        }
    }
    auto set = [](uint32_t& field, const std::optional<uint32_t>& v) {
        if (v) field = *v;
    };
    set(o.n_layer, a.layers);
    set(o.n_embd, a.hidden);
    set(o.n_head, a.heads);
    set(o.n_expert, a.experts);
    set(o.n_expert_used, a.per_token);
    set(o.n_ff_exp, a.expert_ffn);
    set(o.n_ctx, a.context);
    set(o.n_layer_dense_lead, a.dense_layers);
    set(o.n_ff, a.dense_ffn);
    set(o.n_expert_shared, a.shared_experts);
    set(o.n_expert_groups, a.expert_groups);
    set(o.n_group_used, a.groups_used);
    set(o.q_lora_rank, a.q_lora_rank);
    set(o.kv_lora_rank, a.kv_lora_rank);
    set(o.n_rot, a.rope_dim);
    return true;
}

nlohmann::json summary_json(const Request& r, const jal::model::SyntheticDeepseekSummary& s)
{
    const auto& c = s.config;
    return {
        {"path", r.out_path},
        {"preset", r.preset},
        {"seed", r.seed},
        {"architecture", jal::model::kDeepseekArch},
        {"shape",
         {{"layers", c.n_layer},
          {"dense_layers", c.n_layer_dense_lead},
          {"hidden", c.n_embd},
          {"heads", c.n_head},
          {"q_lora_rank", c.q_lora_rank},
          {"kv_lora_rank", c.kv_lora_rank},
          {"head_dim_k", c.head_dim_k},
          {"head_dim_v", c.head_dim_v},
          {"rope_dim", c.n_rot},
          {"dense_ffn", c.n_ff},
          {"experts", c.n_expert},
          {"experts_per_token", c.n_expert_used},
          {"shared_experts", c.n_expert_shared},
          {"expert_ffn", c.n_ff_exp},
          {"expert_groups", c.n_expert_groups},
          {"groups_used", c.n_group_used},
          {"vocab", c.n_vocab},
          {"context", c.n_ctx_train}}},
        {"dense_type", jal::model::tensor_type_name(r.dense_type)},
        {"tokenizer", c.tokenizer_model},
        {"bytes", s.file_bytes},
        {"parameters", s.parameters},
        {"tensors", s.tensors},
    };
}

std::string summary_text(const Request& r, const jal::model::SyntheticDeepseekSummary& s)
{
    const auto& c = s.config;
    return fmt::format(
        "{}: deepseek2 {} seed {}: {} layers ({} dense), hidden {}, {} heads (MLA q {} kv {}, "
        "k {} v {}, rope {}), {} experts ({} per token, {} of {} groups, {} shared) x {}, vocab "
        "{}, dense {}; {} tensors, {} parameters, {} bytes\n",
        r.out_path, r.preset, r.seed, c.n_layer, c.n_layer_dense_lead, c.n_embd, c.n_head,
        c.q_lora_rank, c.kv_lora_rank, c.head_dim_k, c.head_dim_v, c.n_rot, c.n_expert,
        c.n_expert_used, c.n_group_used, c.n_expert_groups, c.n_expert_shared, c.n_ff_exp,
        c.n_vocab, jal::model::tensor_type_name(r.dense_type), s.tensors, s.parameters,
        s.file_bytes);
}

}  // namespace

std::string deepseek_preset_help()
{
    std::string s;
    for (const std::string& name : jal::model::synthetic_deepseek_preset_names()) {
        const auto o = *jal::model::synthetic_deepseek_preset(name);
        s += fmt::format(
            "\n  {:<11} deepseek2: {} layers ({} dense), hidden {}, {} heads (MLA), {} experts "
            "({} per token, {} of {} groups, {} shared) x {}, vocab {}",
            name, o.n_layer, o.n_layer_dense_lead, o.n_embd, o.n_head, o.n_expert, o.n_expert_used,
            o.n_group_used, o.n_expert_groups, o.n_expert_shared, o.n_ff_exp, o.n_vocab);
    }
    return s;
}

int make_deepseek(const Request& r)
{
    SyntheticDeepseekOptions o = *jal::model::synthetic_deepseek_preset(r.preset);
    o.seed = r.seed;
    o.dense_type = r.dense_type;
    if (!apply(r.shape, o)) return 2;
    try {
        Progress progress{!r.quiet && isatty(STDERR_FILENO)};
        const auto s = jal::model::write_synthetic_deepseek(r.out_path, o, std::ref(progress));
        if (progress.last_pct >= 0) std::fputc('\n', stderr);
        if (r.json)
            std::cout << summary_json(r, s).dump(2) << '\n';
        else
            std::cout << summary_text(r, s);
        return 0;
    } catch (const jal::Error& e) {
        std::cerr << "jal-mkmodel: " << e.what() << '\n';
        return 1;
    }
}

}  // namespace jal::tools::mkmodel
