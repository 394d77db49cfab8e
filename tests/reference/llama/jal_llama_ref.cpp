// jal-llama-ref: runs llama.cpp (the independent reference, scripts/fetch-llama-ref.sh) on a
// GGUF model from prompt token ids, deterministically, and prints the continuation with
// each step's top-K log-probabilities as one JSON document (the same fields as jal-run).
//
// Deterministic settings: the CPU backend only, 1 thread, F32 K and V caches, flash
// attention off, the whole prompt as one batch, greedy = argmax of the raw logits (lowest
// id on a tie). The CPU backend variant (libggml-cpu-<cpu>.so) is chosen by ggml's scoring
// among the libraries in the reference's lib/ directory only, never the current directory.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <link.h>

#include <ggml-backend.h>
#include <llama.h>

#ifndef JAL_LLAMA_REF_LIB
#error "JAL_LLAMA_REF_LIB (the reference's lib/ directory) must be defined"
#endif

namespace {

struct Options {
    std::string model;
    std::vector<llama_token> prompt;
    std::vector<llama_token> force;
    int n = 16;
    int top = 5;
    bool json = false;
    bool verbose = false;
    int threads = 1;          // more only for speed comparisons (tools/jal-run/bench-model.sh)
    bool kv_f16 = false;      // --kv-type f16: llama.cpp's default cache type instead of F32
    std::string cpu_backend;  // one libggml-cpu-*.so instead of the best-scoring one
};

void usage(FILE* to)
{
    std::fprintf(
        to,
        "usage: jal-llama-ref MODEL.gguf --prompt-ids 1,2,3 [--n 16] [--top 5] [--force-ids "
        "a,b,c]\n"
        "                     [--json] [--cpu-backend libggml-cpu-x64.so] [--threads N] "
        "[--kv-type f32|f16] [--verbose]\n"
        "Runs llama.cpp (CPU, 1 thread, F32 KV cache, no flash attention, the prompt as one "
        "batch)\n"
        "and prints the greedy continuation (argmax of the raw logits) with each step's top-K\n"
        "token ids and log-probabilities. --force-ids feeds those ids as the continuation instead\n"
        "(teacher forcing; one step per id) while still reporting each step's top-K.\n"
        "--threads N runs llama.cpp's CPU backend on N threads (speed comparisons only: the\n"
        "agreement tests use one).\n"
        "--kv-type f16 keeps the KV cache in F16 (llama.cpp's default; its matrix products then\n"
        "round the queries and the softmax to F16 too) instead of F32.\n"
        "--json also reports decode_steps, decode_s and decode_tok_s: the wall clock of steps\n"
        "1 .. n - 1 (each a one-token forward pass and the scoring of its logits), timed in the\n"
        "process, without loading or the prompt (tools/jal-run/bench-model.sh's figure).\n");
}

bool parse_ids(const char* s, std::vector<llama_token>& out)
{
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        char* end = nullptr;
        errno = 0;
        const long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || errno != 0 || v < 0 || v > INT32_MAX) return false;
        out.push_back(static_cast<llama_token>(v));
    }
    return !out.empty();
}

bool parse_args(int argc, char** argv, Options& o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "jal-llama-ref: %s needs a value\n", a.c_str());
                return nullptr;
            }
            return argv[++i];
        };
        const char* v = nullptr;
        if (a == "-h" || a == "--help") {
            usage(stdout);
            std::exit(0);
        } else if (a == "--prompt-ids") {
            if (!(v = value()) || !parse_ids(v, o.prompt))
                return std::fprintf(stderr, "jal-llama-ref: bad --prompt-ids\n"), false;
        } else if (a == "--force-ids") {
            if (!(v = value()) || !parse_ids(v, o.force))
                return std::fprintf(stderr, "jal-llama-ref: bad --force-ids\n"), false;
        } else if (a == "--n") {
            if (!(v = value()) || (o.n = std::atoi(v)) <= 0)
                return std::fprintf(stderr, "jal-llama-ref: bad --n\n"), false;
        } else if (a == "--top") {
            if (!(v = value()) || (o.top = std::atoi(v)) <= 0)
                return std::fprintf(stderr, "jal-llama-ref: bad --top\n"), false;
        } else if (a == "--threads") {
            if (!(v = value()) || (o.threads = std::atoi(v)) <= 0)
                return std::fprintf(stderr, "jal-llama-ref: bad --threads\n"), false;
        } else if (a == "--kv-type") {
            if (!(v = value()) || (std::string(v) != "f32" && std::string(v) != "f16"))
                return std::fprintf(stderr, "jal-llama-ref: bad --kv-type (f32 or f16)\n"), false;
            o.kv_f16 = std::string(v) == "f16";
        } else if (a == "--cpu-backend") {
            if (!(v = value())) return false;
            o.cpu_backend = v;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--verbose") {
            o.verbose = true;
        } else if (!a.empty() && a[0] != '-' && o.model.empty()) {
            o.model = a;
        } else {
            std::fprintf(stderr, "jal-llama-ref: unknown argument %s\n", a.c_str());
            return false;
        }
    }
    if (o.model.empty() || o.prompt.empty()) {
        usage(stderr);
        return false;
    }
    if (!o.force.empty()) o.n = static_cast<int>(o.force.size());
    return true;
}

void quiet_log(ggml_log_level level, const char* text, void* user)
{
    const bool verbose = *static_cast<bool*>(user);
    if (verbose || level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

// The CPU backend variant ggml chose: the libggml-cpu-*.so loaded into this process.
std::string loaded_cpu_backend()
{
    std::string found;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* user) {
            const char* name = info->dlpi_name ? std::strrchr(info->dlpi_name, '/') : nullptr;
            if (name && std::strncmp(name + 1, "libggml-cpu", 11) == 0)
                *static_cast<std::string*>(user) = name + 1;
            return 0;
        },
        &found);
    return found;
}

struct Step {
    llama_token argmax;
    std::vector<llama_token> top_ids;
    std::vector<double> top_logprobs;
};

// Log-softmax of the raw logits in double; the top-K by logit, lower id first on a tie.
Step score(const float* logits, int n_vocab, int k)
{
    double max = logits[0];
    for (int i = 1; i < n_vocab; ++i) max = std::max(max, static_cast<double>(logits[i]));
    double sum = 0;
    for (int i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
    const double lse = max + std::log(sum);

    std::vector<int> ids(n_vocab);
    std::iota(ids.begin(), ids.end(), 0);
    k = std::min(k, n_vocab);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int a, int b) {
        return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    Step s;
    s.argmax = ids[0];
    for (int i = 0; i < k; ++i) {
        s.top_ids.push_back(ids[i]);
        s.top_logprobs.push_back(static_cast<double>(logits[ids[i]]) - lse);
    }
    return s;
}

std::string json_string(const std::string& s)
{
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\', out += c;
        else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else
            out += c;
    }
    return out + "\"";
}

template <typename T>
std::string json_array(const std::vector<T>& v)
{
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) {
        char buf[40];
        if constexpr (std::is_floating_point_v<T>)
            std::snprintf(buf, sizeof buf, "%.17g", v[i]);
        else
            std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v[i]));
        out += (i ? ", " : "") + std::string(buf);
    }
    return out + "]";
}

// What a run produced: per step the token fed next, the argmax and the top-k.
struct Trace {
    std::vector<llama_token> tokens, argmax;
    std::vector<std::vector<llama_token>> top_ids;
    std::vector<std::vector<double>> top_logprobs;
    // Wall clock of the decode steps (each a one-token llama_decode and the scoring of its
    // logits; steps 1 .. n - 1, as jal-run times its own): a speed comparison's figure
    // without the process start, the model load and the prompt.
    double decode_s = 0;
};

int fail(const char* what, const std::string& arg = {})
{
    std::fprintf(stderr, "jal-llama-ref: %s%s\n", what, arg.c_str());
    return 1;
}

// The CPU backend from the reference's own directory: ggml would otherwise also look in the
// executable's directory and the current one.
ggml_backend_dev_t load_cpu_backend(const Options& o)
{
    if (o.cpu_backend.empty())
        ggml_backend_load_all_from_path(JAL_LLAMA_REF_LIB);
    else if (!ggml_backend_load((std::string(JAL_LLAMA_REF_LIB) + "/" + o.cpu_backend).c_str()))
        return fail("cannot load ", o.cpu_backend), nullptr;
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu) fail("no CPU backend in ", JAL_LLAMA_REF_LIB);
    return cpu;
}

llama_model* load_model(const Options& o, ggml_backend_dev_t cpu)
{
    llama_model_params mp = llama_model_default_params();
    ggml_backend_dev_t devices[] = {cpu, nullptr};
    mp.devices = devices;
    mp.n_gpu_layers = 0;
    mp.progress_callback = [](float, void*) { return true; };  // no loading dots on stderr
    llama_model* model = llama_model_load_from_file(o.model.c_str(), mp);
    if (!model) fail("llama.cpp could not load ", o.model);
    return model;
}

bool ids_in_vocabulary(const Options& o, int n_vocab)
{
    for (const auto* list : {&o.prompt, &o.force})
        for (llama_token t : *list)
            if (t >= n_vocab) {
                std::fprintf(stderr, "jal-llama-ref: %s id %d >= vocabulary %d\n",
                             list == &o.prompt ? "prompt" : "forced", t, n_vocab);
                return false;
            }
    return true;
}

// Deterministic settings: one thread, F32 KV (F16 with --kv-type f16), no flash attention,
// the prompt as one batch.
llama_context* make_context(const Options& o, llama_model* model)
{
    const uint32_t n_prompt = static_cast<uint32_t>(o.prompt.size());
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (n_prompt + o.n + 255) / 256 * 256;
    cp.n_batch = cp.n_ubatch = std::max<uint32_t>(n_prompt, 1);  // the prompt is one ubatch
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = o.threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = cp.type_v = o.kv_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    cp.swa_full = true;
    cp.no_perf = true;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) fail("llama.cpp could not create a context");
    return ctx;
}

bool generate(const Options& o, llama_context* ctx, int n_vocab, Trace& t)
{
    std::vector<llama_token> prompt = o.prompt;
    if (llama_decode(ctx, llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))))
        return fail("decoding the prompt failed"), false;
    using Clock = std::chrono::steady_clock;
    Clock::time_point decode_start;
    for (int step = 0; step < o.n; ++step) {
        const Step s = score(llama_get_logits_ith(ctx, -1), n_vocab, o.top);
        llama_token next = o.force.empty() ? s.argmax : o.force[step];
        t.tokens.push_back(next);
        t.argmax.push_back(s.argmax);
        t.top_ids.push_back(s.top_ids);
        t.top_logprobs.push_back(s.top_logprobs);
        if (!o.json) {
            std::printf("%d%s", next, step + 1 < o.n ? " " : "\n");
            std::fflush(stdout);
        }
        if (step + 1 < o.n) {
            if (step == 0) decode_start = Clock::now();
            if (llama_decode(ctx, llama_batch_get_one(&next, 1)) != 0)
                return fail("decoding step failed at ", std::to_string(step)), false;
        }
    }
    if (o.n > 1) t.decode_s = std::chrono::duration<double>(Clock::now() - decode_start).count();
    return true;
}

void print_json(const Options& o, const Trace& t, int n_vocab, ggml_backend_dev_t cpu)
{
    std::string ids_json = "[", lp_json = "[";
    for (size_t i = 0; i < t.top_ids.size(); ++i) {
        ids_json += (i ? ", " : "") + json_array(t.top_ids[i]);
        lp_json += (i ? ", " : "") + json_array(t.top_logprobs[i]);
    }
    ids_json += "]", lp_json += "]";
    const int steps = std::max(o.n - 1, 0);
    char desc[256];
    std::snprintf(desc, sizeof desc, "%s", ggml_backend_dev_description(cpu));
    std::printf(
        "{\n"
        "  \"model\": %s,\n"
        "  \"prompt_ids\": %s,\n"
        "  \"forced\": %s,\n"
        "  \"n_vocab\": %d,\n"
        "  \"tokens\": %s,\n"
        "  \"argmax_ids\": %s,\n"
        "  \"top_ids\": %s,\n"
        "  \"top_logprobs\": %s,\n"
        "  \"decode_steps\": %d,\n"
        "  \"decode_s\": %.9f,\n"
        "  \"decode_tok_s\": %.6f,\n"
        "  \"reference\": {\"implementation\": \"llama.cpp\", \"device\": %s, \"cpu_backend\": "
        "%s,"
        " \"threads\": %d, \"kv_type\": \"%s\", \"flash_attn\": false, \"prompt_batch\": %zu}\n"
        "}\n",
        json_string(o.model).c_str(), json_array(o.prompt).c_str(),
        o.force.empty() ? "false" : "true", n_vocab, json_array(t.tokens).c_str(),
        json_array(t.argmax).c_str(), ids_json.c_str(), lp_json.c_str(), steps, t.decode_s,
        t.decode_s > 0 ? steps / t.decode_s : 0.0, json_string(desc).c_str(),
        json_string(loaded_cpu_backend()).c_str(), o.threads, o.kv_f16 ? "f16" : "f32",
        o.prompt.size());
}

}  // namespace

int main(int argc, char** argv)
{
    Options o;
    if (!parse_args(argc, argv, o)) return 2;

    llama_log_set(quiet_log, &o.verbose);
    ggml_backend_dev_t cpu = load_cpu_backend(o);
    if (!cpu) return 1;
    llama_backend_init();
    llama_model* model = load_model(o, cpu);
    if (!model) return 1;
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    if (!ids_in_vocabulary(o, n_vocab)) return 1;
    llama_context* ctx = make_context(o, model);
    if (!ctx) return 1;

    Trace t;
    if (!generate(o, ctx, n_vocab, t)) return 1;
    if (o.json) print_json(o, t, n_vocab, cpu);

    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
