// jal-run: generates tokens from a GPT-OSS or DeepSeek-V3 GGUF model on a Jalapeño chip
// (jal-emu) and prints them as they come, then the emulation's wall-clock speed and the
// chip's modelled InferenceX figures (docs/model-runtime.md). With no model it writes and
// uses a small synthetic default; with --timing-only --shape gpt-oss-120b (or deepseek-r1,
// kimi-k2.5) it projects the real model's figures without any weights.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <jal/jal.hpp>
#include <jal/model/runtime.hpp>
#include <jal/trace.h>

#include "tools/common/cli_checks.hpp"

#include "default_model.hpp"
#include "metrics.hpp"
#include "profile.hpp"
#include "text_prompt.hpp"
#include "tools/common/emu_process.hpp"
#include "tools/common/trace_merge.hpp"
#include "tools/common/version.hpp"
#include "tray_exchange.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kSliceHbmBytesPerS = 240e9;  // 3 HBM4 channels of 80 GB/s (ARCHITECTURE.md §12)

struct Options {
    std::string model;
    std::optional<std::string> prompt_ids, force_ids;  // given, even if empty
    std::optional<std::string> prompt;                 // text
    bool chat = false;
    std::string system;
    bool tokenize_only = false;
    bool ids = false;
    uint32_t n = 16;
    float temp = 0, top_p = 1;
    uint64_t seed = 0;
    std::string numerics = "native";
    std::string expert_layout = "auto";
    std::string kv_type = "f32";
    bool unstaged = false;
    bool no_beside = false;             // --no-projection-beside
    bool no_k_major = false;            // --no-k-major-weights
    bool no_messages = false;           // --no-expert-messages
    bool no_residual_messages = false;  // --no-residual-messages
    bool no_router_messages = false;    // --no-router-messages
    bool no_down_prefetch = false;      // --no-down-prefetch
    uint32_t key_splits = 0;            // --key-splits
    uint32_t top = 0;
    bool timing_only = false;
    std::string shape = "gpt-oss-120b";
    uint32_t tray_chips = 0;  // 0: the shape's (8 for the DeepSeek-V3 shapes, else 1)
    std::string tray_experts = "auto";
    uint32_t concurrency = 1;
    uint32_t prompt_len = 1024;
    uint32_t project_out = 0;
    std::string schedule = "serial";
    uint32_t slices = 0;
    bool json = false;
    bool quiet = false;
    bool profile = false;
    std::string emu_dir;
    std::string trace;      // --trace
    std::string trace_ops;  // --trace-ops
    unsigned device = 0;
};

std::vector<int32_t> parse_ids(const std::string& s, const char* what)
{
    std::vector<int32_t> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        try {
            size_t used = 0;
            long v = std::stol(item, &used);
            if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
            out.push_back(static_cast<int32_t>(v));
        } catch (const std::exception&) {
            throw CLI::ValidationError(what, "'" + item + "' is not a token id");
        }
    }
    // Given but empty (--prompt-ids ''): an error, not a silent fall-back to the default.
    if (out.empty()) throw CLI::ValidationError(what, "no token ids given");
    return out;
}

jal::model::GptOssConfig shape_config(const std::string& name)
{
    if (name == "gpt-oss-120b") return jal::model::gpt_oss_120b_config();
    if (name == "gpt-oss-20b") return jal::model::gpt_oss_20b_config();
    throw CLI::ValidationError("--shape", "unknown shape '" + name +
                                              "' (gpt-oss-120b, gpt-oss-20b, deepseek-r1, "
                                              "kimi-k2.5)");
}

// What to generate, from the command line.
struct Request {
    jal::model::Numerics numerics;
    jal::model::ExpertLayout expert_layout = jal::model::ExpertLayout::automatic;
    jal::model::KvType kv_type = jal::model::KvType::f32;
    jal::model::TrayExperts tray_experts = jal::model::TrayExperts::automatic;
    std::vector<int32_t> prompt;  // empty: the default for the model (open_runtime)
    std::vector<int32_t> force;
    uint32_t n_out = 0;
    uint32_t users = 1;
    bool mixed = false;                                // --schedule mixed
    std::string model_path;                            // empty with --timing-only
    std::unique_ptr<jal::model::Tokenizer> tokenizer;  // when the model has a vocabulary
};

// A text prompt (--prompt, --chat, or the default when the model has a vocabulary) as ids.
void text_prompt(const Options& o, Request& r)
{
    const bool wants_text = o.prompt || o.chat || o.tokenize_only;
    if (o.timing_only) {
        if (wants_text)
            throw CLI::ValidationError("--prompt", "text needs a model's vocabulary, not "
                                                   "--timing-only (give --prompt-len)");
        return;
    }
    r.tokenizer = jal::run::open_tokenizer(r.model_path);
    if (!r.tokenizer) {
        if (wants_text)
            throw CLI::ValidationError(
                o.prompt ? "--prompt" : (o.chat ? "--chat" : "--tokenize-only"),
                r.model_path + " has no vocabulary (tokenizer.ggml.model \"none\"): give the "
                               "prompt as --prompt-ids");
        return;
    }
    if (o.prompt_ids) {
        if (o.tokenize_only)
            throw CLI::ValidationError("--tokenize-only", "takes --prompt, not --prompt-ids");
        return;
    }
    r.prompt = jal::run::text_prompt_ids(
        *r.tokenizer, o.prompt.value_or(jal::run::kDefaultTextPrompt), o.chat, o.system);
}

// Steps of one prompt mixed into the decode steps of the other users − 1 sequences: chunks
// of what a step of max_rows rows leaves.
uint32_t mixed_chunks(uint32_t prompt_len, uint32_t max_rows, uint32_t users)
{
    const uint32_t chunk = max_rows - (users - 1);
    return (prompt_len + chunk - 1) / chunk;
}

// The chips of a tray a DeepSeek-V3 shape is split over (default 8), and the most rows a
// prompt chunk of one chip's share of the heads takes: 8192 (token, head) pairs.
uint32_t deepseek_chips(const Options& o)
{
    return o.tray_chips ? o.tray_chips : 8;
}
uint32_t deepseek_chunk_rows(const jal::model::DeepseekConfig& ds, const Options& o)
{
    return 8192 / (ds.n_head / deepseek_chips(o));
}

// Rows of a --schedule mixed step: 2048, or fewer for a DeepSeek-V3 shape's chunk; at least
// the other users' decode rows and one prompt row.
uint32_t mixed_rows(const Options& o, uint32_t users)
{
    uint32_t rows = 2048;
    if (const auto ds = jal::model::published_deepseek_config(o.shape))
        rows = std::min(rows, deepseek_chunk_rows(*ds, o));
    return std::max(rows, users + 1);
}

Request parse_request(const Options& o)
{
    Request r;
    if (!jal::model::parse_numerics(o.numerics, r.numerics))
        throw CLI::ValidationError("--numerics", "expected native or ggml");
    if (!jal::model::parse_expert_layout(o.expert_layout, r.expert_layout))
        throw CLI::ValidationError("--expert-layout", "expected auto, experts or both");
    if (!jal::model::parse_kv_type(o.kv_type, r.kv_type))
        throw CLI::ValidationError("--kv-type", "expected f32 or f16");
    if (!jal::model::parse_tray_experts(o.tray_experts, r.tray_experts))
        throw CLI::ValidationError("--tray-experts", "expected auto, experts or striped");
    if (r.tray_experts != jal::model::TrayExperts::automatic && o.tray_chips < 2)
        throw CLI::ValidationError("--tray-experts", "how chips share the experts: it needs "
                                                     "--chips 2 or more");
    if (o.prompt_ids) r.prompt = parse_ids(*o.prompt_ids, "--prompt-ids");
    if (o.force_ids) r.force = parse_ids(*o.force_ids, "--force-ids");
    r.n_out = r.force.empty() ? o.n : static_cast<uint32_t>(r.force.size());
    if (r.n_out == 0) throw CLI::ValidationError("--n", "at least one token");
    r.users = std::max<uint32_t>(1, o.concurrency);
    if (o.schedule != "serial" && o.schedule != "mixed")
        throw CLI::ValidationError("--schedule", "expected serial or mixed");
    r.mixed = o.schedule == "mixed";
    if (r.mixed && (!o.timing_only || o.project_out < 2 || r.n_out < 2))
        throw CLI::ValidationError("--schedule", "mixed projects a served load: it needs "
                                                 "--timing-only, --project-out and --n 2 or more");
    if (r.mixed) {
        const uint32_t k = mixed_chunks(o.prompt_len, mixed_rows(o, r.users), r.users);
        if (uint64_t{r.users} * k > o.project_out - 1 + k)
            throw CLI::ValidationError(
                "--schedule", fmt::format("mixed: {} users' prompts need {} chunk steps, more "
                                          "than the {} steps of their generation carry",
                                          r.users, uint64_t{r.users} * k, o.project_out - 1 + k));
    }
    if (o.tray_chips > 1 && !o.timing_only && o.device + o.tray_chips > 64)
        throw CLI::ValidationError("--chips", fmt::format("devices {}..{}: a jal-emu serves at "
                                                          "most 64 chips",
                                                          o.device, o.device + o.tray_chips - 1));
    r.model_path = o.model;
    if (!o.timing_only && r.model_path.empty())
        r.model_path = jal::run::default_model_path(o.quiet || o.json);
    text_prompt(o, r);
    return r;
}

// A timing-only shape on the device. The DeepSeek-V3 ones (docs/deepseek.md, "Timing-only
// shapes") do not fit one chip: by default the chip is one of a tray of 8 that split the
// routed experts, and a prompt chunk holds at most 8192 (token, head) pairs of its heads.
std::unique_ptr<jal::model::Runtime> open_shape(const Options& o, jal::model::RuntimeOptions ro,
                                                const Request& r, jal::runtime::Device& device)
{
    const uint32_t users = r.users;
    if (auto ds = jal::model::published_deepseek_config(o.shape)) {
        if (r.tray_experts != jal::model::TrayExperts::automatic)
            throw CLI::ValidationError("--tray-experts", "the DeepSeek-V3 shapes' chips share "
                                                         "the experts expert parallel only");
        ro.tray_chips = deepseek_chips(o);
        ro.max_batch_tokens = std::max(std::min(ro.max_batch_tokens, deepseek_chunk_rows(*ds, o)),
                                       users + (r.mixed ? 1 : 0));
        ro.tray_allreduce_ns = jal::run::tray_allreduce_cost(ro.tray_chips);
        return jal::model::Runtime::open_shape(*ds, device, ro);
    }
    ro.tray_chips = o.tray_chips ? o.tray_chips : 1;
    ro.tray_allreduce_ns = jal::run::tray_allreduce_cost(ro.tray_chips);
    return jal::model::Runtime::open_shape(shape_config(o.shape), device, ro);
}

// Opens the model (or, timing only, its shape) on the device, fills in the default prompt
// and checks the forced tokens against the vocabulary. `load_s`: the wall time it took.
std::unique_ptr<jal::model::Runtime>
open_runtime(const Options& o, Request& r, jal::runtime::Device& device, double& load_s,
             const std::vector<const jal::runtime::Device*>& split)
{
    jal::model::RuntimeOptions ro;
    ro.split_devices = split;
    ro.numerics = r.numerics;
    ro.expert_layout = r.expert_layout;
    ro.kv_type = r.kv_type;
    ro.tray_experts = r.tray_experts;
    ro.staged = !o.unstaged;
    ro.projection_beside_attention = !o.no_beside;
    ro.k_major_weights = !o.no_k_major;
    ro.expert_messages = !o.no_messages;
    ro.residual_messages = !o.no_residual_messages;
    ro.router_messages = !o.no_router_messages;
    ro.down_prefetch = !o.no_down_prefetch;
    ro.attention_key_splits = o.key_splits;
    ro.slices = o.slices;
    ro.timing_only = o.timing_only;
    ro.max_sequences = r.users;
    const bool chatty = !o.json && !o.quiet;
    ro.progress = [chatty, last = Clock::now(), ended = false](uint64_t done,
                                                               uint64_t total) mutable {
        // The runtime may report the end more than once: one final line.
        if (!chatty || total < (64u << 20) || ended) return;
        ended = done == total;
        if (done == total || Clock::now() - last > std::chrono::milliseconds(500)) {
            last = Clock::now();
            std::fprintf(stderr, "\rjal-run: uploading weights %5.1f %% (%.0f of %.0f MB)",
                         100.0 * done / total, done / 1e6, total / 1e6);
            if (done == total) std::fprintf(stderr, "\n");
        }
    };
    auto t_load = Clock::now();
    std::unique_ptr<jal::model::Runtime> rt;
    if (o.timing_only) {
        // Room for the projected generation too (--project-out): a concurrency whose caches
        // cannot hold prompt + every output token is refused, not projected.
        ro.n_ctx = o.prompt_len + std::max(r.n_out, o.project_out) + 1;
        // Long prompts prefill in chunks of 2048 rows: the most the expert GEMM takes (8192
        // pairs), so each expert's weights serve as many rows as they can.
        ro.max_batch_tokens = std::max(std::min(o.prompt_len, 2048u), r.users);
        if (r.mixed) {
            // A step holds the other users' decode rows and a chunk of the new prompt.
            ro.max_batch_tokens = mixed_rows(o, r.users);
            ro.n_ctx += mixed_chunks(o.prompt_len, ro.max_batch_tokens, r.users);
        }
        rt = open_shape(o, ro, r, device);
        if (r.prompt.empty()) r.prompt.assign(o.prompt_len, 0);
    } else {
        rt = jal::model::Runtime::open(r.model_path, device, ro);
        if (r.prompt.empty()) r.prompt = {1, 2, 3, 4, 5, 6, 7, 8};
    }
    load_s = std::chrono::duration<double>(Clock::now() - t_load).count();
    // The prompt and every generated token but the last take a position of the KV cache:
    // refuse a run that cannot fit before any work, not at the step that runs out.
    const uint64_t positions = r.prompt.size() + r.n_out - 1;
    if (positions > rt->options().n_ctx)
        throw CLI::ValidationError(
            "--n", fmt::format("a {}-token prompt and {} generated tokens need {} positions; the "
                               "context holds {}",
                               r.prompt.size(), r.n_out, positions, rt->options().n_ctx));
    for (int32_t t : r.force)
        if (static_cast<uint32_t>(t) >= rt->config().n_vocab)
            throw CLI::ValidationError(
                "--force-ids",
                fmt::format("{} is not below the vocabulary size {}", t, rt->config().n_vocab));
    return rt;
}

void print_banner(const Options& o, const Request& r, jal::model::Runtime& rt,
                  const jal::tools::EmuLauncher& emu)
{
    const auto& cfg = rt.config();
    std::fprintf(stderr,
                 "jal-run: %s: %u layers, hidden %u, %u/%u heads, %u experts top-%u, vocab %u; "
                 "%u slices, "
                 "%s numerics, %s KV cache%s; %s\n",
                 o.timing_only ? o.shape.c_str() : r.model_path.c_str(), cfg.n_layer, cfg.n_embd,
                 cfg.n_head, cfg.n_head_kv, cfg.n_expert, cfg.n_expert_used, cfg.n_vocab,
                 rt.slices(), jal::model::numerics_name(r.numerics),
                 jal::model::kv_type_name(rt.options().kv_type),
                 o.timing_only ? ", timing only" : "", emu.description().c_str());
    if (r.tokenizer && !o.prompt_ids)
        std::fprintf(stderr, "jal-run: %s (%zu tokens): %s\n", o.chat ? "chat prompt" : "prompt",
                     r.prompt.size(), o.prompt.value_or(jal::run::kDefaultTextPrompt).c_str());
}

// What prefill and decode produced and measured.
struct Generation {
    std::vector<int> seqs;
    std::vector<std::vector<float>> logits;
    std::map<std::string, jal::model::ChipTotals> prefill_kernels;
    jal::run::RunFigures fig;
    double prefill_wall = 0;
    std::vector<int32_t> tokens;
    std::optional<std::string> text;  // the tokens as text, when the model has a vocabulary
    std::vector<std::vector<int32_t>> top_ids;
    std::vector<std::vector<float>> top_lps;
    double decode_wall = 0;
    double prepare_wall = 0;  // the decode step's programs, built before its first token
    uint64_t decode_hbm_bytes = 0;
    uint64_t prefill_dispatches = 0;  // one user's prompt
    uint64_t decode_dispatches = 0;   // every measured decode step
    // Instructions the slices executed: one user's prompt, every measured decode step.
    uint64_t prefill_instructions = 0, decode_instructions = 0;
    uint64_t mixed_dispatches = 0;  // --schedule mixed: one prompt's chunk steps
    // Of the modelled times: the exchange between a tray's chips (RuntimeOptions::tray_chips).
    uint64_t prefill_exchange_ns = 0, decode_exchange_ns = 0;
    uint32_t decode_steps = 0;  // measured
};

// Prefills every user's prompt (timing only: one, the others take the same length).
void prefill(const Options& o, const Request& r, jal::model::Runtime& rt, Generation& g)
{
    g.logits.resize(r.users);
    g.fig.users = r.users;
    g.fig.chips = rt.options().tray_chips;
    g.fig.prompt_tokens = static_cast<uint32_t>(r.prompt.size());
    g.fig.out_tokens = r.n_out;
    auto t0 = Clock::now();
    for (uint32_t u = 0; u < r.users; u++) {
        g.seqs.push_back(rt.create_sequence());
        if (o.timing_only && u > 0) {
            rt.assume_length(g.seqs.back(), static_cast<uint32_t>(r.prompt.size()));
            g.logits[u] = g.logits[0];
            continue;
        }
        g.logits[u] = rt.prefill(g.seqs.back(), r.prompt);
        if (u == 0) {
            g.fig.prefill_ns = rt.last().modelled_ns;
            g.fig.prefill_energy_nj = rt.last().energy_nj;
            g.prefill_exchange_ns = rt.last().exchange_ns;
            g.prefill_dispatches = rt.last().dispatches;
            g.prefill_instructions = rt.last().instructions;
            g.prefill_kernels = rt.last_by_kernel();
        }
    }
    g.prefill_wall = std::chrono::duration<double>(Clock::now() - t0).count();
}

// A decode call's chip figures (`steps` steps) into the run's.
void add_decode_figures(const jal::model::Runtime& rt, Generation& g, uint32_t steps)
{
    g.fig.decode_ns += rt.last().modelled_ns;
    g.fig.decode_energy_nj += rt.last().energy_nj;
    g.decode_hbm_bytes += rt.last().hbm_bytes;
    g.decode_dispatches += rt.last().dispatches;
    g.decode_instructions += rt.last().instructions;
    g.decode_exchange_ns += rt.last().exchange_ns;
    g.decode_steps += steps;
}

// Greedy decoding that needs no logits on the host (no --top, --force-ids or --profile,
// which reports one step's kernels) runs its argmax on the chip, steps back to back
// (Runtime::decode_greedy): the same tokens.
bool greedy_on_chip(const Options& o, const Request& r)
{
    return o.temp == 0 && !o.top && r.force.empty() && !o.profile && !o.timing_only;
}

// Samples (or forces) n_out tokens for every user, decoding one step at a time (greedy on
// the chip: the steps after the first as one decode_greedy call), and prints user 0's as
// they come (not with --json).
void decode(const Options& o, const Request& r, jal::model::Runtime& rt, Generation& g)
{
    jal::model::Sampler sampler({o.temp, o.top_p, o.seed});
    std::vector<int32_t> next(r.users);
    std::optional<jal::run::TextPrinter> text;
    if (r.tokenizer) text.emplace(*r.tokenizer, !o.json && !o.ids);
    if (r.n_out > 1) {  // off the first token's path, as every later step finds them
        auto t = Clock::now();
        rt.prepare_decode(g.seqs, greedy_on_chip(o, r));
        g.prepare_wall = std::chrono::duration<double>(Clock::now() - t).count();
    }
    auto emit = [&](uint32_t step) {
        g.tokens.push_back(next[0]);
        if (text) text->push(next[0]);
        if (!o.json && (!text || o.ids)) {
            std::printf("%d%s", next[0], step + 1 < r.n_out ? " " : "\n");
            std::fflush(stdout);
        }
    };
    auto rows = [&] {
        std::vector<std::pair<int, int32_t>> batch;
        for (uint32_t u = 0; u < r.users; u++) batch.push_back({g.seqs[u], next[u]});
        return batch;
    };
    const bool on_chip = greedy_on_chip(o, r);
    for (uint32_t step = 0; step < r.n_out; step++) {
        if (step > 0 && on_chip) {
            auto t = Clock::now();
            // Steps 1 .. n_out − 1, each emitted as its tokens come back.
            rt.decode_greedy(rows(), r.n_out - 1, [&](std::span<const int32_t> chosen) {
                std::copy(chosen.begin(), chosen.end(), next.begin());
                emit(step++);
            });
            g.decode_wall += std::chrono::duration<double>(Clock::now() - t).count();
            add_decode_figures(rt, g, r.n_out - 1);
            break;
        }
        if (step > 0) {
            auto t = Clock::now();
            g.logits = rt.decode(rows());
            g.decode_wall += std::chrono::duration<double>(Clock::now() - t).count();
            add_decode_figures(rt, g, 1);
        }
        if (o.top) {
            std::vector<int32_t> ids;
            std::vector<float> lps;
            for (auto [id, lp] : jal::model::top_logprobs(g.logits[0], o.top))
                ids.push_back(id), lps.push_back(lp);
            g.top_ids.push_back(ids);
            g.top_lps.push_back(lps);
        }
        for (uint32_t u = 0; u < r.users; u++)
            next[u] = !r.force.empty() ? r.force[step] : sampler.sample(g.logits[u]);
        emit(step);
    }
    if (text) {
        text->finish();
        g.text = text->text();
    }
}

// --schedule mixed: the steady state of a served load, where a new request's prompt runs in
// chunks inside the decode steps of the other users − 1 sequences (C requests in flight, one
// of them prefilling). The last user's sequence makes room for it; one prompt is measured.
void mixed_prefill(const Request& r, jal::model::Runtime& rt, Generation& g)
{
    rt.free_sequence(g.seqs.back());
    const int seq = rt.create_sequence();
    g.seqs.back() = seq;
    const uint32_t chunk = rt.options().max_batch_tokens - (r.users - 1);
    std::vector<std::pair<int, int32_t>> batch;
    for (uint32_t u = 0; u + 1 < r.users; u++) batch.push_back({g.seqs[u], 0});
    const std::span<const int32_t> prompt(r.prompt);
    for (size_t at = 0; at < prompt.size(); at += chunk) {
        rt.mixed_step(batch, seq, prompt.subspan(at, std::min<size_t>(chunk, prompt.size() - at)));
        g.fig.mixed_steps++;
        g.fig.mixed_ns += rt.last().modelled_ns;
        g.fig.mixed_energy_nj += rt.last().energy_nj;
        g.mixed_dispatches += rt.last().dispatches;
    }
}

// The figures reported: wall-clock speed of the emulation, modelled chip metrics, roofline.
struct Summary {
    jal::run::Metrics m;
    double wall_tok_s = 0, wall_prefill_tok_s = 0;
    double peak_bps = 0, min_bytes = 0, roofline_fraction = 0, decode_hbm_util = 0;
    double dispatches_per_step = 0;    // average over the measured decode steps
    double instructions_per_step = 0;  // the same, every slice's instructions
};

Summary summarize(const Options& o, const Request& r, jal::model::Runtime& rt, Generation& g)
{
    Summary s;
    const double measured_decode_s = g.fig.decode_ns / 1e9;
    if (o.timing_only && o.project_out > 1 && r.n_out > 1) {
        // Project a longer generation from the measured steps: every further step costs
        // what the measured ones did on average (the context grows by a few percent).
        const double per_step_ns = double(g.fig.decode_ns) / (r.n_out - 1);
        const double per_step_nj = double(g.fig.decode_energy_nj) / (r.n_out - 1);
        g.fig.out_tokens = o.project_out;
        g.fig.decode_ns = static_cast<uint64_t>(per_step_ns * (o.project_out - 1));
        g.fig.decode_energy_nj = static_cast<uint64_t>(per_step_nj * (o.project_out - 1));
    }
    s.m = jal::run::compute_metrics(g.fig);
    s.wall_tok_s = g.decode_wall > 0 ? double(r.n_out - 1) * r.users / g.decode_wall : 0;
    s.wall_prefill_tok_s = g.prefill_wall > 0 ? double(r.prompt.size()) *
                                                    (o.timing_only ? 1 : r.users) / g.prefill_wall
                                              : 0;
    // Decode against the memory-bandwidth roofline of the slices used (240 GB/s each,
    // ARCHITECTURE.md §12): the least traffic a step must cause over the modelled step time.
    s.peak_bps = kSliceHbmBytesPerS * rt.slices();
    const uint32_t ctx_mid = static_cast<uint32_t>(r.prompt.size()) + r.n_out / 2;
    s.min_bytes = double(rt.decode_min_bytes(r.users, ctx_mid));
    const double step_s = s.m.tpot_ms / 1e3;
    s.roofline_fraction = step_s > 0 ? (s.min_bytes / s.peak_bps) / step_s : 0;
    s.decode_hbm_util =
        measured_decode_s > 0 ? double(g.decode_hbm_bytes) / measured_decode_s / s.peak_bps : 0;
    s.dispatches_per_step = r.n_out > 1 ? double(g.decode_dispatches) / (r.n_out - 1) : 0;
    s.instructions_per_step = r.n_out > 1 ? double(g.decode_instructions) / (r.n_out - 1) : 0;
    return s;
}

nlohmann::json kernels_json(const std::map<std::string, jal::model::ChipTotals>& kernels)
{
    nlohmann::json k = nlohmann::json::object();
    for (auto& [name, t] : kernels)
        k[name] = {{"dispatches", t.dispatches}, {"modelled_ns", t.modelled_ns},
                   {"hbm_bytes", t.hbm_bytes},   {"flops", t.flops},
                   {"energy_nj", t.energy_nj},   {"instructions", t.instructions}};
    return k;
}

// The modelled chip's InferenceX figures (docs/performance.md, "InferenceX methodology").
void inferencex_json(nlohmann::json& j, const Generation& g, const Summary& s)
{
    j["prompt_tokens"] = g.fig.prompt_tokens;
    j["out_tokens"] = g.fig.out_tokens;
    j["ttft_ms"] = s.m.ttft_ms;
    j["tpot_ms"] = s.m.tpot_ms;
    j["e2e_ms"] = s.m.e2e_ms;
    j["e2e_s"] = s.m.e2e_s;
    j["tok_s_user"] = s.m.tok_s_user;
    j["serve_s"] = s.m.serve_s;
    j["tok_s"] = s.m.tok_s;
    j["output_tok_s"] = s.m.output_tok_s;
    j["mixed_tok_s"] = s.m.mixed_tok_s;
    j["avg_power_w"] = s.m.avg_power_w;
    j["tok_s_per_kw"] = s.m.tok_s_per_kw;
    j["rated_power_w"] = jal::run::kRatedPowerKw * 1000;
    j["mixed_tok_s_per_kw_rated"] = s.m.mixed_tok_s_per_kw_rated;
    j["mixed_tok_s_per_kw_modelled"] = s.m.mixed_tok_s_per_kw_modelled;
    j["static_power_w"] = jal::model::kStaticPowerW;
    j["decode_min_bytes"] = s.min_bytes;
    j["decode_roofline_tb_s"] = s.peak_bps / 1e12;
    j["decode_roofline_ms"] = s.min_bytes / s.peak_bps * 1e3;
    j["decode_roofline_fraction"] = s.roofline_fraction;
    j["decode_hbm_util"] = s.decode_hbm_util;
    j["dispatches_per_step"] = s.dispatches_per_step;
    j["prefill_dispatches"] = g.prefill_dispatches;
    j["instructions_per_step"] = s.instructions_per_step;
    j["prefill_instructions"] = g.prefill_instructions;
    j["schedule"] = g.fig.mixed_steps ? "mixed" : "serial";
    if (g.fig.out_tokens > 1)  // a decode step of every sequence (TPOT in the serial schedule)
        j["decode_step_ms"] = g.fig.decode_ns / 1e6 / (g.fig.out_tokens - 1);
    // The tray's exchange inside those (docs/multichip.md): one prompt's, a measured step's.
    j["exchange_prefill_ms"] = g.prefill_exchange_ns / 1e6;
    if (g.decode_steps) j["exchange_step_ms"] = g.decode_exchange_ns / 1e6 / g.decode_steps;
    if (g.fig.mixed_steps) {
        j["mixed_steps"] = g.fig.mixed_steps;
        j["mixed_step_ms"] = g.fig.mixed_ns / 1e6 / g.fig.mixed_steps;
        j["mixed_dispatches"] = g.mixed_dispatches;
        j["prefill_alone_ms"] = g.fig.prefill_ns / 1e6;
    }
}

void print_json(const Options& o, const Request& r, jal::model::Runtime& rt, const Generation& g,
                const Summary& s, double load_s)
{
    nlohmann::json j;
    j["model"] = o.timing_only ? o.shape : r.model_path;
    j["timing_only"] = o.timing_only;
    j["chips"] = rt.options().tray_chips;       // per-kW figures count this many chips
    j["tray_chips"] = rt.options().tray_chips;  // the same, by its earlier name
    const bool ds_shape = o.timing_only && jal::model::published_deepseek_config(o.shape);
    if ((rt.options().tray_chips > 1 || !rt.options().split_devices.empty()) && !ds_shape)
        j["tray_experts"] = jal::model::tray_experts_name(rt.options().tray_experts);
    // The model split over chips (not timing only): the figures are rank 0's chip's.
    if (!rt.options().split_devices.empty())
        j["split_chips"] = rt.options().split_devices.size() + 1;
    j["numerics"] = jal::model::numerics_name(r.numerics);
    j["kv_type"] = jal::model::kv_type_name(rt.options().kv_type);
    j["key_splits"] = rt.options().attention_key_splits;
    j["prompt_ids"] = o.timing_only ? nlohmann::json(r.prompt.size()) : nlohmann::json(r.prompt);
    j["forced"] = !r.force.empty();
    j["n_vocab"] = rt.config().n_vocab;
    j["concurrency"] = r.users;
    j["slices"] = rt.slices();
    j["tokens"] = g.tokens;
    if (g.text) j["text"] = *g.text;
    if (o.prompt || (r.tokenizer && !o.prompt_ids))
        j["prompt_text"] = o.prompt.value_or(jal::run::kDefaultTextPrompt);
    if (o.chat) j["chat"] = true;
    if (o.top) {
        j["top_ids"] = g.top_ids;
        j["top_logprobs"] = g.top_lps;
    }
    j["wall_tok_s"] = s.wall_tok_s;
    j["wall_prefill_tok_s"] = s.wall_prefill_tok_s;
    j["wall_load_s"] = load_s;
    j["wall_prepare_s"] = g.prepare_wall;
    inferencex_json(j, g, s);
    if (o.profile && r.n_out > 1) j["decode_kernels"] = kernels_json(rt.last_by_kernel());
    if (o.profile) j["prefill_kernels"] = kernels_json(g.prefill_kernels);
    const jal::model::ChipTotals& tot = rt.total();
    j["chip"] = {{"dispatches", tot.dispatches},    {"modelled_ns", tot.modelled_ns},
                 {"energy_nj", tot.energy_nj},      {"flops", tot.flops},
                 {"hbm_bytes", tot.hbm_bytes},      {"weight_bytes", rt.weight_bytes()},
                 {"decode_ns", g.fig.decode_ns},    {"prefill_ns", g.fig.prefill_ns},
                 {"instructions", tot.instructions}};
    std::cout << j.dump(2) << std::endl;
}

void print_text(const Options& o, const Request& r, jal::model::Runtime& rt, const Generation& g,
                const Summary& s, double load_s)
{
    std::printf("\n%u tokens%s; emulation: %.2f tok/s decode (wall clock, %u user%s), prefill "
                "%.1f tok/s, load %.2f s, decode step built ahead in %.0f ms\n",
                r.n_out, r.force.empty() ? "" : " (forced)", s.wall_tok_s, r.users,
                r.users > 1 ? "s" : "", s.wall_prefill_tok_s, load_s, g.prepare_wall * 1e3);
    std::printf(
        "modelled chip (%u slices): TTFT %.3f ms, TPOT %.4f ms, %.1f tok/s/user, %.1f tok/s, "
        "%.1f W average, %.0f tok/s per kW\n",
        rt.slices(), s.m.ttft_ms, s.m.tpot_ms, s.m.tok_s_user, s.m.tok_s, s.m.avg_power_w,
        s.m.tok_s_per_kw);
    std::printf("decode roofline: %.1f MB a step at %.2f TB/s = %.4f ms; %.1f %% of the modelled "
                "TPOT (HBM busy %.1f %%)\n",
                s.min_bytes / 1e6, s.peak_bps / 1e12, s.min_bytes / s.peak_bps * 1e3,
                100 * s.roofline_fraction, 100 * s.decode_hbm_util);
    std::printf("InferenceX (%u in, %u out, concurrency %u): E2E %.3f s; %u request%s served in "
                "%.3f s: %.0f output, %.0f mixed tok/s\n",
                g.fig.prompt_tokens, g.fig.out_tokens, r.users, s.m.e2e_s, r.users,
                r.users > 1 ? "s" : "", s.m.serve_s, s.m.output_tok_s, s.m.mixed_tok_s);
    if (g.fig.chips > 1)
        std::printf("one chip of a tray of %u (its share modelled, the exchange not): power and "
                    "per-kW figures for the tray\n",
                    g.fig.chips);
    if (g.fig.mixed_steps)
        std::printf("schedule mixed: a prompt in %u chunk steps of %.3f ms (alone: %.3f ms)\n",
                    g.fig.mixed_steps, g.fig.mixed_ns / 1e6 / g.fig.mixed_steps,
                    g.fig.prefill_ns / 1e6);
    std::printf("mixed tok/s per kW: %.0f rated (%.0f W), %.0f modelled (%.1f W); %.0f dispatches "
                "a decode step (%.0f instructions, every slice's)\n",
                s.m.mixed_tok_s_per_kw_rated, jal::run::kRatedPowerKw * 1000 * g.fig.chips,
                s.m.mixed_tok_s_per_kw_modelled, s.m.avg_power_w, s.dispatches_per_step,
                s.instructions_per_step);
    if (o.profile)
        jal::run::print_profile(stdout,
                                "prefill of one prompt by kernel (modelled):", g.prefill_kernels);
    if (o.profile && r.n_out > 1)
        jal::run::print_profile(stdout,
                                "last decode step by kernel (modelled):", rt.last_by_kernel());
}

// --tokenize-only: the prompt's ids, without a chip.
void print_prompt_ids(const Options& o, const Request& r)
{
    if (o.json) {
        nlohmann::json j;
        j["model"] = r.model_path;
        j["prompt_ids"] = r.prompt;
        j["chat"] = o.chat;
        std::cout << j.dump(2) << std::endl;
        return;
    }
    for (size_t i = 0; i < r.prompt.size(); ++i)
        std::printf("%d%s", r.prompt[i], i + 1 < r.prompt.size() ? "," : "\n");
}

// The private jal-emu's arguments; --trace needs one (only its own emulator writes it).
std::vector<std::string> emu_arguments(const Options& o)
{
    std::vector<std::string> args = {"--fw", "native"};
    // A model split over chips (not --timing-only): a tray holding every chip it runs on.
    if (!o.timing_only && o.tray_chips > 1)
        args.insert(args.end(), {"--chips", std::to_string(o.device + o.tray_chips)});
    if (o.trace.empty()) return args;
    const char* env = std::getenv("JAL_EMU_DIR");
    if (!o.emu_dir.empty() || (env && *env))
        throw std::runtime_error("--trace: the trace is written by the jal-emu jal-run starts, "
                                 "not by one named by --emu-dir or JAL_EMU_DIR; start that one "
                                 "with jal-emu --trace FILE instead");
    args.insert(args.end(), {"--trace", std::filesystem::absolute(o.trace).string()});
    if (!o.trace_ops.empty()) args.insert(args.end(), {"--trace-ops", o.trace_ops});
    return args;
}

int run_on_chip(const Options& o, Request& r);

// --trace: jal-emu writes the device's side; libjal's host trace (API calls, waits) goes to
// a file of its own and is merged in once jal-emu has exited and completed its file.
int run(const Options& o)
{
    Request r = parse_request(o);
    if (o.tokenize_only) {
        print_prompt_ids(o, r);
        return 0;
    }
    if (o.trace.empty()) return run_on_chip(o, r);
    const std::string device = std::filesystem::absolute(o.trace).string();
    const std::string host = device + ".host.json";
    if (jal_trace_start(host.c_str()) != JAL_STATUS_OK)
        throw std::runtime_error(std::string("--trace: ") + jal_last_error_message());
    const int rc = run_on_chip(o, r);
    jal_trace_stop();
    jal::tools::merge_host_trace(device, host);
    std::filesystem::remove(host);
    return rc;
}

int run_on_chip(const Options& o, Request& r)
{
    jal::tools::EmuLauncher emu("jal-run", o.emu_dir, o.trace.empty(), emu_arguments(o), o.device);
    jal::runtime::Device device(o.device, emu.socket_dir());
    // --chips N without --timing-only: the model split over devices o.device .. + N − 1.
    std::vector<std::unique_ptr<jal::runtime::Device>> peers;
    std::vector<const jal::runtime::Device*> split;
    for (uint32_t i = 1; !o.timing_only && i < o.tray_chips; i++) {
        peers.push_back(std::make_unique<jal::runtime::Device>(o.device + i, emu.socket_dir()));
        split.push_back(peers.back().get());
    }
    double load_s = 0;
    std::unique_ptr<jal::model::Runtime> rt = open_runtime(o, r, device, load_s, split);
    if (!o.json && !o.quiet) print_banner(o, r, *rt, emu);

    Generation g;
    prefill(o, r, *rt, g);
    decode(o, r, *rt, g);
    if (r.mixed) mixed_prefill(r, *rt, g);
    const Summary s = summarize(o, r, *rt, g);
    if (o.json)
        print_json(o, r, *rt, g, s, load_s);
    else if (!o.quiet)
        print_text(o, r, *rt, g, s, load_s);
    rt.reset();
    return 0;
}

// How the model runs on the chip: numerics, KV cache, expert layout, staging.
void add_execution_options(CLI::App& app, Options& o)
{
    app.add_option("--numerics", o.numerics,
                   "native (default) or ggml (llama.cpp's CPU roundings)");
    app.add_option("--kv-type", o.kv_type,
                   "KV cache elements: f32 (the default) or f16: keys and values rounded to "
                   "half precision as they are appended, so the cache takes half the HBM (twice "
                   "the sequences fit) and the attention reads half the bytes; the products "
                   "stay F32 against them (llama.cpp's own F16 cache also rounds the queries "
                   "and the softmax: docs/model-runtime.md, \"KV cache\")");
    app.add_option("--expert-layout", o.expert_layout,
                   "Expert weights split by experts, or kept also split by rows so that small "
                   "batches stream each selected expert from every slice: auto (both when "
                   "HBM allows, the default), experts, both");
    app.add_flag("--unstaged", o.unstaged,
                 "One dispatch a kernel instead of one staged dispatch a pass (a decode step "
                 "or a prompt chunk): what --profile needs to attribute time to kernels");
    app.add_flag("--no-projection-beside", o.no_beside,
                 "Run a decode step's output projection on every slice after the attention, "
                 "not on the slices the attention leaves idle with their own copy of the "
                 "matrix loaded while it runs (the default where HBM allows: "
                 "docs/model-runtime.md, \"The output projection beside the attention\")");
    app.add_flag("--no-k-major-weights", o.no_k_major,
                 "Keep the dense F32, BF16 and F16 matrices in the weight layout (N rows of "
                 "K) rather than K-major, which the K-major MMA reads with the same bits and "
                 "the emulator multiplies faster (docs/model-runtime.md, \"K-major dense "
                 "weights\")");
    app.add_flag("--no-expert-messages", o.no_messages,
                 "Have a decode step's gate|up projection store its rows for the down "
                 "projection to gather after a barrier, not send them as messages (the "
                 "default: docs/model-runtime.md, \"Expert rows as messages\")");
    app.add_flag("--no-residual-messages", o.no_residual_messages,
                 "Have the next layer's q·k·v projection load the residual rows the down "
                 "projection stored after a barrier, not receive them as messages (the "
                 "default where the expert rows go as messages: docs/model-runtime.md, \"The "
                 "residual as messages\")");
    app.add_flag("--no-router-messages", o.no_router_messages,
                 "Have a decode step's router store its logits and gate|up load them after a "
                 "barrier (and both load the residual rows the output projection stored), not "
                 "receive them as messages (the default where the expert rows go as "
                 "messages: docs/model-runtime.md, \"The router as messages\")");
    app.add_flag("--no-down-prefetch", o.no_down_prefetch,
                 "Have a decode step's down projection load its first W tile itself, not find "
                 "it issued by gate|up behind gate|up's own (the default where the expert rows "
                 "go as messages: docs/model-runtime.md, \"Down's weights issued by "
                 "gate|up\")");
    app.add_option("--key-splits", o.key_splits,
                   "Slices a decode row's attention splits each KV head's keys over, each with "
                   "a copy of the head's cache: a power of 2 up to the slot groups (slices / KV "
                   "heads) over --users; 0 (the default): that many, at most 8; 1: no split "
                   "(docs/model-runtime.md, \"Key splits\")");
}

// The options of --timing-only runs: the shape, the load and how it is scheduled.
void add_timing_options(CLI::App& app, Options& o)
{
    app.add_flag("--timing-only", o.timing_only,
                 "No weights: project modelled figures for --shape");
    app.add_option("--shape", o.shape,
                   "With --timing-only: gpt-oss-120b (default), gpt-oss-20b, deepseek-r1 or "
                   "kimi-k2.5 (the last two as one chip of an 8-chip tray: --tray-chips)");
    app.add_option("--chips,--tray-chips", o.tray_chips,
                   "The chips that run the model together (default 1, 8 for the DeepSeek-V3 "
                   "shapes), splitting heads, FFNs and experts. With --timing-only this chip's "
                   "share is modelled, and the exchange between them by the link model; "
                   "without, a GPT-OSS model runs split over devices --device .. + N - 1 of "
                   "one tray, its partial sums all-reduced by the chips (docs/multichip.md)")
        ->check(CLI::Range(1u, 64u));
    app.add_option("--tray-experts", o.tray_experts,
                   "With --chips N (GPT-OSS): how the chips share the routed experts: experts "
                   "(expert parallel, each chip 1/N of the experts), striped (each chip 1/N of "
                   "every expert's width, every chip serving every pair) or auto (the default: "
                   "the one whose decode step of --concurrency rows the timing model finds "
                   "faster; docs/multichip.md)");
    app.add_option("--concurrency", o.concurrency, "Sequences decoded together (default 1)")
        ->check(CLI::Range(1, 1024));
    app.add_option("--prompt-len", o.prompt_len, "With --timing-only: prompt tokens (default 1024)")
        ->check(CLI::Range(1, 65536));
    app.add_option(
        "--project-out", o.project_out,
        "With --timing-only: report figures for this many output tokens from the measured steps");
    app.add_option("--schedule", o.schedule,
                   "With --timing-only and --project-out: how prompts share the chip with "
                   "decoding. serial (default): each prompt prefilled alone, then every "
                   "sequence decoded together. mixed: continuous batching's steady state, a "
                   "new prompt's chunks inside the decode steps of the other sequences "
                   "(docs/performance.md, \"Mixed steps\")");
}

}  // namespace

int main(int argc, char** argv)
{
    CLI::App app{
        "jal-run: generate tokens from a GPT-OSS or DeepSeek-V3 GGUF model on a Jalapeño chip "
        "(jal-emu)"};
    app.set_version_flag("--version", jal::tools::version_text("jal-run"));
    Options o;
    app.add_option("model", o.model,
                   "GPT-OSS or DeepSeek-V3 (deepseek2) GGUF file (default: a small synthetic "
                   "GPT-OSS model, written once and cached)");
    auto* prompt_ids = app.add_option("--prompt-ids", o.prompt_ids,
                                      "Prompt token ids, comma-separated (default: a short text "
                                      "when the model has a vocabulary, else 1,...,8)");
    app.add_option("--prompt", o.prompt,
                   "Prompt text, through the model's tokenizer (special-token literals such as "
                   "<|start|> stay text); the output is printed as text as it comes")
        ->excludes(prompt_ids);
    auto* chat = app.add_flag("--chat", o.chat,
                              "Wrap the prompt in the harmony chat format (system, user; the "
                              "reply starts after <|start|>assistant) and print the reply with "
                              "its harmony structure")
                     ->excludes(prompt_ids);
    app.add_option("--system", o.system, "With --chat: a system message (instructions)")
        ->needs(chat);
    app.add_flag("--tokenize-only", o.tokenize_only,
                 "Print the prompt's token ids (with --json: {\"prompt_ids\": [...]}) and exit");
    app.add_flag("--ids", o.ids, "Print generated token ids, not text");
    app.add_option("--n", o.n, "Tokens to generate (default 16)");
    app.add_option("--temp", o.temp, "Sampling temperature (0: greedy)")
        ->check(jal::tools::kFinite)
        ->check(CLI::NonNegativeNumber);
    app.add_option("--top-p", o.top_p, "Nucleus sampling mass (default 1)")
        ->check(jal::tools::kFinite)
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--seed", o.seed, "Sampler seed");
    add_execution_options(app, o);
    app.add_option("--top", o.top, "Report each step's top K ids and log-probabilities");
    app.add_option("--force-ids", o.force_ids,
                   "Feed these ids as the continuation (teacher forcing)");
    add_timing_options(app, o);
    app.add_option("--slices", o.slices,
                   "Dispatch slices (default 8; every slice with --timing-only)");
    app.add_flag("--json", o.json, "Print one JSON document");
    app.add_flag("-q,--quiet", o.quiet, "Only the tokens");
    app.add_flag("--profile", o.profile,
                 "Print the prefill's and the last decode step's modelled time by kernel");
    app.add_option(
        "--emu-dir", o.emu_dir,
        "jal-emu socket directory (default: $JAL_EMU_DIR, the chip at /dev/jalN through jal.ko, "
        "a running chip, or start one)");
    app.add_option("--trace", o.trace,
                   "Write a Perfetto trace of the run to FILE: the dispatches on every slice in "
                   "modelled time with their stages, the queues' packets and the firmware's log "
                   "(jal-emu --trace; needs the jal-emu jal-run starts itself), and this "
                   "process's libjal calls and waits on the same wall clock");
    app.add_option("--trace-ops", o.trace_ops,
                   "With --trace: also every engine op and scalar stall of these physical "
                   "slices, e.g. 0,8 (jal-emu --trace-ops)")
        ->needs("--trace");
    app.add_option("-d,--device", o.device, "Device index (default 0)");
    CLI11_PARSE(app, argc, argv);
    try {
        return run(o);
    } catch (const CLI::Error& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "jal-run: %s\n", e.what());
        return 1;
    }
}
