// The GPT-OSS model runtime (docs/model-runtime.md): a GGUF model's weights placed on the
// chip for locality, the prefill and decode graphs built from the kernel library, sampling,
// and several sequences decoded together (continuous batching).
//
//   jal::runtime::Device dev(0);
//   auto model = jal::model::Runtime::open("m.gguf", dev, {});
//   int seq = model->create_sequence();
//   std::vector<float> logits = model->prefill(seq, prompt);    // the whole prompt, one batch
//   jal::model::Sampler sampler({.temperature = 0});
//   int32_t tok = sampler.sample(logits);
//   logits = model->decode({{seq, tok}})[0];                    // one step of every listed sequence
//
// Placement (docs/model-runtime.md): each GEMM's rows are split over the dispatch slices the
// way the kernel splits them and every slice's rows live in that slice's HBM; the experts
// of a layer are spread over the slices the same way; each KV head's cache lives on the one
// slice that runs its attention, and each sequence slot uses its own group of slices.
//
// Errors throw jal::Error. A Runtime is not thread-safe: one caller at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <jal/api.h>
#include <jal/jal.hpp>
#include <jal/model/deepseek_config.hpp>
#include <jal/model/gpt_oss_config.hpp>

namespace jal::model {

// How activations meet the weights (docs/model-runtime.md):
//   native: activations stay F32; MXFP4 weights are decoded exactly in the matrix engine.
//   ggml:   as llama.cpp's CPU backend: activations rounded to Q8_0 blocks before every
//           MXFP4 dot product, F32 everywhere else.
enum class Numerics { native, ggml };
JAL_API const char* numerics_name(Numerics n);
JAL_API bool parse_numerics(std::string_view s, Numerics& out);

// How expert weights sit on the slices (docs/model-runtime.md, "Expert split"): split by
// experts (each slice holds whole experts: expert parallelism), or in both layouts, the
// second split by rows (each slice holds a share of every expert: at small batch every
// slice streams the selected experts), each expert GEMM taking the one its cost model
// prefers. automatic: both when the copy fits in HBM beside everything else, else experts.
enum class ExpertLayout { automatic, experts, both };
JAL_API const char* expert_layout_name(ExpertLayout l);
JAL_API bool parse_expert_layout(std::string_view s, ExpertLayout& out);

// How the chips of a tray projection or of a split share the routed experts
// (RuntimeOptions::tray_experts; docs/multichip.md): expert parallel (each chip n_expert / N
// whole experts) or striped (each chip 1/N of every expert's width: those rows of gate and
// up and those columns of down, so every chip serves every pair and the MoE's all-reduce
// sums the partial products). automatic: the layout whose decode step of max_sequences rows
// the timing model finds faster (open steps the timing-only projection of each layout once;
// docs/decisions.md, "Experts over a tray's chips").
enum class TrayExperts { automatic, experts, striped };
JAL_API const char* tray_experts_name(TrayExperts t);
JAL_API bool parse_tray_experts(std::string_view s, TrayExperts& out);

// The KV cache's elements (docs/model-runtime.md, "KV cache"): F32 (the default, in both
// numerics), or F16: keys and values rounded to nearest even as they are appended, half the
// cache's bytes; the attention multiplies them against F32 queries and probabilities.
enum class KvType { f32, f16 };
JAL_API const char* kv_type_name(KvType t);
JAL_API bool parse_kv_type(std::string_view s, KvType& out);

struct RuntimeOptions {
    Numerics numerics = Numerics::native;
    uint32_t slices = 0;              // dispatch slices (logical 0..n-1); 0: 8, or every slice
                                      // with timing_only
    uint32_t max_sequences = 4;       // KV cache slots
    uint32_t n_ctx = 0;               // positions per slot; 0: min(context_length, 4096)
    uint32_t max_batch_tokens = 256;  // rows of one graph run (longer prompts run in chunks)
    ExpertLayout expert_layout = ExpertLayout::automatic;
    // Local copies of the dense GEMMs' shards where HBM allows (docs/model-runtime.md,
    // "Placement"): a prompt's GEMMs in row groups then stream W from local HBM. The same
    // bits either way; false leaves the HBM to the caches alone.
    bool dense_copies = true;
    // A slot group's decode rows attend in one batched call (docs/model-runtime.md,
    // "Batched decode attention"), or (false) one call a sequence. The same bits either way.
    bool attention_batches = true;
    // A decode pass whose attention runs on one slot group runs its output projection on
    // the other slices, from a copy of the matrix split over them (when HBM allows), each
    // loading its shard while the attention still runs (docs/model-runtime.md, "The output
    // projection beside the attention"); false: on every slice after the attention. The same
    // bits either way.
    bool projection_beside_attention = true;
    // The dense F32, BF16 and F16 matrices' shards K-major (docs/model-runtime.md, "K-major
    // dense weights"): each slice's rows of W stored as K rows of them, which the K-major MMA
    // (ISA 1.4) reads; false: in the weight layout, N rows of K. The same bits either way
    // (the same products in the same order); the emulator's GEMVs are faster K-major.
    bool k_major_weights = true;
    // A decode row's attention splits each KV head's keys over this many slices (flash
    // decoding; docs/model-runtime.md, "Key splits"), each holding a copy of the head's
    // cache: the slot groups no sequence uses then attend too. A power of 2 no larger than
    // the slot groups (slices / n_head_kv) over max_sequences; 0: that, at most 8, where a
    // head's cache of n_ctx positions holds 512 KiB or more, else none; 1: none. The bits
    // differ from one split's only by the order the splits' sums merge in. Runtime::options()
    // reports the count chosen.
    uint32_t attention_key_splits = 0;
    // A decode step's gate|up projection (few pairs, split by rows) sends its SwiGLU rows to
    // the down projection as messages over the collective network instead of storing them,
    // and the down projection routes the tokens itself and starts without a barrier
    // (docs/model-runtime.md, "Expert rows as messages"). Needs `staged`. The same bits
    // either way.
    bool expert_messages = true;
    // Where the down projection takes its rows as messages (expert_messages), it also sends
    // the residual columns it writes to the next layer's q·k·v projection, which receives
    // its x instead of loading it and starts without a barrier, its weights streaming from
    // the stage's start (docs/model-runtime.md, "The residual as messages"). The same bits
    // either way.
    bool residual_messages = true;
    // Where gate|up takes its routing from the router (expert_messages), the router sends
    // its logits to every slice instead of storing them, and gate|up receives them and
    // starts without a barrier; where the output projection runs on every slice, it also
    // sends the residual columns it writes to the router and to gate|up, which receive
    // their x instead of loading it (docs/model-runtime.md, "The router as messages"). The
    // same bits either way.
    bool router_messages = true;
    // Where the expert rows go as messages, gate|up also issues the down projection's first
    // W tile once its own are issued, so that it streams while gate|up multiplies and sends,
    // and down finds it in L1 (docs/model-runtime.md, "Down's weights issued by gate|up").
    // The same bits either way.
    bool down_prefetch = true;
    KvType kv_type = KvType::f32;
    // A pass's kernels (a decode step, a prompt chunk) as one staged dispatch
    // (docs/model-runtime.md, "Staged layers"), or (false) one dispatch a kernel, which the
    // profile by kernel needs.
    bool staged = true;
    // Timing only: weights and caches are allocated but never written, every dispatch runs
    // with JAL_DISPATCH_F_TIMING_ONLY (no data touched) and logits are zeros. The expert
    // ids the routing would produce are a fixed uniform spread (docs/model-runtime.md).
    bool timing_only = false;
    // Timing only: the chip is one of a tray of `tray_chips` that run every token together
    // (docs/multichip.md, "Timing-only projections over chips"; docs/deepseek.md,
    // "Timing-only shapes"): the attention heads (and DeepSeek-V3's dense FFNs, shared
    // expert) and the LM head split tray_chips ways (tensor parallel), the routed experts
    // too (expert parallel: n_expert / tray_chips on this chip, which serve
    // ⌈n_expert_used / tray_chips⌉ of each token's pairs; or, for GPT-OSS, striped:
    // tray_experts). Every chip keeps the whole residual stream; the exchange between the
    // chips (two all-reduces of it a layer) is not in this chip's figures: jal-run adds it
    // from the link model. 1: the whole model.
    uint32_t tray_chips = 1;
    // With tray_chips > 1 or split_devices (GPT-OSS): how the chips share the routed experts
    // (TrayExperts). Runtime::options() reports the layout chosen.
    TrayExperts tray_experts = TrayExperts::automatic;
    // With tray_chips > 1: the modelled time of an all-reduce over the tray's chips of
    // `bytes` (each chip's contribution). Each pass then adds two a layer (the residual
    // stream's rows after the attention and after the FFN or MoE) and one for the sampled
    // rows' logits (a value and an index a row: each chip holds a share of the vocabulary)
    // to its modelled time (ChipTotals::exchange_ns). Unset: the exchange is not modelled.
    std::function<uint64_t(uint64_t bytes)> tray_allreduce_ns;
    // The model split over several chips that run it together (docs/multichip.md, "A model
    // over chips"): the chips besides open()'s device, which is rank 0; rank i + 1 is
    // split_devices[i]. Every chip must reach every other over the fabric (a tray, or a
    // domain of jal-emu processes), and the devices must outlive the Runtime. Attention is
    // tensor parallel (each chip n_head_kv / N KV heads with their query heads, its rows of
    // q·k·v and columns of the output projection), the MoE expert parallel (each chip
    // n_expert / N experts) or striped (tray_experts), the router on every chip, and after
    // each the chips' partial
    // sums meet in an all-reduce of the residual stream (collectives::Communicator), two a
    // layer. Rank 0 computes the logits. GPT-OSS only, not with timing_only (whose
    // projections take tray_chips). Empty: one chip.
    std::vector<const runtime::Device*> split_devices;
    // Called while weights upload: bytes done, of total.
    std::function<void(uint64_t done, uint64_t total)> progress;
};

// What the chip did, from the dispatch reports (modelled by jal-emu's timing and power
// models).
struct ChipTotals {
    uint64_t dispatches = 0;
    uint64_t modelled_ns = 0;  // sum over dispatches (one queue: they run one after another)
    uint64_t energy_nj = 0;    // dynamic energy of the dispatches
    uint64_t flops = 0;
    uint64_t hbm_bytes = 0;
    // Instructions the slices executed (every slice of every dispatch): the emulator's work
    // in a unit the host's speed does not move.
    uint64_t instructions = 0;
    // Of modelled_ns: the exchange between a tray's chips (RuntimeOptions::tray_allreduce_ns).
    uint64_t exchange_ns = 0;
    ChipTotals& operator+=(const ChipTotals& o);
};

// Static (leakage, HBM refresh, I/O) power the energy figures add over modelled time:
// jal-emu's power model at nominal voltage and 25 °C (emu/chip/power_model.cpp).
inline constexpr double kStaticPowerW = 125.0;

class JAL_API Runtime {
public:
    // Loads a GPT-OSS GGUF (validated by GgufFile and read_gpt_oss_config) or a DeepSeek-V3
    // one (general.architecture "deepseek2", read_deepseek_config; docs/deepseek.md), places
    // and uploads its weights, builds the kernels.
    static std::unique_ptr<Runtime> open(const std::string& gguf_path,
                                         const runtime::Device& device,
                                         const RuntimeOptions& options);
    // A model of this shape without a file: weights allocated, never written. Requires
    // options.timing_only.
    static std::unique_ptr<Runtime> open_shape(const GptOssConfig& config,
                                               const runtime::Device& device,
                                               const RuntimeOptions& options);
    // The same for a DeepSeek-V3 shape (published_deepseek_config).
    static std::unique_ptr<Runtime> open_shape(const DeepseekConfig& config,
                                               const runtime::Device& device,
                                               const RuntimeOptions& options);
    virtual ~Runtime() = default;

    // GPT-OSS: the model's configuration. DeepSeek-V3: the fields every architecture shares
    // (layers, hidden, heads, experts, vocabulary, ...; n_head_kv 1 and head_dim C + R, its
    // latent cache's single head).
    virtual const GptOssConfig& config() const = 0;
    virtual const RuntimeOptions& options() const = 0;
    virtual uint32_t slices() const = 0;
    virtual uint64_t weight_bytes() const = 0;  // on the chip (replicas counted once)

    // A sequence: a KV cache slot. Throws BUSY when every slot is in use.
    virtual int create_sequence() = 0;
    virtual void free_sequence(int seq) = 0;
    virtual uint32_t sequence_length(int seq) const = 0;  // positions in its cache
    // Timing only: take the sequence's cache to hold `len` positions without running them
    // (nothing is written in timing-only mode, so only the length matters), so decode steps
    // at a long context can be projected without their prefills.
    virtual void assume_length(int seq, uint32_t len) = 0;

    // Runs the tokens through the model at the sequence's next positions as one batch
    // (chunks of max_batch_tokens) and returns the last token's logits.
    virtual std::vector<float> prefill(int seq, std::span<const int32_t> tokens) = 0;
    // One decode step of several sequences together: (sequence, token) pairs; returns each
    // one's logits, in order.
    virtual std::vector<std::vector<float>>
    decode(std::span<const std::pair<int, int32_t>> batch) = 0;
    // Builds the programs of a decode step of these sequences at their current lengths
    // without running it (nothing changes on the chip but the programs' code): the first
    // decode() of the same sequences then finds them built instead of building them on its
    // token's path; with `greedy`, those of decode_greedy's steps instead. A model split
    // over chips (RuntimeOptions::split_devices) builds its pieces at its first step.
    virtual void prepare_decode(std::span<const int> seqs, bool greedy = false) = 0;
    // Greedy decoding with the choice made on the chip: `steps` decode steps, the first of
    // `batch`'s (sequence, token) pairs, each step's tokens the argmax of its logits (the
    // lowest id on a tie, as Sampler's temperature 0 picks) fed to the next step there, so
    // that the host does not stand between two steps: it builds and submits the next while
    // one runs. Returns each step's tokens (in batch order); `on_step`, when set, sees them
    // as they come back, a step behind the chip. The same tokens as decode() and argmax();
    // last() then covers every step. Timing-only and split models choose on the host.
    virtual std::vector<std::vector<int32_t>>
    decode_greedy(std::span<const std::pair<int, int32_t>> batch, uint32_t steps,
                  const std::function<void(std::span<const int32_t>)>& on_step) = 0;
    // One pass that decodes `batch` and runs `chunk` of another sequence's prompt at its next
    // positions together, the way continuous-batching servers mix prompt chunks into decode
    // steps: each layer's weights stream once for both. chunk.size() + batch.size() rows
    // (at most max_batch_tokens). Returns the batch's logits in order, then the logits of the
    // chunk's last token. The same numbers as prefill(prompt_seq, chunk) and decode(batch).
    virtual std::vector<std::vector<float>>
    mixed_step(std::span<const std::pair<int, int32_t>> batch, int prompt_seq,
               std::span<const int32_t> chunk) = 0;

    // For tests: the bytes of the per-slice arenas (weights, KV caches) and the interleaved
    // one (activations, embedding table), at most max_bytes of each, read back from the
    // chip. (The replicated arena also holds the shard and KV head tables, written even in
    // timing-only mode, so it is left out.)
    virtual std::vector<uint8_t> read_back_data_for_test(uint64_t max_bytes = 8u << 20) = 0;

    // Chip figures of the last prefill/decode call, and since open.
    virtual const ChipTotals& last() const = 0;
    virtual const ChipTotals& total() const = 0;
    // The least HBM traffic a decode step of `users` sequences, each `context` positions
    // long, must cause: every dense weight once, the experts the step can select (at most
    // min(n_expert, users × k) of each layer, in expectation for random routing) and each
    // sequence's visible KV cache. Over the chip's bandwidth this is the roofline time.
    virtual uint64_t decode_min_bytes(uint32_t users, uint32_t context) const = 0;
    // The last call's figures by kernel (the graph node: "attn_q", "ffn_up_exps", ...).
    virtual const std::map<std::string, ChipTotals>& last_by_kernel() const = 0;
};

// The GPT-OSS-120B shape (36 layers, hidden 2880, 64/8 heads of 64, 128 experts top-4,
// expert width 2880, vocab 201088, window 128) and the other named shapes jal-run knows.
JAL_API GptOssConfig gpt_oss_120b_config();
JAL_API GptOssConfig gpt_oss_20b_config();

// ---- sampling ----
struct SamplerParams {
    float temperature = 0;  // 0: greedy (argmax, the lowest id on a tie)
    float top_p = 1.0f;
    uint64_t seed = 0;
};
class JAL_API Sampler {
public:
    explicit Sampler(const SamplerParams& params);
    int32_t sample(std::span<const float> logits);

private:
    SamplerParams p_;
    std::mt19937_64 rng_;
};

JAL_API int32_t argmax(std::span<const float> logits);
// The k most likely ids with their log-probabilities (log-softmax of the raw logits), most
// likely first, the lower id first on ties.
JAL_API std::vector<std::pair<int32_t, float>> top_logprobs(std::span<const float> logits,
                                                            uint32_t k);

}  // namespace jal::model
