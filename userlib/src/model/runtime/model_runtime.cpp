// The GPT-OSS graph on the chip (docs/model-runtime.md): weights placed and uploaded once,
// kernels built once per shape, then each prefill or decode step is one run of the
// Launcher: embedding, the layers, the final norm and the output GEMM, logits back.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include <jal/collectives.hpp>
#include <jal/hw/chip.h>
#include <jal/isa/numerics.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/argmax.hpp>
#include <jal/kernels/library/embedding.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/library/transformer.hpp>
#include <jal/model/gguf.hpp>
#include <jal/model/runtime.hpp>

#include "deepseek_runtime.hpp"
#include "expert_split.hpp"
#include "gemm_split.hpp"
#include "placement.hpp"
#include "runtime_common.hpp"
#include "sequence_slots.hpp"
#include "upload.hpp"

namespace jal::model {

namespace lin = jal::kernels::linear;
namespace k = jal::kernels;
using detail::add_decode_row;
using detail::cached_program;
using detail::check_decode_step;
using detail::claim_slot;
using detail::download_data;
using detail::graph_dispatch;
using detail::mask_of;
using detail::Place;
using detail::Placement;
using detail::run_prompt_chunks;
using detail::split_rows;
using detail::splits_by_rows;
using detail::used_slot;

namespace {

// Sets out to the value `names` pairs with s; false, out unchanged, for a name not there.
template <class E>
bool parse_named(std::string_view s, std::initializer_list<std::pair<std::string_view, E>> names,
                 E& out)
{
    for (const auto& [name, value] : names)
        if (s == name) {
            out = value;
            return true;
        }
    return false;
}

}  // namespace

ChipTotals& ChipTotals::operator+=(const ChipTotals& o)
{
    dispatches += o.dispatches;
    modelled_ns += o.modelled_ns;
    energy_nj += o.energy_nj;
    flops += o.flops;
    hbm_bytes += o.hbm_bytes;
    instructions += o.instructions;
    exchange_ns += o.exchange_ns;
    return *this;
}

const char* numerics_name(Numerics n)
{
    return n == Numerics::ggml ? "ggml" : "native";
}

bool parse_numerics(std::string_view s, Numerics& out)
{
    return parse_named(s, {{"native", Numerics::native}, {"ggml", Numerics::ggml}}, out);
}

const char* expert_layout_name(ExpertLayout l)
{
    switch (l) {
    case ExpertLayout::experts:
        return "experts";
    case ExpertLayout::both:
        return "both";
    default:
        return "auto";
    }
}

bool parse_expert_layout(std::string_view s, ExpertLayout& out)
{
    return parse_named(s,
                       {{"auto", ExpertLayout::automatic},
                        {"experts", ExpertLayout::experts},
                        {"both", ExpertLayout::both}},
                       out);
}

const char* tray_experts_name(TrayExperts t)
{
    switch (t) {
    case TrayExperts::experts:
        return "experts";
    case TrayExperts::striped:
        return "striped";
    default:
        return "auto";
    }
}

bool parse_tray_experts(std::string_view s, TrayExperts& out)
{
    return parse_named(s,
                       {{"auto", TrayExperts::automatic},
                        {"experts", TrayExperts::experts},
                        {"striped", TrayExperts::striped}},
                       out);
}

const char* kv_type_name(KvType t)
{
    return t == KvType::f16 ? "f16" : "f32";
}

bool parse_kv_type(std::string_view s, KvType& out)
{
    return parse_named(s, {{"f32", KvType::f32}, {"f16", KvType::f16}}, out);
}

namespace {

constexpr jal_dtype kDenseDtype = JAL_DT_BF16;  // the published checkpoints' non-expert format
// Query tokens an item of a prompt's attention holds (docs/model-runtime.md, "The graph").
constexpr uint32_t kPromptQueryBlock = 64;

// Up to this many (token, expert) pairs the expert GEMMs split by rows take over the kernels
// around them: the gate|up GEMM routes the tokens, the down GEMM applies the SwiGLU to the
// rows it gathers. Every slice then does that work for every pair (about 0.1 µs of vector
// work a pair), rather than a kernel doing each once behind a stage of its own (3–4 µs).
constexpr uint32_t kFewPairs = 8;
// Rows whose router logits go to a replicated buffer (router_logits): the router's stores
// then write each row's 512 bytes to all 64 slices (64 × 32 KiB at this many rows), and
// every slice of gate|up reads them locally (0.5 µs instead of 0.9 over the NoC).
constexpr uint32_t kFewLogitRows = 8;
// The most lane queues a runtime opens beside its own queue (RuntimeImpl's constructor).
constexpr uint32_t kMaxLanes = 32;
// At most this many key splits a KV head (RuntimeImpl::choose_key_splits).
constexpr uint32_t kMaxKeySplits = 8;
constexpr uint64_t kSplitCacheBytes = 512 << 10;

// Whether every one of `slices` slices gets some of `items` split by slice_range (a slice
// without any would break an exchange of messages).
bool every_slice_has(uint32_t items, uint32_t slices)
{
    return (items + slices - 1) / slices * (slices - 1) < items;
}

struct Matrix;

// What an expert GEMM takes over from the kernels around it (lin::ExpertGemmConfig).
struct ExpertFusions {
    bool swiglu_input = false;    // down: x rows are gate | up, the SwiGLU applied on the way in
    bool route = false;           // gate|up: routes the tokens itself
    bool combine = false;         // down: adds Σ w·e into the residual itself
    bool send_output = false;     // gate|up: its SwiGLU rows go to down as messages
    bool recv_input = false;      // down: receives them (and routes the tokens itself)
    bool send_residual = false;   // down: sends the residual columns to the next q·k·v
    bool recv_logits = false;     // gate|up: receives the router's logits (router_messages)
    bool recv_x = false;          // gate|up: receives the residual rows (projection_messages)
    bool x_from_self = false;     // gate|up: the rows whole from its slice's router
    bool send_x_columns = false;  // gate|up: hands down the columns its combine adds to
    bool recv_x_columns = false;  // down: receives them
    const Matrix* prefetch = nullptr;  // gate|up: issues this expert matrix's first W tile
    bool w0_prefetched = false;        // down: finds its first W tile issued (down_prefetch)
};

// A dense GEMM's messages (gemm.hpp's recv_x, send_y, store_y).
struct GemmMessages {
    bool recv_x = false;
    uint64_t x_senders = 0;  // with recv_x: from these dispatch slices (0: the stage's own)
    bool forward_x = false;  // with recv_x: the rows also to this slice (the router's)
    uint32_t send_y = 0;
    bool store_y = true;
};

constexpr uint64_t kSliceBytes = JAL_HBM_TOTAL_BYTES / JAL_NUM_SLICES;
// What HBM copies of weights leave free on every slice (for what the placement does not count).
constexpr uint64_t kCopyHeadroom = kSliceBytes / 40;

// A weight matrix split by rows over the slices as the GEMM kernels split it.
struct Matrix {
    uint32_t n = 0, kdim = 0, experts = 0;  // experts > 0: expert e's rows are e·n .. e·n+n-1
    jal_dtype dtype = JAL_DT_F32;
    uint64_t row_bytes = 0;
    // Every shard (the copies and the beside shards too) K-major: K rows of its rows
    // (RuntimeOptions::k_major_weights; dense F32, BF16 and F16 matrices only).
    bool k_major = false;
    const std::byte* data = nullptr;  // host bytes (nullptr: timing only)
    std::vector<Place> shards;        // per slice (bytes 0: owns nothing)
    std::vector<uint32_t> first_row;  // per slice: first row (or expert) it owns
    Place table;                      // the shard table (u64 per slice)
    // Experts only, when the runtime keeps the second layout (split by rows): per slice its
    // rows slice_range(n) of every expert, expert after expert, and their shard table.
    std::vector<Place> row_shards;
    Place row_table;
    // gate|up's rows layout in halves (plan_expert_rows): slice s's rows of an expert are its
    // gate rows then the matching up rows, so its GEMM applies the SwiGLU itself.
    bool halves = false;
    // Dense matrices, when HBM allows (plan_dense_copies): slice s also holds copies of the
    // shards of its aligned block of copy_block slices (`copies`, its own shard excepted),
    // and copy_table (S × S entries, slice s's S from s·S) names the shards each slice
    // reads in row groups: its copies inside its block, the shards themselves outside.
    uint32_t copy_block = 0;
    std::vector<Place> copies;
    Place copy_table;
    // The output projection, when HBM allows (plan_beside_copies): per slot group, the
    // matrix again split over the slices outside the group (shards in slice order) and its
    // shard table (one u64 a slice of that stage).
    struct Beside {
        std::vector<Place> shards;
        Place table;
        uint64_t leaves_out = 0;  // the slices it does not run on (beside_leaves_out)
    };
    std::vector<Beside> beside;
};

struct Vec {  // F32 (or any bytes) read whole by every slice
    Place place;
    const std::byte* data = nullptr;
    uint64_t bytes = 0;
    // Expert biases without the split by rows (plan_expert_biases): per slice its experts'
    // rows in its own arena, and their table (GemmConfig's bias_shards), instead of `place`.
    std::vector<Place> shards;
    Place table;
};

struct Layer {
    // q, k and v are one GEMM (their rows concatenated): one dispatch instead of three.
    // Likewise each expert's gate and up rows are one expert's 2·n_ff rows (gate then up).
    Vec attn_norm, post_norm, bqkv, bo, sinks, br, b_gate_up, b_down;
    Matrix wqkv, wo, router, gate_up, down;
};

struct Activations {
    Place x, q, attn, rlog, ids, wts, gate_up, act, eo, logits, tokens, pos;
    Place best;  // decode_greedy: each row's largest logit (the argmax kernel's values)
    // A few rows' router logits, replicated (router_logits): every slice of the gate|up
    // GEMM reads them all from its own HBM, not over the NoC.
    Place rlog_few;
    Place x2;  // split over chips: the residual stream between the two all-reduces of a layer
    // The decode rows' lists for the batched attention (k::AttentionBatchEntry): a slot
    // group's list, ended by an empty entry, for each group that attends for several rows.
    Place batch;
    Place xn;  // ggml numerics: a prompt's attn_norm rows, normalised once as BF16 (normed_rows)
};

// The model split over chips (RuntimeOptions::split_devices): this chip's rank of `chips`.
struct Split {
    uint32_t rank = 0, chips = 1;
};

// Rows [first, first + count) of a tensor of `total` rows (an F32 vector: elements).
struct RowSlice {
    std::string name;
    uint32_t total, first, count;
};

class RuntimeImpl final : public Runtime {
public:
    RuntimeImpl(std::optional<GgufFile> file, const GptOssConfig& config,
                const runtime::Device& device, const RuntimeOptions& options, Split split = {});
    // Rank 0 of a split: opens the other chips' shares of the model at `path` and the
    // communicator over all of them.
    void open_peers(const std::string& path, const RuntimeOptions& options);

    const GptOssConfig& config() const override { return model_; }
    const RuntimeOptions& options() const override { return o_; }
    uint32_t slices() const override { return S_; }
    uint64_t weight_bytes() const override { return weight_bytes_; }
    int create_sequence() override;
    void free_sequence(int seq) override;
    uint32_t sequence_length(int seq) const override { return slot(seq).len; }
    void assume_length(int seq, uint32_t len) override
    {
        if (!o_.timing_only || len > o_.n_ctx)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        "model runtime: assume_length is for timing-only runs within n_ctx");
        slot(seq).len = len;
    }
    std::vector<float> prefill(int seq, std::span<const int32_t> tokens) override;
    std::vector<std::vector<float>> decode(std::span<const std::pair<int, int32_t>> batch) override;
    void prepare_decode(std::span<const int> seqs, bool greedy = false) override;
    std::vector<std::vector<int32_t>>
    decode_greedy(std::span<const std::pair<int, int32_t>> batch, uint32_t steps,
                  const std::function<void(std::span<const int32_t>)>& on_step) override;
    std::vector<std::vector<float>> mixed_step(std::span<const std::pair<int, int32_t>> batch,
                                               int prompt_seq,
                                               std::span<const int32_t> chunk) override;
    std::vector<uint8_t> read_back_data_for_test(uint64_t max_bytes) override
    {
        std::vector<uint8_t> out = download_data(placement_, *launch_, max_bytes);
        run_batch();
        return out;
    }
    uint64_t decode_min_bytes(uint32_t users, uint32_t context) const override
    {
        auto bytes = [](const Matrix& m) {
            return m.row_bytes * m.n * std::max<uint32_t>(m.experts, 1);
        };
        const double E = c_.n_expert;
        const double distinct = detail::expected_active_experts(
            {.tokens = users, .k = c_.n_expert_used, .experts = c_.n_expert});
        double total = double(bytes(output_)) + embd_m_.row_bytes * double(users);
        for (uint32_t il = 0; il < c_.n_layer; il++) {
            const Layer& L = layers_[il];
            total += double(bytes(L.wqkv) + bytes(L.wo) + bytes(L.router));
            total += (double(bytes(L.gate_up) + bytes(L.down)) / E) * distinct;
            const uint32_t window = c_.layer_uses_swa(il) ? c_.sliding_window : 0;
            const uint32_t visible = window ? std::min(window, context) : context;
            total += double(users) * 2.0 * visible * kvdim_ * (kv_dtype_ == JAL_DT_F16 ? 2 : 4);
        }
        return static_cast<uint64_t>(total);
    }
    const ChipTotals& last() const override { return last_; }
    const std::map<std::string, ChipTotals>& last_by_kernel() const override { return by_kernel_; }
    const ChipTotals& total() const override { return total_; }

private:
    struct Slot {
        bool used = false;
        uint32_t len = 0;
        std::vector<Place> heads;  // per layer: the head table {k_va, vt_va} per KV head
    };
    struct Segment {
        int seq;
        uint32_t row0, rows, pos0;
    };

    const Slot& slot(int seq) const;
    Slot& slot(int seq) { return const_cast<Slot&>(std::as_const(*this).slot(seq)); }
    // Checks a prompt chunk for seq (positions left, ids in the vocabulary).
    void check_prompt(int seq, std::span<const int32_t> tokens) const;
    // Appends one row a (sequence, token) pair, each at its sequence's next position (`ahead`
    // further: decode_greedy's steps not yet finished), after checking it (once per step,
    // room in its cache, the id in the vocabulary).
    void add_decode_rows(std::span<const std::pair<int, int32_t>> batch, std::vector<Segment>& segs,
                         std::vector<int32_t>& tokens, std::vector<int32_t>& pos,
                         uint32_t ahead = 0) const;
    void plan_matrix(Matrix& m, const GgufTensor* t, uint32_t n, uint32_t kdim, uint32_t experts,
                     jal_dtype dtype);
    void plan_matrix(Matrix& m, const std::byte* data, uint64_t data_bytes, uint32_t n,
                     uint32_t kdim, uint32_t experts, jal_dtype dtype);
    void plan_vec(Vec& v, const GgufTensor* t, uint64_t bytes);
    void plan_vec(Vec& v, const std::byte* data, uint64_t bytes);
    // The slices' bytes one after another, kept for the upload (nullptr without a file).
    // Throws unless they add up to `bytes`.
    const std::byte* slice_rows(std::initializer_list<RowSlice> slices, uint64_t bytes);
    // Columns [first, first + count) of every one of the `rows` rows of a `cols`-column
    // matrix (this chip's share of the output projection), kept for the upload.
    const std::byte* slice_columns(const std::string& name, uint32_t rows, uint32_t cols,
                                   uint32_t first, uint32_t count, jal_dtype dtype);
    // This chip's experts' part of a tensor stacked by expert (`bytes` of it; nullptr
    // without a file).
    const std::byte* local_experts(const std::string& name, uint64_t bytes);
    std::vector<std::vector<std::byte>> owned_;
    // Planning (the constructor): where everything goes in the placement.
    using KvCaches = std::vector<std::vector<std::vector<Place>>>;  // [slot][layer][KV head]
    const GgufTensor* tensor(const std::string& name) const;        // nullptr without a file
    void shard_for_tray();
    bool striped() const { return split_.chips > 1 && o_.tray_experts == TrayExperts::striped; }
    const std::byte* zeros(const std::string& name, uint64_t bytes);
    jal_dtype expert_dtype() const;
    void shard_for_chips();
    void plan_weights();
    void plan_embedding();
    void plan_layer(Layer& L, uint32_t il);
    void plan_qkv(Layer& L, uint32_t il);
    void plan_gate_up(Layer& L, uint32_t il);
    // Tensors stacked by expert (E equal parts each), merged expert by expert: expert e's
    // part of the first, then of the second, ... (nullptr without a file).
    const std::byte* interleave_experts(std::initializer_list<std::string> names, uint64_t bytes);
    // Keeps merged tensor bytes for the upload; throws unless they are `bytes` long.
    const std::byte* keep(std::vector<std::byte>&& out, const std::string& first, uint64_t bytes);
    void plan_rope_tables();
    KvCaches plan_kv_caches();
    void plan_activations();
    void plan_expert_rows();
    void plan_timing_tables();
    void plan_dense_copies();
    void plan_beside_copies();
    uint64_t beside_leaves_out(uint32_t il, uint32_t slot) const;
    int beside_group(uint32_t il, uint32_t T, const std::vector<Segment>& segs) const;
    uint32_t dense_copy_groups(Matrix Layer::*member, uint32_t block);
    void plan_expert_biases();
    uint64_t copy_bytes(const Matrix& m, uint32_t block, uint32_t s) const;
    std::vector<uint64_t> copy_table(const Matrix& m) const;
    uint32_t timing_table_slot(const Matrix& m, uint32_t tokens) const;
    // Tokens after which uniform routing activates every expert (E/k).
    uint32_t timing_span() const
    {
        return std::max<uint32_t>(1, c_.n_expert / std::max<uint32_t>(1, c_.n_expert_used));
    }
    void upload_tables(const KvCaches& caches);
    Matrix matrix(const char* name, uint32_t n, uint32_t kdim, uint32_t experts,
                  jal_dtype timing_dtype);
    void upload_weights();
    template <typename F>
    void for_each_matrix(F f)
    {
        for (Layer& L : layers_)
            for (Matrix* m : {&L.wqkv, &L.wo, &L.router, &L.gate_up, &L.down}) f(*m);
        f(output_);
    }
    uint64_t kv_head_mask(uint32_t slot, uint32_t g, bool split) const;
    uint32_t slot_first_slice(uint32_t slot) const;
    uint64_t kv_split_mask(uint32_t slot) const;
    // The key splits of layer il's decode rows: none in a sliding window (a few chunks).
    uint32_t layer_splits(uint32_t il) const { return c_.layer_uses_swa(il) ? 1 : kv_splits_; }
    uint64_t head_table_bytes() const { return 16ull * c_.n_head_kv; }
    uint64_t kv_mask(uint32_t slot) const;
    // One graph run over these segments (tokens in row order); logits of rows
    // [out_row0, out_row0 + out_rows) come back.
    std::vector<float> run(const std::vector<Segment>& segs, std::span<const int32_t> tokens,
                           std::span<const int32_t> pos, uint32_t out_row0, uint32_t out_rows);
    // run()'s pass on one chip, added to the Launcher's batch up to its cut; `tail` (if
    // set) adds its last kernels after the output GEMM. Without `upload_tokens` the
    // embedding reads the tokens a_.tokens holds (decode_greedy: the last step's argmax).
    void add_pass(const std::vector<Segment>& segs, std::span<const int32_t> tokens,
                  std::span<const int32_t> pos, uint32_t out_row0, uint32_t out_rows,
                  const std::function<void()>& tail = {}, bool upload_tokens = true);
    // decode_greedy's step s of `batch`, `ahead` steps past the sequences' lengths, added to
    // launch_'s batch (up to its cut).
    void add_greedy_step(std::span<const std::pair<int, int32_t>> batch, uint32_t s,
                         uint32_t ahead);
    // launch_next_, opened the first time decode_greedy (or its prepare_decode) needs it.
    void open_second_launcher();
    // The graph's parts, added to the Launcher's batch by run().
    struct GraphKernels {
        const k::Program *rope, *append, *route, *swiglu, *combine;
        // The combine that also writes the next layer's normed rows (combine_normalises).
        const k::Program* combine_norm;
    };
    GraphKernels graph_kernels(uint32_t T);
    // q_block 0: the kernel's default (128 stacked query rows an item).
    const k::Program& attention_kernel(uint32_t window, bool append_kv, bool rope,
                                       uint32_t q_block = 0, jal_dtype out = JAL_DT_F32,
                                       bool batch = false, uint32_t key_splits = 1);
    void choose_key_splits();
    bool attention_wide(const Segment& sg) const;
    bool attention_appends(const Segment& sg) const;
    // The pass's batched attention lists (a_.batch, batch_at_), uploaded with its batch.
    void plan_attention_batches(const std::vector<Segment>& segs);
    bool batchable(const Segment& sg) const;
    bool attention_batched(const Segment& sg) const;
    void add_layer(uint32_t il, uint32_t T, const std::vector<Segment>& segs,
                   const GraphKernels& g);
    // The layer's two halves on the residual stream at x: the attention (x += its output
    // projection) and the mixture of experts (x += Σ w·e). Split over chips, rank 0 adds
    // its partial sums (and the biases) to x, the other ranks write theirs over x.
    void add_attention_block(uint32_t il, uint32_t T, const std::vector<Segment>& segs,
                             const GraphKernels& g, uint64_t x);
    void add_moe_block(uint32_t il, uint32_t T, const std::vector<Segment>& segs,
                       const GraphKernels& g, uint64_t x);
    // The rms_norm kernel: T residual rows at x normalised by `norm` into xn as BF16.
    void add_normed_rows(const Vec& norm, uint32_t T, uint64_t x);
    // The pass's inputs and its embedding into the batch.
    void add_embedding(std::span<const int32_t> tokens, std::span<const int32_t> pos,
                       bool upload_tokens = true);
    // run() over the chips of a split (rank 0): a dispatch on every chip up to each
    // exchange, then the all-reduce of the residual stream's T rows from `from` to `to`.
    std::vector<float> run_split(const std::vector<Segment>& segs, std::span<const int32_t> tokens,
                                 std::span<const int32_t> pos, uint32_t out_row0,
                                 uint32_t out_rows);
    void exchange(uint32_t T, Place Activations::*from, Place Activations::*to, const char* label);
    void add_attention(uint32_t il, const std::vector<Segment>& segs, const GraphKernels& g,
                       bool rope);
    void gemm(const Matrix& m, uint32_t rows, uint64_t x, uint64_t x_stride, const Vec* bias,
              uint64_t y, uint64_t y_stride, const char* what, const Vec* norm = nullptr,
              bool accumulate = false, jal_dtype x_dtype = JAL_DT_F32, int beside = -1,
              GemmMessages msgs = {});
    lin::GemmConfig gemm_config(const Matrix& m, uint32_t rows, bool bias, bool norm,
                                bool accumulate, jal_dtype x_dtype) const;
    void timing_expert_gemm(const Matrix& m, uint32_t tokens, uint64_t x, uint64_t x_stride,
                            uint64_t y, const char* what, const Vec* norm);
    // A plain GEMM standing in for an expert GEMM in timing-only mode (y rows of g.n).
    void timing_gemm(lin::GemmConfig g, uint64_t mask, uint64_t x, uint64_t x_stride,
                     uint64_t table, uint64_t row_bytes, uint64_t y, const char* what,
                     const Vec* norm);
    // The expert GEMM reads the rows layout (docs/model-runtime.md, "Expert split").
    bool split_by_rows(const Matrix& m, uint32_t tokens, bool per_pair) const;
    uint64_t router_logits(uint32_t rows) const;
    void expert_gemm(const Matrix& m, uint32_t tokens, bool per_pair, uint64_t x, uint64_t x_stride,
                     const Vec& bias, uint64_t y, uint64_t y_stride, const char* what,
                     const Vec* norm = nullptr, bool swiglu = false, jal_dtype x_dtype = JAL_DT_F32,
                     jal_dtype y_dtype = JAL_DT_F32, const ExpertFusions& fused = {});
    // The gate|up expert GEMM applies the SwiGLU in its epilogue: split by experts (each
    // slice has a pair's gate and up columns) and not charged through the timing-only
    // stand-in (expert_gemm).
    bool swiglu_in_gate_up(const Matrix& m, uint32_t tokens) const;
    // With the SwiGLU in gate|up's epilogue and down split by experts too, the rows go from
    // one to the other already in down's activation format (Q8_0 in ggml numerics for MXFP4
    // experts; F32: as they are).
    jal_dtype act_handover(const Layer& L, uint32_t tokens) const;
    uint64_t va(const Place& p) const { return placement_.va(p); }
    uint32_t row_groups(const Matrix& m, uint32_t rows, bool norm = false, bool accumulate = false,
                        jal_dtype x_dtype = JAL_DT_F32) const;
    lin::Numerics numerics() const
    {
        return o_.numerics == Numerics::ggml ? lin::Numerics::ggml : lin::Numerics::native;
    }
    // Whether layer il's attention writes its T rows already in the output projection's
    // activation format (BF16 rows in ggml numerics, as the GEMM would round them): a
    // prompt's, whose projection runs in row groups.
    bool attn_rows(uint32_t il, uint32_t T) const
    {
        return row_groups(layers_[il].wo, T, false, true) > 1;
    }
    // Whether q·k·v of layer il reads its T rows normalised once as BF16 (xn) instead of
    // normalising F32 residual rows in every row group: where the GEMM would round them to
    // BF16 itself (ggml numerics, BF16 weights) and runs in row groups (a prompt), so each
    // slice's remote reads of x are half the bytes; the same bits (the rms_norm kernel and
    // the GEMM's fused norm share one instruction sequence and one VCVT).
    bool normed_rows(uint32_t il, uint32_t T) const
    {
        const Matrix& m = layers_[il].wqkv;
        return lin::activation_dtype(m.dtype, numerics()) == JAL_DT_BF16 &&
               row_groups(m, T, true) > 1;
    }
    // Whether layer il's combine writes layer il + 1's normed rows (the residual rows are
    // in its L1 then: no dispatch reads them back). Split over chips the combine writes a
    // partial sum, so there the rms_norm kernel runs after the all-reduce instead.
    bool combine_normalises(uint32_t il, uint32_t T) const
    {
        return split_.chips == 1 && il + 1 < c_.n_layer && normed_rows(il + 1, T) &&
               !down_combines(il, T);
    }
    // Whether layer il's down GEMM adds Σ w·e into x itself (few pairs: no combine runs).
    bool down_combines(uint32_t il, uint32_t T) const
    {
        const Layer& L = layers_[il];
        return T * c_.n_expert_used <= kFewPairs && split_by_rows(L.down, T, true);
    }
    // Whether layer il's gate|up (routing fused, SwiGLU in halves) hands its routing and
    // rows to the down projection as messages (docs/model-runtime.md, "Expert rows as
    // messages"): both on every slice of one staged program, every slice holding rows of
    // both.
    bool expert_messages(uint32_t il, uint32_t T, bool route, bool glu) const
    {
        const uint32_t n = static_cast<uint32_t>(std::popcount(all_mask_));
        return o_.expert_messages && o_.staged && route && glu && down_combines(il, T) &&
               split_by_rows(layers_[il].gate_up, T, false) &&
               every_slice_has(layers_[il].down.n, n) && every_slice_has(layers_[il].gate_up.n, n);
    }
    // Whether layer il's gate|up routes the tokens itself (few pairs, split by rows: one
    // stage fewer) rather than after the routing kernel.
    bool gate_up_routes(uint32_t il, uint32_t T) const
    {
        return T * c_.n_expert_used <= kFewPairs && split_by_rows(layers_[il].gate_up, T, false);
    }
    // Whether layer il's down projection (taking its rows as messages) also sends the
    // residual columns it writes to layer il + 1's q·k·v, which receives its x (docs/
    // model-runtime.md, "The residual as messages"): one chip, q·k·v next on every slice,
    // every slice with columns of it, its F32 x in one chunk (gemm.hpp's recv_x).
    bool residual_messages(uint32_t il, uint32_t T) const
    {
        if (!o_.residual_messages || il + 1 >= c_.n_layer || split_.chips != 1) return false;
        const Matrix& gu = layers_[il].gate_up;
        if (!expert_messages(il, T, gate_up_routes(il, T), swiglu_in_gate_up(gu, T))) return false;
        const Matrix& q = layers_[il + 1].wqkv;
        const uint32_t n = static_cast<uint32_t>(std::popcount(all_mask_));
        if (!every_slice_has(q.n, n) || normed_rows(il + 1, T)) return false;
        const lin::GemmConfig g = gemm_config(q, T, true, true, false, JAL_DT_F32);
        const lin::GemmPlan p = lin::plan_gemm(g);
        return g.row_groups == 1 && p.m_chunk >= T && (!p.convert_x || p.stage_rows >= T);
    }
    // Whether layer il's router sends its logits to gate|up as messages (and stores none),
    // gate|up receiving them (docs/model-runtime.md, "The router as messages"): where gate|up
    // routes and sends its rows (expert_messages), one chip, every slice with router columns
    // in one W tile.
    bool router_messages(uint32_t il, uint32_t T) const;
    // The slices layer il's output projection sends the residual columns it computes from,
    // to the router and to gate|up, which receive their x; 0 where it does not:
    // router_messages, each sender's columns in one W tile, and both receivers able to take
    // x in one chunk (gate|up: the token rows as they are). Every slice, or beside the
    // attention the slices outside its group; there the projection stores nothing and
    // gate|up hands down the columns its combine adds to (a mask other than all_mask_).
    uint64_t projection_messages(uint32_t il, uint32_t T, const std::vector<Segment>& segs) const;
    // Whether layer il's gate|up issues down's first W tile, which down finds in L1
    // (docs/model-runtime.md, "Down's weights issued by gate|up"): where the rows go as
    // messages and both kernels keep their own L1 below the tile.
    bool down_prefetch(uint32_t il, uint32_t T) const;
    // Whether layer il's gate|up (routing, rows sent) loads its T token rows as they are
    // (expert_gemm_token_rows): what receiving them needs.
    bool gate_up_token_rows(uint32_t il, uint32_t T) const;
    mutable std::map<std::string, bool> prefetch_fits_;  // by the pair's configurations
    // The expert GEMM's configuration (expert_gemm's arguments).
    lin::ExpertGemmConfig expert_config(const Matrix& m, uint32_t tokens, bool per_pair,
                                        bool bias_shards, bool norm, bool swiglu, jal_dtype x_dtype,
                                        jal_dtype y_dtype, const ExpertFusions& fused) const;
    jal_dtype attn_dtype(uint32_t il, uint32_t T) const
    {
        const jal_dtype act = lin::activation_dtype(layers_[il].wo.dtype, numerics());
        // A head's row must be whole blocks of a blocked format (Q8_0 needs 32 | head_dim).
        const bool fits = lin::packed_row_bytes(act, c_.head_dim) != 0;
        return attn_rows(il, T) && fits ? act : JAL_DT_F32;
    }
    // Kernel `key`, built with `build` and copied to the chip the first time.
    const k::Program& program(const std::string& key, const std::function<k::CodeObject()>& build);
    // Adds a dispatch of `p` on `mask` to the Launcher's batch (lane >= 0: on that lane).
    void add(const k::Program& p, uint64_t mask, const k::Args& args, const char* what,
             int lane = -1);
    // Runs the batch; what the chip did goes to last_ and by_kernel_.
    ChipTotals run_batch() { return detail::batch_totals(launch_->run_batch(), by_kernel_); }
    // Row-split kernels (norms, residuals, RoPE, routing, SwiGLU, combine) on no more slices
    // than there are rows: a slice without rows would only add its start-up to the dispatch.
    uint64_t rows_mask(uint32_t rows) const
    {
        return mask_of(0, std::clamp<uint32_t>(rows, 1, S_));
    }

    std::optional<GgufFile> file_;
    GptOssConfig model_;  // what config() reports: the whole model's, also on a tray
    GptOssConfig c_;      // what this chip runs: its share on a tray (shard_for_tray)
    RuntimeOptions o_;
    const runtime::Device& device_;
    runtime::Context context_;
    uint32_t S_ = 0;
    uint32_t lanes_ = 0;  // the Launcher's lane queues (0: none)
    uint64_t all_mask_ = 0;
    jal_dtype kv_dtype_ = JAL_DT_F32;        // the KV caches' elements (o_.kv_type)
    uint32_t kv_group_ = 0, kv_groups_ = 0;  // slices an attention dispatch uses; groups of them
    // Key splits of a decode row's full attention (choose_key_splits): slot j's layers then
    // attend on kv_splits_ groups from slot_first_slice(j), its windowed ones on the first.
    uint32_t kv_splits_ = 1;
    // Per slot group, this pass: the byte offset of its list in a_.batch, or -1 where its
    // rows attend one call a sequence (plan_attention_batches).
    std::vector<int64_t> batch_at_;
    uint32_t qdim_ = 0, kvdim_ = 0, T_ = 0;
    Placement placement_;
    std::unique_ptr<runtime::Queue> queue_;
    std::unique_ptr<k::Launcher> launch_;
    // decode_greedy: a second Launcher on the same queue, so that one step is recorded
    // and started while the other's runs (each keeps its own batch and linked programs).
    k::LauncherOptions launch_options_;
    std::unique_ptr<k::Launcher> launch_next_;
    std::map<std::string, std::unique_ptr<k::Program>> programs_;  // by key
    std::map<std::string, ChipTotals> by_kernel_;                  // by `what`, since cleared
    // Timing only: the expert GEMMs' stand-in shard tables (timing_expert_gemm), one slot of
    // 64 u64 per (expert matrix, active-expert set), reserved with the rest of the placement.
    Place timing_tables_;
    std::vector<bool> timing_table_written_;
    Vec embd_, out_norm_, rope_cos_, rope_sin_;
    Matrix embd_m_, output_;
    std::vector<Layer> layers_;
    std::vector<Slot> slots_;
    Activations a_;
    std::vector<float> cos_, sin_;
    std::vector<std::pair<Place, const Vec*>> vec_uploads_;
    uint64_t weight_bytes_ = 0;
    ChipTotals last_, total_;
    // Split over chips: this chip's rank, its experts [expert0_, expert0_ + experts_) of
    // c_.n_expert (every expert on one chip, and when striped), and on rank 0 the other
    // chips' runtimes and the communicator (declared last: destroyed before the queues and
    // contexts it uses).
    Split split_;
    uint32_t expert0_ = 0, experts_ = 0;
    uint32_t ff0_ = 0;  // striped: this chip's first column of each expert's n_ff
    std::vector<std::unique_ptr<RuntimeImpl>> peers_;
    std::unique_ptr<collectives::Communicator> comm_;
};

RuntimeImpl::RuntimeImpl(std::optional<GgufFile> file, const GptOssConfig& config,
                         const runtime::Device& device, const RuntimeOptions& options, Split split)
    : file_(std::move(file)), model_(config), c_(config), o_(options), device_(device),
      context_(device), placement_(1), split_(split)
{
    const jal_identify id = device.identify();
    const uint32_t usable = std::max<uint32_t>(1, id.slices_enabled);
    S_ = o_.slices ? o_.slices : (o_.timing_only ? usable : std::min<uint32_t>(8, usable));
    shard_for_tray();
    shard_for_chips();
    if (S_ > usable || S_ > 64)
        throw Error(
            JAL_STATUS_INVALID_FIELD,
            fmt::format("model runtime: {} slices asked for, the chip has {} usable", S_, usable));
    all_mask_ = mask_of(0, S_);
    placement_ = Placement(S_);
    if (!o_.n_ctx) o_.n_ctx = std::min<uint32_t>(c_.n_ctx_train ? c_.n_ctx_train : 4096, 4096);
    kv_dtype_ = o_.kv_type == KvType::f16 ? JAL_DT_F16 : JAL_DT_F32;
    T_ = std::max(o_.max_batch_tokens, o_.max_sequences);
    qdim_ = c_.n_head * c_.head_dim;
    kvdim_ = c_.n_head_kv * c_.head_dim;
    // Attention of one sequence runs on kv_group_ slices, one KV head each (the kernel
    // gives item i = KV head i % n_head_kv to slice i % n); each sequence slot uses its own
    // group, so caches spread over the chip and every head's cache is local to its reader.
    kv_group_ = std::min(S_, c_.n_head_kv);
    kv_groups_ = std::max<uint32_t>(1, S_ / kv_group_);
    choose_key_splits();

    plan_weights();
    const KvCaches caches = plan_kv_caches();
    plan_activations();
    plan_expert_rows();
    plan_expert_biases();
    plan_timing_tables();
    plan_dense_copies();
    plan_beside_copies();

    placement_.allocate(context_);
    // Large enough for a whole decode step of many sequences: the producer never waits
    // for room while the device is still behind.
    queue_ = std::make_unique<runtime::Queue>(context_, 16384);
    k::LauncherOptions lo;
    // Argument blocks are read by every slice of every dispatch: interleaved.
    lo.args = {JAL_PLACE_REPLICATED, all_mask_};
    // Sequences in different slice groups: their attention runs on lanes side by side. At
    // most kMaxLanes queues (a client's share is 64 by default, docs/security.md): with
    // more groups (one KV head a chip on a tray of 8: 64 groups), groups share lanes.
    lanes_ = kv_groups_ > 1 ? std::min(kv_groups_, kMaxLanes) : 0;
    lo.lanes = lanes_;
    lo.stages = o_.staged;
    launch_options_ = lo;
    launch_ = std::make_unique<k::Launcher>(device_, context_, *queue_, lo);

    upload_tables(caches);
    if (split_.chips > 1) {
        // Rows of pairs whose expert is on another chip are never written but are added
        // with weight 0 (MoeRoutingConfig::local_experts): finite from the start.
        const std::vector<std::byte> zeros(a_.eo.bytes);
        launch_->upload(va(a_.eo), zeros.data(), zeros.size());
    }
    run_batch();
    if (!o_.timing_only) upload_weights();
}

// This chip's share of a model split over chips (RuntimeOptions::split_devices): n_head_kv /
// N KV heads with their query heads (tensor parallel attention) and its share of the routed
// experts (RuntimeOptions::tray_experts, resolved by open): expert parallel, n_expert / N
// experts, or striped, columns [ff0_, ff0_ + n_ff_exp) of every expert's n_ff (the last
// chip's share may be shorter); the router keeps all of them. Its experts are split by
// experts over its slices only: the rows layout's fused routing would not know which
// experts are local.
void RuntimeImpl::shard_for_chips()
{
    const uint32_t n = split_.chips;
    experts_ = c_.n_expert;
    if (n == 1) return;
    if (o_.timing_only || o_.tray_chips != 1)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "model runtime: split_devices runs the model over chips; timing-only "
                    "projections take tray_chips");
    const bool striped = o_.tray_experts == TrayExperts::striped;
    if (c_.n_head_kv % n || (!striped && c_.n_expert % n))
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: {} KV heads and {} experts do not split over {} "
                                "chips",
                                c_.n_head_kv, c_.n_expert, n));
    c_.n_head /= n;
    c_.n_head_kv /= n;
    o_.expert_layout = ExpertLayout::experts;
    if (striped) {
        const uint32_t share = detail::striped_ff_share(c_.n_ff_exp, n, expert_dtype(), S_);
        ff0_ = split_.rank * share;
        if (ff0_ >= c_.n_ff_exp)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("model runtime: expert width {} does not stripe over {} "
                                    "chips (shares of {} leave chip {} none)",
                                    c_.n_ff_exp, n, share, split_.rank));
        c_.n_ff_exp = std::min(share, c_.n_ff_exp - ff0_);
        return;
    }
    experts_ = c_.n_expert / n;
    expert0_ = split_.rank * experts_;
}

void RuntimeImpl::open_peers(const std::string& path, const RuntimeOptions& options)
{
    RuntimeOptions po = options;
    po.split_devices.clear();
    po.progress = nullptr;  // rank 0's upload reports
    std::vector<collectives::Rank> ranks = {{device_, context_, *queue_}};
    for (uint32_t r = 1; r < split_.chips; r++) {
        peers_.push_back(std::make_unique<RuntimeImpl>(GgufFile::open(path), model_,
                                                       *options.split_devices[r - 1], po,
                                                       Split{r, split_.chips}));
        const RuntimeImpl& p = *peers_.back();
        ranks.emplace_back(p.device_, p.context_, *p.queue_);
    }
    comm_ = std::make_unique<collectives::Communicator>(std::move(ranks));
}

// One chip's share of a tray (RuntimeOptions::tray_chips, timing only): its attention heads
// (tensor parallel: n_head / N query and n_head_kv / N KV heads), its rows of the vocabulary
// and its share of the routed experts (RuntimeOptions::tray_experts): expert parallel,
// n_expert / N whole experts serving ⌈n_expert_used / N⌉ of each token's pairs (the most
// any chip serves when a token's pairs spread evenly), or striped, every expert with the
// chip's share of n_ff (detail::striped_ff_share) serving every pair; automatic, which
// open_shape resolves (with_tray_experts), is taken as expert parallel here. Every chip
// keeps the whole residual stream; the exchange that keeps it whole (two all-reduces a
// layer, which also sum the striped experts' partial products) is the caller's to model
// (docs/multichip.md).
void RuntimeImpl::shard_for_tray()
{
    const uint32_t n = o_.tray_chips;
    if (n == 1) return;
    if (!o_.timing_only)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "model runtime: tray_chips (the model split over chips) needs timing_only");
    if (n == 0 || c_.n_head % n || c_.n_head_kv % n)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: {} heads and {} KV heads do not split over {} "
                                "chips",
                                c_.n_head, c_.n_head_kv, n));
    c_.n_head /= n;
    c_.n_head_kv /= n;
    c_.n_vocab = (c_.n_vocab + n - 1) / n;
    if (o_.tray_experts == TrayExperts::striped) {
        c_.n_ff_exp = detail::striped_ff_share(c_.n_ff_exp, n, expert_dtype(), S_);
        return;
    }
    if (c_.n_expert % n)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: {} experts do not split over {} chips (striped "
                                "experts would)",
                                c_.n_expert, n));
    c_.n_expert /= n;
    c_.n_expert_used = (c_.n_expert_used + n - 1) / n;
}

// The routed experts' type: the file's down projection's, else MXFP4 (the published one).
jal_dtype RuntimeImpl::expert_dtype() const
{
    const GgufTensor* t = file_ ? &file_->tensor("blk.0.ffn_down_exps.weight") : nullptr;
    return t ? detail::chip_dtype(t->type, t->name) : JAL_DT_MXFP4;
}

const GgufTensor* RuntimeImpl::tensor(const std::string& name) const
{
    return file_ ? &file_->tensor(name) : nullptr;
}

// The weights and the RoPE tables, in the placement's order.
void RuntimeImpl::plan_weights()
{
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    plan_embedding();
    layers_.resize(c_.n_layer);
    for (uint32_t il = 0; il < c_.n_layer; il++) plan_layer(layers_[il], il);
    plan_vec(out_norm_, tensor("output_norm.weight"), E4);
    output_ = matrix("output.weight", c_.n_vocab, c_.n_embd, 0, kDenseDtype);
    plan_rope_tables();
    weight_bytes_ = placement_.bytes_reserved();
}

// token_embd: every slice reads random rows of it; interleaved (replicating a
// vocabulary-sized table on every slice would cost 64× its size).
void RuntimeImpl::plan_embedding()
{
    const GgufTensor* t = tensor("token_embd.weight");
    embd_m_.dtype = t ? detail::chip_dtype(t->type, t->name) : kDenseDtype;
    embd_m_.kdim = c_.n_embd;
    embd_m_.n = c_.n_vocab;
    embd_m_.row_bytes = lin::packed_row_bytes(embd_m_.dtype, c_.n_embd);
    embd_.bytes = embd_m_.row_bytes * c_.n_vocab;
    embd_.data = t ? t->data.data() : nullptr;
    embd_.place = placement_.reserve(Placement::kInterleaved, embd_.bytes);
    vec_uploads_.push_back({embd_.place, &embd_});
}

void RuntimeImpl::plan_layer(Layer& L, uint32_t il)
{
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    auto n = [&](const char* s) { return fmt::format("blk.{}.{}", il, s); };
    auto vec = [&](Vec& v, const std::string& name, uint64_t bytes) {
        plan_vec(v, tensor(name), bytes);
    };
    vec(L.attn_norm, n("attn_norm.weight"), E4);
    vec(L.post_norm, n("post_attention_norm.weight"), E4);
    // This chip's heads (all of them on one chip): query heads [h0, h0 + n_head), KV heads
    // [g0, g0 + n_head_kv) of the model's.
    const uint32_t h0 = split_.rank * c_.n_head, g0 = split_.rank * c_.n_head_kv;
    const uint32_t hd = c_.head_dim, qrows = model_.n_head * hd, kvrows = model_.n_head_kv * hd;
    const uint64_t qkv_bytes = (qdim_ + 2ull * kvdim_) * 4;
    plan_vec(L.bqkv,
             slice_rows({{n("attn_q.bias"), qrows, h0 * hd, qdim_},
                         {n("attn_k.bias"), kvrows, g0 * hd, kvdim_},
                         {n("attn_v.bias"), kvrows, g0 * hd, kvdim_}},
                        qkv_bytes),
             qkv_bytes);
    vec(L.bo, n("attn_output.bias"), E4);
    plan_vec(L.sinks,
             slice_rows({{n("attn_sinks.weight"), model_.n_head, h0, c_.n_head}}, c_.n_head * 4ull),
             c_.n_head * 4ull);
    vec(L.br, n("ffn_gate_inp.bias"), c_.n_expert * 4ull);
    // The expert biases are placed once the expert layout is known (plan_expert_biases).
    const uint64_t gate_up_bias = uint64_t{experts_} * c_.n_ff_exp * 2 * 4;
    L.b_gate_up.bytes = gate_up_bias;
    L.b_gate_up.data =
        interleave_experts({n("ffn_gate_exps.bias"), n("ffn_up_exps.bias")}, gate_up_bias);
    const uint64_t down_bias = uint64_t{experts_} * c_.n_embd * 4;
    L.b_down.bytes = down_bias;
    // Striped, every chip's down GEMM gives a partial sum of each pair: rank 0 adds the bias.
    L.b_down.data = striped() && split_.rank ? zeros(n("ffn_down_exps.bias"), down_bias)
                                             : local_experts(n("ffn_down_exps.bias"), down_bias);
    plan_qkv(L, il);
    if (split_.chips > 1) {  // this chip's columns of the output projection
        const GgufTensor* t = tensor(n("attn_output.weight"));
        const jal_dtype dt = t ? detail::chip_dtype(t->type, t->name) : kDenseDtype;
        plan_matrix(L.wo,
                    slice_columns(n("attn_output.weight"), c_.n_embd, model_.n_head * hd, h0 * hd,
                                  qdim_, dt),
                    0, c_.n_embd, qdim_, 0, dt);
    } else {
        L.wo = matrix(n("attn_output.weight").c_str(), c_.n_embd, qdim_, 0, kDenseDtype);
    }
    L.router = matrix(n("ffn_gate_inp.weight").c_str(), c_.n_expert, c_.n_embd, 0, kDenseDtype);
    plan_gate_up(L, il);
    const std::string down = n("ffn_down_exps.weight");
    const GgufTensor* t = tensor(down);
    const jal_dtype dt = t ? detail::chip_dtype(t->type, t->name) : JAL_DT_MXFP4;
    const uint64_t down_bytes = lin::packed_row_bytes(dt, c_.n_ff_exp) * c_.n_embd * experts_;
    const std::byte* down_data = striped() ? slice_columns(down, c_.n_expert * c_.n_embd,
                                                           model_.n_ff_exp, ff0_, c_.n_ff_exp, dt)
                                           : local_experts(down, down_bytes);
    plan_matrix(L.down, down_data, down_bytes, c_.n_embd, c_.n_ff_exp, experts_, dt);
}

// Each expert's gate and up rows as one expert of 2·n_ff rows (one expert GEMM gives both
// halves of the SwiGLU's input); they must share a type.
void RuntimeImpl::plan_gate_up(Layer& L, uint32_t il)
{
    const std::string names[2] = {fmt::format("blk.{}.ffn_gate_exps.weight", il),
                                  fmt::format("blk.{}.ffn_up_exps.weight", il)};
    jal_dtype dt = JAL_DT_MXFP4;
    if (file_) {
        dt = detail::chip_dtype(file_->tensor(names[0]).type, names[0]);
        if (detail::chip_dtype(file_->tensor(names[1]).type, names[1]) != dt)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("model runtime: '{}' and '{}' differ in type; the runtime "
                                    "fuses them",
                                    names[0], names[1]));
    }
    const uint32_t rows = 2 * c_.n_ff_exp;
    const uint64_t bytes = lin::packed_row_bytes(dt, c_.n_embd) * rows * experts_;
    plan_matrix(L.gate_up, interleave_experts({names[0], names[1]}, bytes), bytes, rows, c_.n_embd,
                experts_, dt);
}

// q, k and v fused into one matrix (one GEMM); they must share a type.
void RuntimeImpl::plan_qkv(Layer& L, uint32_t il)
{
    const std::string names[3] = {fmt::format("blk.{}.attn_q.weight", il),
                                  fmt::format("blk.{}.attn_k.weight", il),
                                  fmt::format("blk.{}.attn_v.weight", il)};
    jal_dtype dt = kDenseDtype;
    if (file_) {
        dt = detail::chip_dtype(file_->tensor(names[0]).type, names[0]);
        for (const std::string& nm : names)
            if (detail::chip_dtype(file_->tensor(nm).type, nm) != dt)
                throw Error(JAL_STATUS_INVALID_FIELD,
                            fmt::format("model runtime: '{}' and '{}' differ in type; the "
                                        "runtime fuses them",
                                        names[0], nm));
    }
    const uint32_t rows = qdim_ + 2 * kvdim_;
    const uint64_t bytes = lin::packed_row_bytes(dt, c_.n_embd) * rows;
    // This chip's heads' rows (every row on one chip).
    const uint32_t hd = c_.head_dim, q0 = split_.rank * qdim_, kv0 = split_.rank * kvdim_;
    plan_matrix(L.wqkv,
                slice_rows({{names[0], model_.n_head * hd, q0, qdim_},
                            {names[1], model_.n_head_kv * hd, kv0, kvdim_},
                            {names[2], model_.n_head_kv * hd, kv0, kvdim_}},
                           bytes),
                bytes, rows, c_.n_embd, 0, dt);
}

// RoPE tables (YaRN as llama.cpp computes it), replicated: every slice gathers rows.
void RuntimeImpl::plan_rope_tables()
{
    k::YarnParams y;
    y.head_dim = c_.n_rot ? c_.n_rot : c_.head_dim;
    y.freq_base = c_.rope_freq_base;
    const bool yarn = c_.rope_scaling_type == "yarn" && c_.rope_scaling_factor > 0;
    y.factor = yarn ? c_.rope_scaling_factor : 1.0;
    y.ext_factor = yarn ? 1.0 : 0.0;
    y.n_ctx_orig = c_.rope_orig_ctx ? c_.rope_orig_ctx : c_.n_ctx_train;
    y.beta_fast = c_.yarn_beta_fast;
    y.beta_slow = c_.yarn_beta_slow;
    k::RopeTables rt = k::rope_yarn_tables(y, o_.n_ctx);
    cos_ = std::move(rt.cos);
    sin_ = std::move(rt.sin);
    rope_cos_.bytes = cos_.size() * 4;
    rope_cos_.data = reinterpret_cast<const std::byte*>(cos_.data());
    rope_cos_.place = placement_.reserve(Placement::kReplicated, rope_cos_.bytes);
    rope_sin_.bytes = sin_.size() * 4;
    rope_sin_.data = reinterpret_cast<const std::byte*>(sin_.data());
    rope_sin_.place = placement_.reserve(Placement::kReplicated, rope_sin_.bytes);
    vec_uploads_.push_back({rope_cos_.place, &rope_cos_});
    vec_uploads_.push_back({rope_sin_.place, &rope_sin_});
}

// KV caches: slot j, layer l, KV head g on the slices kv_head_mask(j, g) (see kv_group_; a
// copy on each of its key splits' slices); each slot and layer also has a replicated head
// table the kernels follow.
RuntimeImpl::KvCaches RuntimeImpl::plan_kv_caches()
{
    const uint64_t head_bytes = k::kv_head_bytes(o_.n_ctx, c_.head_dim, kv_dtype_);
    slots_.resize(o_.max_sequences);
    KvCaches caches(o_.max_sequences);
    for (uint32_t j = 0; j < o_.max_sequences; j++) {
        caches[j].resize(c_.n_layer);
        // A slot's tables one after another, a layer each (head_table_bytes() apart): the
        // batched attention's list names a slot's first and adds the layer's offset.
        const Place tables =
            placement_.reserve(Placement::kReplicated, head_table_bytes() * c_.n_layer);
        for (uint32_t il = 0; il < c_.n_layer; il++) {
            for (uint32_t g = 0; g < c_.n_head_kv; g++)
                caches[j][il].push_back(placement_.reserve(
                    placement_.group_arena(kv_head_mask(j, g, layer_splits(il) > 1)), head_bytes));
            slots_[j].heads.push_back(
                Place{tables.arena, tables.offset + il * head_table_bytes(), head_table_bytes()});
        }
    }
    return caches;
}

// Activations for T_ rows. What a split GEMM reads whole is replicated.
// The second expert layout (split by rows), when asked for or, automatically, when it fits:
// no slice may go past 90 % of its HBM with it (the rest is headroom for what the placement
// does not count, e.g. the Launcher's argument blocks).
void RuntimeImpl::plan_expert_rows()
{
    if (o_.expert_layout == ExpertLayout::experts || c_.n_expert == 0) return;
    constexpr uint64_t kSliceBytes = JAL_HBM_TOTAL_BYTES / JAL_NUM_SLICES;
    auto shard_bytes = [&](const Matrix& m, uint32_t s) {
        return uint64_t{m.experts} * lin::slice_range(m.n, S_, s).size() * m.row_bytes;
    };
    if (o_.expert_layout == ExpertLayout::automatic)
        for (uint32_t s = 0; s < S_; s++) {
            uint64_t extra = 0;  // with the rows layout the biases are replicated too
            for (const Layer& L : layers_)
                for (const Matrix* m : {&L.gate_up, &L.down}) extra += shard_bytes(*m, s);
            for (const Layer& L : layers_) extra += L.b_gate_up.bytes + L.b_down.bytes;
            if (placement_.slice_load(s) + extra > kSliceBytes / 10 * 9) return;
        }
    for (Layer& L : layers_)
        for (Matrix* m : {&L.gate_up, &L.down}) {
            for (uint32_t s = 0; s < S_; s++) {
                const uint64_t bytes = shard_bytes(*m, s);
                m->row_shards.push_back(bytes ? placement_.reserve(static_cast<int>(s), bytes)
                                              : Place{});
            }
            m->row_table = placement_.reserve(Placement::kReplicated, 8ull * S_);
        }
    // gate|up in halves where every slice's share is a whole number of gate | up pairs: the
    // decode step's gate|up then stores the SwiGLU'd rows, half the bytes the down GEMM
    // gathers (ExpertGemmConfig::swiglu split by rows).
    bool even = true;
    for (uint32_t s = 0; s < S_; s++) {
        const lin::Range r = lin::slice_range(2 * c_.n_ff_exp, S_, s);
        even = even && r.begin % 2 == 0 && r.size() % 2 == 0;
    }
    for (Layer& L : layers_) L.gate_up.halves = even;
}

// The expert biases. With the split by rows (the second layout) a slice reads its rows of
// every expert's bias: replicated, as the other vectors. Without it every expert GEMM is
// split by experts and a slice reads only its own experts' rows: those go in its arena
// (159 MB a slice less for GPT-OSS-120B than a replica of every layer's, which at high
// concurrency is HBM the dense copies use), named by a table.
void RuntimeImpl::plan_expert_biases()
{
    for (Layer& L : layers_)
        for (auto [v, m] : {std::pair{&L.b_gate_up, &L.gate_up}, std::pair{&L.b_down, &L.down}}) {
            weight_bytes_ += v->bytes;
            if (!m->row_shards.empty() || m->experts == 0) {
                v->place = placement_.reserve(Placement::kReplicated, v->bytes);
                vec_uploads_.push_back({v->place, v});
                continue;
            }
            const uint64_t per = v->bytes / m->experts;
            for (uint32_t s = 0; s < S_; s++) {
                const uint64_t n = lin::slice_range(m->experts, S_, s).size();
                v->shards.push_back(n ? placement_.reserve(static_cast<int>(s), n * per) : Place{});
            }
            v->table = placement_.reserve(Placement::kReplicated, 8ull * S_);
        }
}

// The output projection beside the attention. A decode pass whose attention runs on one
// slot group leaves the other S − kv_group_ slices idle during its attention stage; with a
// copy of Wo split over them, the projection runs there and each slice loads its shard
// before the GEMM's ACQUIRE, while the attention runs, instead of streaming it once the
// attention is done (docs/model-runtime.md). A copy for each group a slot maps to, only if
// every slice keeps kCopyHeadroom of its HBM (after the dense copies: prompts use those).
void RuntimeImpl::plan_beside_copies()
{
    if (!o_.projection_beside_attention || !o_.staged || kv_groups_ < 2) return;
    const uint32_t groups = std::min(o_.max_sequences, kv_groups_ / kv_splits_), n = S_ - kv_group_;
    // Slice i of the stage beside layer il's attention for slot group grp.
    auto slice = [&](uint32_t il, uint32_t grp, uint32_t i) {
        return detail::nth_slice_outside(beside_leaves_out(il, grp), i);
    };
    std::vector<uint64_t> extra(S_, 0);
    for (uint32_t grp = 0; grp < groups; grp++)
        for (uint32_t il = 0; il < layers_.size(); il++)
            for (uint32_t i = 0; i < n; i++)
                extra[slice(il, grp, i)] +=
                    lin::slice_range(layers_[il].wo.n, n, i).size() * layers_[il].wo.row_bytes;
    for (uint32_t s = 0; s < S_; s++)
        if (placement_.slice_load(s) + extra[s] + kCopyHeadroom > kSliceBytes) return;
    for (uint32_t il = 0; il < layers_.size(); il++) {
        Matrix& wo = layers_[il].wo;
        wo.beside.resize(groups);
        for (uint32_t grp = 0; grp < groups; grp++) {
            Matrix::Beside& bs = wo.beside[grp];
            bs.leaves_out = beside_leaves_out(il, grp);
            for (uint32_t i = 0; i < n; i++) {
                const uint64_t bytes = lin::slice_range(wo.n, n, i).size() * wo.row_bytes;
                bs.shards.push_back(
                    bytes ? placement_.reserve(static_cast<int>(slice(il, grp, i)), bytes)
                          : Place{});
            }
            bs.table = placement_.reserve(Placement::kReplicated, 8ull * n);
        }
    }
}

// The slices the output projection beside slot j's attention in layer il leaves out: the
// slot's group; where the layer's keys split (over every slice of the slot's groups), the
// splits that merge and store (split 0 of each head): the others are done early and load
// their shard meanwhile.
uint64_t RuntimeImpl::beside_leaves_out(uint32_t il, uint32_t j) const
{
    if (layer_splits(il) == 1) return kv_mask(j);
    uint64_t m = 0;
    for (uint32_t g = 0; g < kv_group_; g++)
        m |= uint64_t{1} << (slot_first_slice(j) + g * kv_splits_);  // head g's split 0
    return m;
}

// The slot group whose slices alone attend in this pass, if its output projection runs
// beside the attention (plan_beside_copies): every segment a decode row set on that
// group, and T rows that the GEMM takes in one chunk without row groups; else −1.
int RuntimeImpl::beside_group(uint32_t il, uint32_t T, const std::vector<Segment>& segs) const
{
    const Matrix& wo = layers_[il].wo;
    if (wo.beside.empty() || row_groups(wo, T, false, true) > 1) return -1;
    const uint32_t grp = static_cast<uint32_t>(segs.front().seq) % kv_groups_;
    for (const Segment& sg : segs)
        if (attention_wide(sg) || static_cast<uint32_t>(sg.seq) % kv_groups_ != grp) return -1;
    if (grp >= wo.beside.size()) return -1;
    lin::GemmConfig g;
    g.m = T, g.n = wo.n, g.k = wo.kdim, g.weight = wo.dtype, g.bias = true, g.accumulate = true;
    g.numerics = numerics(), g.x_dtype = attn_dtype(il, T), g.w_kmajor = wo.k_major;
    return lin::plan_gemm(g).m_chunk >= T ? static_cast<int>(grp) : -1;
}

// Local copies of the dense GEMMs' shards (the output projection's, q·k·v's), when HBM
// allows. In a row groups a slice reads a shards of W, a − 1 of them over the NoC at 60 GB/s;
// with copies of the shards of its block of B slices it reads those from its own HBM at 240
// GB/s, which also moves the best a up (gemm_row_groups). Only GEMMs in row groups (a
// prompt's rows) use them; decode reads its own shard as before. Each family (that matrix of
// every layer) takes the block its max_batch_tokens-row GEMM would then run in, or the
// largest smaller one that fits: no slice may go past its HBM less kCopyHeadroom (for what
// the placement does not count).
void RuntimeImpl::plan_dense_copies()
{
    if (!o_.dense_copies || S_ < 2 || T_ < 2) return;
    using Member = Matrix Layer::*;
    const Member families[2] = {&Layer::wo, &Layer::wqkv};
    uint32_t blocks[2] = {1, 1};
    auto fits = [&](const uint32_t* b) {
        for (uint32_t s = 0; s < S_; s++) {
            uint64_t extra = 0;
            for (int f = 0; f < 2; f++)
                for (const Layer& L : layers_)
                    if (b[f] > 1) extra += copy_bytes(L.*families[f], b[f], s);
            if (placement_.slice_load(s) + extra + kCopyHeadroom > kSliceBytes) return false;
        }
        return true;
    };
    // Blocks of up to 8 for both first (most of either's gain), then larger ones with what
    // HBM has left: where it is short, q·k·v's 8 save more than the output projection's 16.
    for (uint32_t cap : {std::min(S_, 8u), S_})
        for (int f = 0; f < 2; f++)
            for (uint32_t block = std::min(cap, dense_copy_groups(families[f], S_));
                 block > blocks[f]; block /= 2) {
                if (dense_copy_groups(families[f], block) < block) continue;  // not all read
                uint32_t trial[2] = {blocks[0], blocks[1]};
                trial[f] = block;
                if (fits(trial)) {
                    blocks[f] = block;
                    break;
                }
            }
    for (int f = 0; f < 2; f++)
        if (blocks[f] > 1)
            for (Layer& L : layers_) {
                Matrix& m = L.*families[f];
                m.copy_block = blocks[f];
                for (uint32_t s = 0; s < S_; s++) {
                    const uint64_t bytes = copy_bytes(m, blocks[f], s);
                    m.copies.push_back(bytes ? placement_.reserve(static_cast<int>(s), bytes)
                                             : Place{});
                }
                m.copy_table = placement_.reserve(Placement::kReplicated, 8ull * S_ * S_);
            }
}

// The row groups a max_batch_tokens-row prompt GEMM of this family (the output projection
// or q·k·v) runs in with copies in blocks of `block`: x as the prompt's GEMM reads it, the
// attention's rows in the projection's format (attn_rows), q·k·v's normalised once as BF16
// (normed_rows) or F32 to normalise.
uint32_t RuntimeImpl::dense_copy_groups(Matrix Layer::*member, uint32_t block)
{
    Matrix& first = layers_.front().*member;
    const bool wo = member == &Layer::wo;
    const jal_dtype act = lin::activation_dtype(first.dtype, numerics());
    const bool bf16_rows = act == JAL_DT_BF16 && !wo;
    const jal_dtype x_dtype = wo && lin::packed_row_bytes(act, c_.head_dim) ? act
                              : bf16_rows                                   ? act
                                                                            : JAL_DT_F32;
    first.copy_block = block;
    const uint32_t a = row_groups(first, T_, !wo && !bf16_rows, wo, x_dtype);
    first.copy_block = 0;
    return a;
}

// What slice s's copies of m's shards take with blocks of `block` slices.
uint64_t RuntimeImpl::copy_bytes(const Matrix& m, uint32_t block, uint32_t s) const
{
    uint64_t bytes = 0;
    for (uint32_t sh = s - s % block; sh < s - s % block + block; sh++)
        if (sh != s) bytes += m.shards[sh].bytes;
    return bytes;
}

// m's copy table (Matrix::copy_table): row s names slice s's copies inside its block (laid
// out shard after shard, its own skipped) and the shards themselves elsewhere.
std::vector<uint64_t> RuntimeImpl::copy_table(const Matrix& m) const
{
    std::vector<uint64_t> table(uint64_t{S_} * S_, 0);
    for (uint32_t s = 0; s < S_; s++) {
        const uint32_t b0 = s - s % m.copy_block;
        uint64_t at = m.copies[s].bytes ? va(m.copies[s]) : 0;
        for (uint32_t sh = 0; sh < S_; sh++) {
            if (!m.shards[sh].bytes) continue;
            const bool copied = sh >= b0 && sh < b0 + m.copy_block && sh != s;
            table[uint64_t{s} * S_ + sh] = copied ? at : va(m.shards[sh]);
            if (copied) at += m.shards[sh].bytes;
        }
    }
    return table;
}

// Timing only, the expert GEMMs' stand-in tables: up to E/k tokens each token count activates
// another set of experts (uniform routing), from there on all of them, so each expert matrix
// needs E/k + 1 tables. One replicated reservation at plan time: an allocation of its own
// each (a device page on every slice) would take HBM the KV caches need at high
// concurrency.
void RuntimeImpl::plan_timing_tables()
{
    if (!o_.timing_only || c_.n_expert == 0) return;
    const uint64_t slots = uint64_t{2} * layers_.size() * (timing_span() + 1);
    timing_tables_ = placement_.reserve(Placement::kReplicated, slots * 8 * 64);
    timing_table_written_.assign(slots, false);
}

// The slot of expert matrix m's table for `tokens` tokens (plan_timing_tables).
uint32_t RuntimeImpl::timing_table_slot(const Matrix& m, uint32_t tokens) const
{
    for (size_t il = 0; il < layers_.size(); il++)
        for (uint32_t w = 0; w < 2; w++)
            if (&m == (w ? &layers_[il].down : &layers_[il].gate_up))
                return static_cast<uint32_t>((il * 2 + w) * (timing_span() + 1) +
                                             std::min(tokens, timing_span()));
    throw Error(JAL_STATUS_INVALID_FIELD, "model runtime: not an expert matrix");
}

void RuntimeImpl::plan_activations()
{
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    const int R = Placement::kReplicated, I = Placement::kInterleaved;
    const uint64_t T = T_, K = c_.n_expert_used;
    a_.x = placement_.reserve(I, T * E4);
    a_.q = placement_.reserve(I, T * (qdim_ + 2ull * kvdim_) * 4);  // rows of q | k | v
    // The attention's output. Interleaved, not replicated although a decode step's output
    // projection reads it whole on every slice: a replicated write costs a copy per slice
    // (the attention's 64 heads stored 64 times over the NoC took 3.3 µs a layer at
    // concurrency 1, the reads back from other slices take ~1.2 µs), and in row groups (a
    // prompt) each slice reads only its group's rows.
    a_.attn = placement_.reserve(I, T * qdim_ * 4);
    a_.rlog = placement_.reserve(I, T * c_.n_expert * 4);
    a_.rlog_few = placement_.reserve(R, uint64_t{kFewLogitRows} * c_.n_expert * 4);
    a_.ids = placement_.reserve(R, T * K * 4);  // every slice scans all of them for its experts
    a_.wts = placement_.reserve(I, T * K * 4);
    a_.gate_up = placement_.reserve(I, T * K * c_.n_ff_exp * 2 * 4);  // rows of gate | up
    // The down projection gathers only its experts' rows of the SwiGLU output, so it is
    // interleaved: replicated, every write would go to every slice's copy.
    a_.act = placement_.reserve(I, T * K * c_.n_ff_exp * 4);
    a_.eo = placement_.reserve(I, T * K * E4);
    // The rows whose logits come back: a prompt chunk's last, a decode row a sequence (a
    // mixed step's chunk row and the other sequences' rows): never more than the slots.
    // (T rows of a vocabulary would take 1.6 GB for GPT-OSS-120B's 2 048: the HBM the dense
    // copies can use at high concurrency.)
    a_.logits = placement_.reserve(I, std::min<uint64_t>(T, o_.max_sequences) * c_.n_vocab * 4);
    a_.tokens = placement_.reserve(R, T * 4);
    a_.best = placement_.reserve(I, std::min<uint64_t>(T, o_.max_sequences) * 4);
    a_.pos = placement_.reserve(R, T * 4);
    a_.batch = placement_.reserve(R, (std::min<uint64_t>(T, o_.max_sequences) + kv_groups_) *
                                         sizeof(k::AttentionBatchEntry));
    if (split_.chips > 1) a_.x2 = placement_.reserve(I, T * E4);
    if (o_.numerics == Numerics::ggml) a_.xn = placement_.reserve(I, T * c_.n_embd * 2ull);
}

// Small tables onto the Launcher's batch: the shard tables and the KV head tables (written
// even in timing-only mode: they are addresses, not model data, and the kernels follow
// them), and timing only, the modelled expert ids.
void RuntimeImpl::upload_tables(const KvCaches& caches)
{
    for (Layer& L : layers_)
        for (auto [v, m] : {std::pair{&L.b_gate_up, &L.gate_up}, std::pair{&L.b_down, &L.down}}) {
            if (v->shards.empty()) continue;
            // Entry s + e·N·4 is expert e's row: the slice's first expert's at its shard.
            std::vector<uint64_t> table(S_, 0);
            const uint64_t per = v->bytes / m->experts;
            for (uint32_t s = 0; s < S_; s++)
                if (v->shards[s].bytes) table[s] = va(v->shards[s]) - m->first_row[s] * per;
            launch_->upload(va(v->table), table.data(), table.size() * 8);
        }
    for_each_matrix([&](Matrix& m) {
        std::vector<uint64_t> table(S_, 0);
        for (uint32_t s = 0; s < S_; s++) table[s] = m.shards[s].bytes ? va(m.shards[s]) : 0;
        launch_->upload(va(m.table), table.data(), table.size() * 8);
        if (m.copy_block) {
            const std::vector<uint64_t> copies = copy_table(m);
            launch_->upload(va(m.copy_table), copies.data(), copies.size() * 8);
        }
        for (const Matrix::Beside& bs : m.beside) {
            std::vector<uint64_t> beside;
            for (const Place& p : bs.shards) beside.push_back(p.bytes ? va(p) : 0);
            launch_->upload(va(bs.table), beside.data(), beside.size() * 8);
        }
        if (m.row_shards.empty()) return;
        for (uint32_t s = 0; s < S_; s++)
            table[s] = m.row_shards[s].bytes ? va(m.row_shards[s]) : 0;
        launch_->upload(va(m.row_table), table.data(), table.size() * 8);
    });
    for (uint32_t j = 0; j < o_.max_sequences; j++)
        for (uint32_t il = 0; il < c_.n_layer; il++) {
            std::vector<uint64_t> table;
            for (uint32_t g = 0; g < c_.n_head_kv; g++) {
                uint64_t kva = va(caches[j][il][g]);
                table.push_back(kva);
                table.push_back(kva + k::kv_head_bytes(o_.n_ctx, c_.head_dim, kv_dtype_) / 2);
            }
            launch_->upload(va(slots_[j].heads[il]), table.data(), table.size() * 8);
        }
    if (!o_.timing_only) return;
    // Timing only, the routing kernel writes nothing, so the expert GEMMs would see every
    // pair routed to expert 0. Model uniform routing instead (lin::uniform_expert).
    std::vector<int32_t> ids(size_t{T_} * c_.n_expert_used);
    for (size_t i = 0; i < ids.size(); i++) {
        const uint32_t t = static_cast<uint32_t>(i / c_.n_expert_used),
                       j = static_cast<uint32_t>(i % c_.n_expert_used);
        ids[i] = static_cast<int32_t>(lin::uniform_expert(c_.n_expert, c_.n_expert_used, t, j));
    }
    launch_->upload(va(a_.ids), ids.data(), ids.size() * 4);
}

const k::Program& RuntimeImpl::program(const std::string& key,
                                       const std::function<k::CodeObject()>& build)
{
    return cached_program(programs_, key, build, device_, context_, *queue_, all_mask_);
}

void RuntimeImpl::add(const k::Program& p, uint64_t mask, const k::Args& args, const char* what,
                      int lane)
{
    launch_->add(p, args, graph_dispatch(mask, o_.timing_only, what, lane));
}

const RuntimeImpl::Slot& RuntimeImpl::slot(int seq) const
{
    return used_slot(slots_, seq);
}

// Where slot j's KV head g lives: its slice of the slot's group, or (a layer whose keys
// split) the split's slices, a copy on each.
uint64_t RuntimeImpl::kv_head_mask(uint32_t j, uint32_t g, bool split) const
{
    if (!split) return mask_of(slot_first_slice(j) + g % kv_group_, 1);
    return mask_of(slot_first_slice(j) + g % kv_group_ * kv_splits_, kv_splits_);
}

// Slot j's first slice: its group's, of kv_groups_ / kv_splits_ spans of kv_splits_ groups.
uint32_t RuntimeImpl::slot_first_slice(uint32_t j) const
{
    return j % (kv_groups_ / kv_splits_) * kv_splits_ * kv_group_;
}

uint64_t RuntimeImpl::kv_split_mask(uint32_t j) const
{
    return mask_of(slot_first_slice(j), kv_group_ * kv_splits_);
}

// Key splits (docs/model-runtime.md, "Key splits"): where the slot groups outnumber the
// sequences, the groups no sequence would use idle through every decode row's attention,
// whose time grows with the context (each KV head's keys stream on one slice). Instead each
// slot's attention spreads over kv_splits_ groups: each KV head's keys split over that many
// slices (flash decoding), each holding a copy of the head's cache so that every read is
// local. At most kMaxKeySplits: split 0 merges the others' states one after another. Left
// to choose, only where a head's cache holds kSplitCacheBytes or more: below, the merge and
// the newest keys' append before their split attends cost back what the splits save in
// streaming (docs/model-runtime.md, "Key splits", has the measurements).
void RuntimeImpl::choose_key_splits()
{
    const uint32_t free_groups = kv_groups_ / std::clamp(o_.max_sequences, 1u, kv_groups_);
    uint32_t want = o_.attention_key_splits;
    if (!want && k::kv_head_bytes(o_.n_ctx, c_.head_dim, kv_dtype_) < kSplitCacheBytes) want = 1;
    if (!want)
        for (want = std::bit_floor(std::min(free_groups, kMaxKeySplits)); kv_groups_ % want;)
            want /= 2;
    if (want > free_groups || !std::has_single_bit(want) || kv_groups_ % want)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: {} key splits, where {} slot groups serve {} "
                                "sequences (a power of 2 up to {})",
                                want, kv_groups_, o_.max_sequences, free_groups));
    kv_splits_ = c_.n_head_kv % kv_group_ || split_.chips > 1 ? 1 : want;
    o_.attention_key_splits = kv_splits_;  // what options() reports
}

uint64_t RuntimeImpl::kv_mask(uint32_t j) const
{
    return mask_of(slot_first_slice(j), kv_group_);
}

const std::byte* RuntimeImpl::keep(std::vector<std::byte>&& out, const std::string& first,
                                   uint64_t bytes)
{
    if (out.size() != bytes)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: tensors from '{}' on have {} bytes together, "
                                "expected {}",
                                first, out.size(), bytes));
    owned_.push_back(std::move(out));
    return owned_.back().data();
}

const std::byte* RuntimeImpl::slice_rows(std::initializer_list<RowSlice> slices, uint64_t bytes)
{
    if (!file_) return nullptr;
    std::vector<std::byte> out;
    out.reserve(bytes);
    for (const RowSlice& sl : slices) {
        const GgufTensor& t = file_->tensor(sl.name);
        const size_t row = t.data.size() / sl.total;
        if (row * sl.total != t.data.size() || sl.first + sl.count > sl.total)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("model runtime: '{}' does not hold rows {}..{} of {}", sl.name,
                                    sl.first, sl.first + sl.count, sl.total));
        out.insert(out.end(), t.data.begin() + sl.first * row,
                   t.data.begin() + (sl.first + sl.count) * row);
    }
    return keep(std::move(out), slices.begin()->name, bytes);
}

const std::byte* RuntimeImpl::slice_columns(const std::string& name, uint32_t rows, uint32_t cols,
                                            uint32_t first, uint32_t count, jal_dtype dtype)
{
    const uint64_t row = lin::packed_row_bytes(dtype, cols),
                   part = lin::packed_row_bytes(dtype, count);
    const size_t block = jal::numerics::element_block(dtype);
    if (!part || first % block || count % block || first + count > cols)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: '{}' (type {}) does not split into columns of {} "
                                "(whole blocks a chip)",
                                name, int(dtype), count));
    if (!file_) return nullptr;
    const GgufTensor& t = file_->tensor(name);
    if (t.data.size() != row * rows)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: tensor '{}' has {} bytes, expected {}", name,
                                t.data.size(), row * rows));
    std::vector<std::byte> out;
    out.reserve(part * rows);
    const uint64_t at = lin::packed_row_bytes(dtype, first);
    for (uint32_t r = 0; r < rows; r++)
        out.insert(out.end(), t.data.begin() + r * row + at, t.data.begin() + r * row + at + part);
    return keep(std::move(out), name, part * rows);
}

const std::byte* RuntimeImpl::zeros(const std::string& name, uint64_t bytes)
{
    return file_ ? keep(std::vector<std::byte>(bytes), name, bytes) : nullptr;
}

const std::byte* RuntimeImpl::local_experts(const std::string& name, uint64_t bytes)
{
    if (!file_) return nullptr;
    const GgufTensor& t = file_->tensor(name);
    if (t.data.size() != bytes / experts_ * c_.n_expert)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: tensor '{}' has {} bytes, expected {}", name,
                                t.data.size(), bytes / experts_ * c_.n_expert));
    return t.data.data() + bytes / experts_ * expert0_;
}

const std::byte* RuntimeImpl::interleave_experts(std::initializer_list<std::string> names,
                                                 uint64_t bytes)
{
    if (!file_) return nullptr;
    const uint32_t E = c_.n_expert;
    std::vector<std::byte> out;
    out.reserve(bytes);
    // Striped over chips, an expert's rows [ff0_, ff0_ + n_ff_exp) of the model's n_ff_exp.
    const uint32_t F = model_.n_ff_exp;
    for (uint32_t e = expert0_; e < expert0_ + experts_; e++)
        for (const std::string& nm : names) {
            const GgufTensor& t = file_->tensor(nm);
            const size_t part = t.data.size() / E, row = part / F;
            if (part * E != t.data.size() || row * F != part)
                throw Error(JAL_STATUS_INVALID_FIELD,
                            fmt::format("model runtime: '{}' does not split into {} experts of "
                                        "{} rows",
                                        nm, E, F));
            const auto first = t.data.begin() + e * part + ff0_ * row;
            out.insert(out.end(), first, first + uint64_t{c_.n_ff_exp} * row);
        }
    return keep(std::move(out), *names.begin(), bytes);
}

void RuntimeImpl::plan_vec(Vec& v, const std::byte* data, uint64_t bytes)
{
    v.bytes = bytes;
    v.data = data;
    v.place = placement_.reserve(Placement::kReplicated, bytes);
    vec_uploads_.push_back({v.place, &v});
}

void RuntimeImpl::plan_vec(Vec& v, const GgufTensor* t, uint64_t bytes)
{
    if (t && t->data.size() != bytes)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: tensor '{}' has {} bytes, expected {} (F32)",
                                t->name, t->data.size(), bytes));
    v.bytes = bytes;
    v.data = t ? t->data.data() : nullptr;
    v.place = placement_.reserve(Placement::kReplicated, bytes);
    vec_uploads_.push_back({v.place, &v});
}

Matrix RuntimeImpl::matrix(const char* name, uint32_t n, uint32_t kdim, uint32_t experts,
                           jal_dtype timing_dtype)
{
    Matrix m;
    const GgufTensor* t = file_ ? &file_->tensor(name) : nullptr;
    plan_matrix(m, t, n, kdim, experts, t ? detail::chip_dtype(t->type, t->name) : timing_dtype);
    return m;
}

void RuntimeImpl::plan_matrix(Matrix& m, const GgufTensor* t, uint32_t n, uint32_t kdim,
                              uint32_t experts, jal_dtype dtype)
{
    const uint64_t total = lin::packed_row_bytes(dtype, kdim) * n * std::max<uint32_t>(experts, 1);
    if (t && t->data.size() != total)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: tensor '{}' has {} bytes, expected {}", t->name,
                                t->data.size(), total));
    plan_matrix(m, t ? t->data.data() : nullptr, total, n, kdim, experts, dtype);
}

void RuntimeImpl::plan_matrix(Matrix& m, const std::byte* data, uint64_t data_bytes, uint32_t n,
                              uint32_t kdim, uint32_t experts, jal_dtype dtype)
{
    (void)data_bytes;  // checked by the callers
    m.n = n, m.kdim = kdim, m.experts = experts, m.dtype = dtype;
    m.row_bytes = lin::packed_row_bytes(dtype, kdim);
    m.k_major = o_.k_major_weights && experts == 0 &&
                (dtype == JAL_DT_F32 || dtype == JAL_DT_BF16 || dtype == JAL_DT_F16);
    m.data = data;
    // The kernels' split: rows (GEMM) or experts (expert GEMM) in contiguous chunks.
    const uint32_t units = experts ? experts : n;
    const uint64_t unit_bytes = experts ? m.row_bytes * n : m.row_bytes;
    for (uint32_t s = 0; s < S_; s++) {
        lin::Range r = lin::slice_range(units, S_, s);
        m.first_row.push_back(r.begin);
        m.shards.push_back(r.size() ? placement_.reserve(static_cast<int>(s), r.size() * unit_bytes)
                                    : Place{});
    }
    m.table = placement_.reserve(Placement::kReplicated, 8ull * S_);
}

void RuntimeImpl::upload_weights()
{
    // Every piece goes host → pinned staging buffer → H2D copy into its arena. Two halves of
    // the staging buffer alternate, so filling one overlaps the copy of the other.
    std::vector<detail::UploadPiece> pieces;
    for (auto& [place, v] : vec_uploads_)
        if (v->data) pieces.push_back({va(place), v->data, v->bytes});
    for (Layer& L : layers_)
        for (auto [v, m] : {std::pair{&L.b_gate_up, &L.gate_up}, std::pair{&L.b_down, &L.down}})
            for (uint32_t s = 0; s < v->shards.size() && v->data; s++)
                if (v->shards[s].bytes)
                    pieces.push_back({va(v->shards[s]),
                                      v->data + m->first_row[s] * (v->bytes / m->experts),
                                      v->shards[s].bytes});
    for_each_matrix([&](Matrix& m) {
        const uint64_t unit = m.experts ? m.row_bytes * m.n : m.row_bytes;
        // A dense shard: `bytes` of rows from `first`, K-major where the matrix is.
        auto shard = [&](uint64_t at, uint64_t first, uint64_t bytes) {
            detail::UploadPiece p{at, m.data + first * unit, bytes};
            if (m.k_major)
                p.kmajor_rows = static_cast<uint32_t>(bytes / m.row_bytes), p.kmajor_k = m.kdim,
                p.kmajor_dtype = m.dtype;
            pieces.push_back(p);
        };
        for (uint32_t s = 0; s < S_; s++)
            if (m.shards[s].bytes && m.data)
                shard(va(m.shards[s]), m.first_row[s], m.shards[s].bytes);
        // The copies: slice s's of the shards of its block, shard after shard.
        for (uint32_t s = 0; s < m.copies.size() && m.data; s++) {
            uint64_t at = m.copies[s].bytes ? va(m.copies[s]) : 0;
            for (uint32_t sh = s - s % m.copy_block; sh < s - s % m.copy_block + m.copy_block; sh++)
                if (sh != s && m.shards[sh].bytes) {
                    shard(at, m.first_row[sh], m.shards[sh].bytes);
                    at += m.shards[sh].bytes;
                }
        }
        for (const Matrix::Beside& bs : m.beside)
            for (uint32_t i = 0; i < bs.shards.size() && m.data; i++)
                if (bs.shards[i].bytes)
                    shard(va(bs.shards[i]),
                          lin::slice_range(m.n, static_cast<uint32_t>(bs.shards.size()), i).begin,
                          bs.shards[i].bytes);
        // The rows layout: slice s's rows of expert e after those of expert e − 1.
        // In halves (gate|up): its gate rows r/2, then the up rows n/2 + r/2.
        for (uint32_t s = 0; s < m.row_shards.size() && m.data; s++) {
            const lin::Range r = lin::slice_range(m.n, S_, s);
            const uint32_t parts = m.halves ? 2 : 1;
            const uint64_t part = r.size() / parts * m.row_bytes;
            for (uint32_t e = 0; e < m.experts && r.size(); e++)
                for (uint32_t h = 0; h < parts; h++) {
                    const uint64_t row = m.halves ? h * (m.n / 2) + r.begin / 2 : r.begin;
                    pieces.push_back(
                        {va(m.row_shards[s]) + uint64_t{e} * r.size() * m.row_bytes + h * part,
                         m.data + (uint64_t{e} * m.n + row) * m.row_bytes, part});
                }
        }
    });
    detail::upload_pieces(device_, *queue_, pieces, o_.progress);
}

int RuntimeImpl::create_sequence()
{
    return claim_slot(slots_);
}

void RuntimeImpl::free_sequence(int seq)
{
    slot(seq).used = false;
}

uint32_t RuntimeImpl::row_groups(const Matrix& m, uint32_t rows, bool norm, bool accumulate,
                                 jal_dtype x_dtype) const
{
    auto m_chunk = [&](uint32_t groups) {
        lin::GemmConfig g;
        g.m = rows, g.n = m.n, g.k = m.kdim, g.weight = m.dtype, g.bias = true;
        g.numerics = o_.numerics == Numerics::ggml ? lin::Numerics::ggml : lin::Numerics::native;
        g.rms_norm = norm, g.accumulate = accumulate, g.row_groups = groups;
        g.x_dtype = x_dtype, g.w_kmajor = m.k_major;
        return lin::plan_gemm(g).m_chunk;
    };
    // Each slice's shard is ⌈N/S⌉ rows.
    return detail::gemm_row_groups(rows, S_, lin::packed_row_bytes(x_dtype, m.kdim),
                                   (m.n + S_ - 1) / S_ * m.row_bytes, m_chunk, m.copy_block);
}

lin::GemmConfig RuntimeImpl::gemm_config(const Matrix& m, uint32_t rows, bool bias, bool norm,
                                         bool accumulate, jal_dtype x_dtype) const
{
    lin::GemmConfig g;
    g.m = rows, g.n = m.n, g.k = m.kdim, g.weight = m.dtype, g.bias = bias;
    g.numerics = o_.numerics == Numerics::ggml ? lin::Numerics::ggml : lin::Numerics::native;
    g.rms_norm = norm, g.norm_eps = c_.rms_eps, g.accumulate = accumulate;
    g.x_dtype = x_dtype, g.w_kmajor = m.k_major;
    g.row_groups = row_groups(m, rows, g.rms_norm, g.accumulate, x_dtype);
    return g;
}

void RuntimeImpl::gemm(const Matrix& m, uint32_t rows, uint64_t x, uint64_t x_stride,
                       const Vec* bias, uint64_t y, uint64_t y_stride, const char* what,
                       const Vec* norm, bool accumulate, jal_dtype x_dtype, int beside,
                       GemmMessages msgs)
{
    lin::GemmConfig g = gemm_config(m, rows, bias != nullptr, norm != nullptr, accumulate, x_dtype);
    // The copies (plan_dense_copies) of the column group's shards in the slice's block.
    g.slice_tables = g.row_groups > 1 && m.copy_block;
    // Beside the attention (beside_group): on the slices outside the group, from their copy.
    g.w_before_acquire = beside >= 0;
    // Messages: residual_messages, router_messages, projection_messages.
    g.recv_x = msgs.recv_x, g.send_y = msgs.send_y, g.store_y = msgs.store_y;
    g.x_senders = msgs.recv_x && msgs.x_senders != 0;
    g.forward_x = msgs.recv_x && msgs.forward_x;
    const std::string key = fmt::format(
        "gemm m{} n{} k{} w{} b{} n{} norm{} acc{} g{} x{} st{} wb{} rx{} tx{} sy{} xm{} fx{} km{}",
        g.m, g.n, g.k, int(g.weight), g.bias, int(g.numerics), g.rms_norm, g.accumulate,
        g.row_groups, int(x_dtype), g.slice_tables, g.w_before_acquire, g.recv_x, g.send_y,
        g.store_y, g.x_senders, g.forward_x, g.w_kmajor);
    const k::Program& code = program(key, [&] { return lin::build_gemm(g); });
    std::vector<uint64_t> args = {x, x_stride};
    if (norm) args.push_back(va(norm->place));
    const Place& table = beside >= 0      ? m.beside[beside].table
                         : g.slice_tables ? m.copy_table
                                          : m.table;
    // w_stride: K-major, the element size (GemmConfig::w_kmajor).
    args.insert(args.end(),
                {va(table), m.k_major ? lin::packed_row_bytes(m.dtype, 1) : m.row_bytes});
    if (bias) args.push_back(va(bias->place));
    args.push_back(y);
    args.push_back(y_stride);
    if (g.x_senders) args.push_back(msgs.x_senders);
    add(code, beside >= 0 ? all_mask_ & ~m.beside[beside].leaves_out : all_mask_, k::Args(args),
        what);
}

bool RuntimeImpl::split_by_rows(const Matrix& m, uint32_t tokens, bool per_pair) const
{
    return splits_by_rows(m, tokens, c_.n_expert_used, S_, per_pair);
}

bool RuntimeImpl::swiglu_in_gate_up(const Matrix& m, uint32_t tokens) const
{
    if (split_by_rows(m, tokens, false)) return m.halves;
    lin::ExpertGemmConfig g;
    g.tokens = tokens, g.k = c_.n_expert_used, g.experts = m.experts;
    return !o_.timing_only || lin::uniform_active(g) == g.experts;
}

jal_dtype RuntimeImpl::act_handover(const Layer& L, uint32_t tokens) const
{
    if (!swiglu_in_gate_up(L.gate_up, tokens) || split_by_rows(L.gate_up, tokens, false) ||
        split_by_rows(L.down, tokens, true))
        return JAL_DT_F32;
    return lin::activation_dtype(
        L.down.dtype, o_.numerics == Numerics::ggml ? lin::Numerics::ggml : lin::Numerics::native);
}

lin::ExpertGemmConfig RuntimeImpl::expert_config(const Matrix& m, uint32_t tokens, bool per_pair,
                                                 bool bias_shards, bool norm, bool swiglu,
                                                 jal_dtype x_dtype, jal_dtype y_dtype,
                                                 const ExpertFusions& fused) const
{
    lin::ExpertGemmConfig g;
    g.tokens = tokens, g.k = c_.n_expert_used, g.experts = m.experts, g.n = m.n, g.kdim = m.kdim;
    g.weight = m.dtype, g.bias = true, g.input_per_pair = per_pair;
    g.bias_shards = bias_shards;  // then never split by rows (plan_expert_biases)
    g.numerics = numerics();
    g.split =
        split_by_rows(m, tokens, per_pair) ? lin::ExpertSplit::rows : lin::ExpertSplit::experts;
    g.rms_norm = norm, g.norm_eps = c_.rms_eps;
    const k::SwigluConfig glu;  // GPT-OSS's α and limit, as the separate kernel's
    g.swiglu = swiglu, g.swiglu_alpha = glu.alpha, g.swiglu_limit = glu.limit;
    g.x_dtype = x_dtype, g.y_dtype = y_dtype;
    g.swiglu_input = fused.swiglu_input, g.route = fused.route, g.combine = fused.combine;
    g.send_output = fused.send_output, g.recv_input = fused.recv_input;
    g.send_residual = fused.send_residual;
    g.recv_logits = fused.recv_logits, g.recv_x = fused.recv_x;
    if (fused.prefetch)
        g.prefetch_n = fused.prefetch->n, g.prefetch_kdim = fused.prefetch->kdim,
        g.prefetch_weight = fused.prefetch->dtype;
    g.w0_prefetched = fused.w0_prefetched;
    g.x_from_self = fused.recv_x && fused.x_from_self;
    g.send_x_columns = fused.send_x_columns, g.recv_x_columns = fused.recv_x_columns;
    return g;
}

bool RuntimeImpl::gate_up_token_rows(uint32_t il, uint32_t T) const
{
    const Layer& L = layers_[il];
    return lin::expert_gemm_token_rows(expert_config(L.gate_up, T, false, false, true, true,
                                                     JAL_DT_F32, act_handover(L, T),
                                                     {.route = true, .send_output = true}));
}

bool RuntimeImpl::down_prefetch(uint32_t il, uint32_t T) const
{
    const Layer& L = layers_[il];
    const bool route = gate_up_routes(il, T), glu = swiglu_in_gate_up(L.gate_up, T);
    if (!o_.down_prefetch || !expert_messages(il, T, route, glu)) return false;
    // Both kernels must keep their own L1 below the tile (they throw INVALID_FIELD
    // otherwise): built once a configuration to know. Receiving the logits or x changes
    // neither kernel's L1.
    const lin::ExpertGemmConfig gu =
        expert_config(L.gate_up, T, false, false, true, true, JAL_DT_F32, act_handover(L, T),
                      {.route = true, .send_output = true, .prefetch = &L.down});
    const lin::ExpertGemmConfig dn =
        expert_config(L.down, T, true, false, false, false, JAL_DT_F32, JAL_DT_F32,
                      {.combine = true, .recv_input = true, .w0_prefetched = true});
    const std::string key = lin::expert_gemm_name(gu) + "|" + lin::expert_gemm_name(dn);
    auto it = prefetch_fits_.find(key);
    if (it == prefetch_fits_.end()) {
        bool fits = true;
        try {
            lin::build_expert_gemm(gu);
            lin::build_expert_gemm(dn);
        } catch (const Error&) {
            fits = false;
        }
        it = prefetch_fits_.emplace(key, fits).first;
    }
    return it->second;
}

bool RuntimeImpl::router_messages(uint32_t il, uint32_t T) const
{
    if (!o_.router_messages || split_.chips != 1) return false;
    const Layer& L = layers_[il];
    const bool route = gate_up_routes(il, T);
    if (!expert_messages(il, T, route, swiglu_in_gate_up(L.gate_up, T))) return false;
    const uint32_t n = static_cast<uint32_t>(std::popcount(all_mask_));
    if (!every_slice_has(L.router.n, n)) return false;
    lin::GemmConfig g = gemm_config(L.router, T, true, true, false, JAL_DT_F32);
    const lin::GemmPlan p = lin::plan_gemm(g);
    return g.row_groups == 1 && p.m_chunk >= T && (L.router.n + n - 1) / n <= p.tile_n;
}

uint64_t RuntimeImpl::projection_messages(uint32_t il, uint32_t T,
                                          const std::vector<Segment>& segs) const
{
    if (!router_messages(il, T)) return 0;
    const Layer& L = layers_[il];
    const int grp = beside_group(il, T, segs);
    const uint64_t from = grp >= 0 ? all_mask_ & ~L.wo.beside[grp].leaves_out : all_mask_;
    const uint32_t n = static_cast<uint32_t>(std::popcount(from));
    if (!every_slice_has(L.wo.n, n)) return 0;
    lin::GemmConfig o = gemm_config(L.wo, T, true, false, true, attn_dtype(il, T));
    o.w_before_acquire = grp >= 0;
    const lin::GemmPlan po = lin::plan_gemm(o);
    if (o.row_groups != 1 || po.m_chunk < T || (L.wo.n + n - 1) / n > po.tile_n) return 0;
    lin::GemmConfig r = gemm_config(L.router, T, true, true, false, JAL_DT_F32);
    const lin::GemmPlan pr = lin::plan_gemm(r);  // x received: one chunk, one staging block
    if (pr.m_chunk < T || (pr.convert_x && pr.stage_rows < T)) return 0;
    return gate_up_token_rows(il, T) ? from : 0;
}

void RuntimeImpl::expert_gemm(const Matrix& m, uint32_t tokens, bool per_pair, uint64_t x,
                              uint64_t x_stride, const Vec& bias, uint64_t y, uint64_t y_stride,
                              const char* what, const Vec* norm, bool swiglu, jal_dtype x_dtype,
                              jal_dtype y_dtype, const ExpertFusions& fused)
{
    const bool by_rows = split_by_rows(m, tokens, per_pair);
    const lin::ExpertGemmConfig g = expert_config(m, tokens, per_pair, !bias.shards.empty(),
                                                  norm != nullptr, swiglu, x_dtype, y_dtype, fused);
    const std::string key =
        fmt::format("egemm t{} k{} e{} n{} k{} w{} p{} n{} r{} norm{} glu{}", g.tokens, g.k,
                    g.experts, g.n, g.kdim, int(g.weight), per_pair, int(g.numerics), by_rows,
                    g.rms_norm, g.swiglu) +
        fmt::format(" x{} y{} si{} rt{} cb{} bs{} tx{} rx{} sr{} rl{} rr{}", int(g.x_dtype),
                    int(g.y_dtype), g.swiglu_input, g.route, g.combine, g.bias_shards,
                    g.send_output, g.recv_input, g.send_residual, g.recv_logits, g.recv_x) +
        fmt::format(" pf{} w0{} xs{} sxc{} rxc{}", g.prefetch_n, g.w0_prefetched, g.x_from_self,
                    g.send_x_columns, g.recv_x_columns);
    // Timing only, a kernel's reads of the expert ids see nothing. Split by rows, or split by
    // experts when uniform routing makes every expert active (a prompt), the kernel itself
    // spreads the pairs evenly over the active experts and is charged what a real run with
    // those ids costs (linear_expert_timing_test); otherwise split by experts runs as a
    // plain GEMM of the same traffic (timing_expert_gemm).
    if (o_.timing_only && !by_rows && lin::uniform_active(g) < g.experts) {
        timing_expert_gemm(m, tokens, x, x_stride, y, what, norm);
        return;
    }
    const k::Program& code = program(key, [&] { return lin::build_expert_gemm(g); });
    // What comes or goes as messages is not an argument (expert_gemm_args): receiving its
    // routing and rows, the kernel takes no x, ids, weights or y.
    const bool io = !fused.recv_input;
    std::vector<uint64_t> args;
    if (io && !fused.recv_x) args.insert(args.end(), {x, x_stride});
    if (norm) args.push_back(va(norm->place));
    if (io) args.push_back(va(a_.ids));
    if (fused.route && !fused.recv_logits)
        args.insert(args.end(), {router_logits(tokens), c_.n_expert * 4ull});
    if (fused.route) args.push_back(va(a_.wts));
    args.insert(args.end(), {va(by_rows ? m.row_table : m.table), m.row_bytes, m.row_bytes * m.n,
                             va(g.bias_shards ? bias.table : bias.place)});
    if (io && !fused.send_output) args.insert(args.end(), {y, y_stride});
    if (fused.combine) args.insert(args.end(), {va(a_.x), c_.n_embd * 4ull});
    if (fused.combine && io) args.push_back(va(a_.wts));  // received: in L1
    if (fused.prefetch) args.push_back(va(fused.prefetch->row_table));
    add(code, all_mask_, k::Args(args), what);
}

void RuntimeImpl::timing_expert_gemm(const Matrix& m, uint32_t tokens, uint64_t x,
                                     uint64_t x_stride, uint64_t y, const char* what,
                                     const Vec* norm)
{
    // Timing only, the expert GEMM's scalar reads of the expert ids see no data, so its
    // time would be that of every pair routed to one expert. Instead the same traffic and
    // work under uniform routing (the spread the ids buffer models) runs as a plain GEMM:
    // the A = min(E, tokens·k) active experts on the slices that hold them, each of those
    // slices streaming its active experts' rows (a per-slice shard table) against
    // ceil(tokens·k / A) input rows.
    const uint32_t E = m.experts, K = c_.n_expert_used;
    const uint32_t span = timing_span();
    std::vector<uint32_t> per_slice(S_, 0);
    std::vector<uint64_t> first(S_, 0);
    std::vector<bool> active(E, false);
    for (uint32_t t = 0; t < std::min(tokens, span); t++)
        for (uint32_t j = 0; j < K; j++) active[lin::uniform_expert(E, K, t, j)] = true;
    uint32_t A = 0;
    for (uint32_t e = 0; e < E; e++) {
        if (!active[e]) continue;
        A++;
        for (uint32_t s = 0; s < S_; s++) {
            lin::Range r = lin::slice_range(E, S_, s);
            if (e >= r.begin && e < r.end) {
                if (!per_slice[s]++)
                    first[s] = va(m.shards[s]) + uint64_t{e - r.begin} * m.row_bytes * m.n;
                break;
            }
        }
    }
    uint32_t busy = 0, most = 0;
    std::vector<uint64_t> table;
    uint64_t mask = 0;
    for (uint32_t s = 0; s < S_; s++)
        if (per_slice[s]) {
            busy++, most = std::max(most, per_slice[s]);
            table.push_back(first[s]);
            mask |= 1ull << s;
        }
    const uint32_t rows = std::max<uint32_t>(1, (tokens * K + A - 1) / A);
    const uint32_t slot = timing_table_slot(m, tokens);
    const uint64_t table_va = va(timing_tables_) + uint64_t{slot} * 8 * 64;
    if (!timing_table_written_[slot]) {
        launch_->upload(table_va, table.data(), table.size() * 8);
        timing_table_written_[slot] = true;
    }
    lin::GemmConfig g;
    g.m = rows, g.n = busy * most * m.n, g.k = m.kdim, g.weight = m.dtype;
    // y rows of N: M·N ≤ tokens·k·n F32, inside the buffer the real kernel writes.
    timing_gemm(g, mask, x, x_stride, table_va, m.row_bytes, y, what, norm);
}

void RuntimeImpl::timing_gemm(lin::GemmConfig g, uint64_t mask, uint64_t x, uint64_t x_stride,
                              uint64_t table, uint64_t row_bytes, uint64_t y, const char* what,
                              const Vec* norm)
{
    g.bias = false;
    g.numerics = o_.numerics == Numerics::ggml ? lin::Numerics::ggml : lin::Numerics::native;
    g.rms_norm = norm != nullptr, g.norm_eps = c_.rms_eps;
    const std::string key = fmt::format("gemm m{} n{} k{} w{} b0 n{} norm{}", g.m, g.n, g.k,
                                        int(g.weight), int(g.numerics), g.rms_norm);
    const k::Program& code = program(key, [&] { return lin::build_gemm(g); });
    std::vector<uint64_t> args = {x, x_stride};
    if (norm) args.push_back(va(norm->place));
    args.insert(args.end(), {table, row_bytes, y, uint64_t{g.n} * 4});
    add(code, mask, k::Args(args), what);
}

// The graph's small kernels for T rows (T·k expert rows), built the first time.
RuntimeImpl::GraphKernels RuntimeImpl::graph_kernels(uint32_t T)
{
    const uint32_t K = c_.n_expert_used;
    // Row blocks no larger than the rows there are: a decode step's single row is not
    // loaded as a block of 64.
    const uint32_t br = std::clamp<uint32_t>(T, 1, 64), brk = std::clamp<uint32_t>(T * K, 1, 64);
    GraphKernels g;
    // q's heads and k's heads lie side by side in each row (q | k | v), rotated by the same
    // tables at the same position: one dispatch rotates them all.
    const uint32_t qk_heads = c_.n_head + c_.n_head_kv;
    g.rope = &program(fmt::format("rope h{} d{} b{}", qk_heads, c_.head_dim, br), [&] {
        k::RopeConfig r;
        r.n_head = qk_heads, r.head_dim = c_.head_dim, r.block_rows = br;
        return k::build_rope_neox(r);
    });
    g.append = &program(fmt::format("kv_append g{} d{} c{} t{}", c_.n_head_kv, c_.head_dim,
                                    o_.n_ctx, int(kv_dtype_)),
                        [&] {
                            k::KvAppendConfig a;
                            a.n_head_kv = c_.n_head_kv, a.head_dim = c_.head_dim,
                            a.n_ctx = o_.n_ctx;
                            a.kv_dtype = kv_dtype_;
                            return k::build_kv_append(a);
                        });
    const bool split = split_.chips > 1;
    const std::string local = split ? fmt::format(" local{}+{}", expert0_, experts_) : "";
    g.route = &program(fmt::format("route e{} k{} b{}{}", c_.n_expert, K, br, local), [&] {
        k::MoeRoutingConfig r;
        r.n_expert = c_.n_expert, r.k = K, r.block_rows = br;
        if (split) r.expert_base = expert0_, r.local_experts = experts_;
        return k::build_moe_routing(r);
    });
    g.swiglu = &program(fmt::format("swiglu f{} b{}", c_.n_ff_exp, brk), [&] {
        k::SwigluConfig w;
        w.cols = c_.n_ff_exp, w.block_rows = brk;
        return k::build_swiglu_oai(w);
    });
    // Split over chips, rank 0 adds its experts' sum to the residual, the others write theirs.
    const bool residual = split_.rank == 0;
    g.combine = &program(
        fmt::format("combine{} c{} k{} b{}", residual ? "+res" : "", c_.n_embd, K, br), [&] {
            k::MoeCombineConfig m;
            m.cols = c_.n_embd, m.k = K, m.block_rows = br;
            m.residual = residual;
            return k::build_moe_combine(m);
        });
    g.combine_norm = nullptr;
    if (combine_normalises(0, T))
        g.combine_norm = &program(fmt::format("combine+norm c{} k{} b{}", c_.n_embd, K, br), [&] {
            k::MoeCombineConfig m;
            m.cols = c_.n_embd, m.k = K, m.block_rows = br;
            m.residual = true;
            m.norm = true, m.norm_eps = c_.rms_eps;
            m.norm_mode = lin::activation_cvt_mode(numerics());
            return k::build_moe_combine(m);
        });
    return g;
}

const k::Program& RuntimeImpl::attention_kernel(uint32_t window, bool append_kv, bool rope,
                                                uint32_t q_block, jal_dtype out, bool batch,
                                                uint32_t key_splits)
{
    return program(fmt::format("attn h{} g{} d{} c{} w{} app{} rope{} q{} o{} t{} b{} s{}",
                               c_.n_head, c_.n_head_kv, c_.head_dim, o_.n_ctx, window, append_kv,
                               rope, q_block, int(out), int(kv_dtype_), batch, key_splits),
                   [&] {
                       k::AttentionConfig a;
                       a.n_head = c_.n_head, a.n_head_kv = c_.n_head_kv, a.head_dim = c_.head_dim;
                       a.n_ctx = o_.n_ctx, a.window = window, a.sinks = true;
                       a.append_kv = append_kv, a.rope = rope;
                       a.q_block = q_block, a.kv_dtype = kv_dtype_;
                       a.out_dtype = out, a.out_cvt = lin::activation_cvt_mode(numerics());
                       a.batch = batch, a.key_splits = key_splits;
                       return k::build_attention(a);
                   });
}

// A prompt has many query blocks per KV head: they run on every slice (the kernel keeps
// head g on slices ≡ g mod n_head_kv, one of which holds its cache; the others read it
// remotely), a decode row on the slot's group alone (in lanes when there are several). A
// prompt chunk in a mixed step runs wide before the decode rows' lanes.
bool RuntimeImpl::attention_wide(const Segment& sg) const
{
    return sg.rows > 1 && S_ % c_.n_head_kv == 0;
}

// A segment's attention appends its keys and values itself (on the slot's group, where
// every item of a head runs on the slice holding its cache), or (a prompt spread over every
// slice) a kv_append dispatch does.
bool RuntimeImpl::attention_appends(const Segment& sg) const
{
    return !attention_wide(sg) && c_.n_head_kv % kv_group_ == 0;
}

// A slot group with several decode rows (one row a sequence, appended by the attention)
// attends for all of them in one batched call (AttentionConfig::batch): one stage of its
// lane instead of one a sequence, each paying the stage's drain, barrier and argument
// loads. The lists name each row's slot by its first layer's head table
// (head_table_bytes() apart by layer), so one upload serves every layer of the pass.
void RuntimeImpl::plan_attention_batches(const std::vector<Segment>& segs)
{
    batch_at_.assign(kv_groups_, -1);
    if (!o_.attention_batches) return;
    std::vector<std::vector<k::AttentionBatchEntry>> lists(kv_groups_);
    for (const Segment& sg : segs)
        if (batchable(sg)) {
            const uint32_t j = static_cast<uint32_t>(sg.seq);
            lists[j % kv_groups_].push_back({sg.row0, sg.pos0, va(slots_[j].heads[0])});
        }
    std::vector<k::AttentionBatchEntry> all;
    for (uint32_t grp = 0; grp < kv_groups_; grp++) {
        if (lists[grp].size() < 2) continue;
        batch_at_[grp] = static_cast<int64_t>(all.size() * sizeof(k::AttentionBatchEntry));
        all.insert(all.end(), lists[grp].begin(), lists[grp].end());
        all.push_back({});  // the end of the group's list
    }
    if (!all.empty())
        launch_->upload(va(a_.batch), all.data(), all.size() * sizeof(k::AttentionBatchEntry));
}

// A decode row whose attention appends it (on its slot's group): what a batch can hold.
bool RuntimeImpl::batchable(const Segment& sg) const
{
    return sg.rows == 1 && attention_appends(sg) && kv_splits_ == 1;
}

bool RuntimeImpl::attention_batched(const Segment& sg) const
{
    return batchable(sg) && batch_at_[static_cast<uint32_t>(sg.seq) % kv_groups_] >= 0;
}

// Layer il's KV append and attention, one pair a segment (or a batched call a slot group).
void RuntimeImpl::add_attention(uint32_t il, const std::vector<Segment>& segs,
                                const GraphKernels& g, bool rope)
{
    const uint64_t Q4 = uint64_t{qdim_} * 4, KV4 = uint64_t{kvdim_} * 4;
    const uint64_t QKV4 = Q4 + 2 * KV4;  // one row of the fused q | k | v output
    const uint32_t T = segs.back().row0 + segs.back().rows;
    const uint64_t q = va(a_.q), kk = q + Q4, v = q + Q4 + KV4, at = va(a_.attn);
    const jal_dtype out = attn_dtype(il, T);
    const uint64_t O = lin::packed_row_bytes(out, qdim_);  // a row of the output
    const Layer& Ly = layers_[il];
    const uint32_t window = c_.layer_uses_swa(il) ? c_.sliding_window : 0;
    // Each sequence's attention runs on its slot's slice group; with several groups and
    // sequences the groups' dispatches go to lane queues and run side by side.
    size_t narrow = 0;
    for (const Segment& sg : segs) narrow += attention_wide(sg) ? 0 : 1;
    const bool lanes = kv_groups_ > 1 && narrow > 1;
    bool forked = false;
    std::vector<bool> batch_added(kv_groups_, false);
    for (const Segment& sg : segs) {
        const uint32_t j = static_cast<uint32_t>(sg.seq);
        const uint64_t heads = va(slots_[j].heads[il]);
        const bool wide = attention_wide(sg);
        if (lanes && !wide && !forked) {  // the wide ones (a prompt chunk) come first
            launch_->fork();
            forked = true;
        }
        const int lane = lanes && !wide ? static_cast<int>(j % kv_groups_ % lanes_) : -1;
        if (attention_batched(sg)) {  // the group's one call, where its first row comes
            if (batch_added[j % kv_groups_]) continue;
            batch_added[j % kv_groups_] = true;
            std::vector<uint64_t> args = {q,
                                          QKV4,
                                          at,
                                          O,
                                          va(a_.batch) +
                                              static_cast<uint64_t>(batch_at_[j % kv_groups_]),
                                          il * head_table_bytes(),
                                          kk,
                                          v,
                                          va(Ly.sinks.place)};
            if (rope) args.insert(args.end(), {va(rope_cos_.place), va(rope_sin_.place)});
            add(attention_kernel(window, true, rope, 0, out, true), kv_mask(j), k::Args(args),
                window ? "attention (sliding window)" : "attention", lane);
            continue;
        }
        const bool fused = attention_appends(sg);
        // A prompt's append runs on every slice too (each a share of a head's rows).
        if (!fused)
            add(*g.append, wide ? all_mask_ : kv_mask(j),
                {kk + sg.row0 * QKV4, QKV4, v + sg.row0 * QKV4, QKV4, sg.rows, sg.pos0, heads},
                "kv_append", lane);
        std::vector<uint64_t> args = {
            q + sg.row0 * QKV4, QKV4, at + sg.row0 * O, O, sg.rows, sg.pos0, heads,
            va(Ly.sinks.place)};
        if (fused) args.insert(args.end(), {kk + sg.row0 * QKV4, v + sg.row0 * QKV4});
        if (rope) args.insert(args.end(), {va(rope_cos_.place), va(rope_sin_.place)});
        // A prompt's items hold kPromptQueryBlock queries: every key and value an item loads
        // then serves that many query rows of each head.
        const uint32_t q_block = wide ? kPromptQueryBlock : 0;
        // A decode row's keys split over the slot's groups (a prompt's rows are many blocks).
        const uint32_t splits = wide || sg.rows > 1 ? 1 : layer_splits(il);
        add(attention_kernel(window, fused, rope, q_block, out, false, splits),
            wide         ? all_mask_
            : splits > 1 ? kv_split_mask(j)
                         : kv_mask(j),
            k::Args(args), window ? "attention (sliding window)" : "attention", lane);
    }
    if (forked) launch_->join();
}

// Layer il over T rows: attention block, then the mixture of experts.
void RuntimeImpl::add_layer(uint32_t il, uint32_t T, const std::vector<Segment>& segs,
                            const GraphKernels& g)
{
    add_attention_block(il, T, segs, g, va(a_.x));
    add_moe_block(il, T, segs, g, va(a_.x));
}

void RuntimeImpl::add_attention_block(uint32_t il, uint32_t T, const std::vector<Segment>& segs,
                                      const GraphKernels& g, uint64_t x)
{
    const uint64_t E4 = uint64_t{c_.n_embd} * 4, Q4 = uint64_t{qdim_} * 4,
                   KV4 = uint64_t{kvdim_} * 4;
    const uint64_t QKV4 = Q4 + 2 * KV4;
    const uint64_t q = va(a_.q), at = va(a_.attn);
    const Layer& Ly = layers_[il];
    // The RMS norms are fused into the GEMMs that read their output (each slice normalises
    // the residual rows it loads): no normalised copy is written to every slice and read back.
    // A prompt in ggml numerics writes q·k·v's rows once normalised as BF16 instead.
    if (normed_rows(il, T)) {
        if (il == 0 || !combine_normalises(il - 1, T)) add_normed_rows(Ly.attn_norm, T, x);
        gemm(Ly.wqkv, T, va(a_.xn), uint64_t{c_.n_embd} * 2, &Ly.bqkv, q, QKV4, "attn_qkv", nullptr,
             false, JAL_DT_BF16);
    } else {
        const bool received = il > 0 && residual_messages(il - 1, T);
        gemm(Ly.wqkv, T, x, E4, &Ly.bqkv, q, QKV4, "attn_qkv", &Ly.attn_norm, false, JAL_DT_F32, -1,
             {.recv_x = received});
    }
    // Where every segment's attention appends its own keys and no slice group attends for
    // more than one sequence, the attention rotates q and k itself (one stage fewer);
    // otherwise q's and k's heads of every row rotate together in one RoPE dispatch (with
    // several sequences a group, their attentions run one after another and each would pay
    // the rotation's latency again).
    const bool rope_in_attention =
        segs.size() <= kv_groups_ && std::all_of(segs.begin(), segs.end(), [&](const Segment& sg) {
            return attention_appends(sg);
        });
    if (!rope_in_attention)
        add(*g.rope, rows_mask(T),
            {q, QKV4, T, va(a_.pos), 0, va(rope_cos_.place), va(rope_sin_.place)}, "rope_qk");
    add_attention(il, segs, g, rope_in_attention);
    // The residual add in the output projection's epilogue: x += attn·Woᵀ + bo. Split over
    // chips, the other ranks write their heads' share alone (the all-reduce adds them).
    const jal_dtype at_dt = attn_dtype(il, T);
    const bool lead = split_.rank == 0;
    // With the router as messages, the projection's columns also go to the router, which
    // forwards the whole rows to gate|up on its slice; beside the attention they are not
    // stored (gate|up hands down the columns its combine adds to).
    const uint64_t sends = projection_messages(il, T, segs);
    gemm(Ly.wo, T, at, lin::packed_row_bytes(at_dt, qdim_), lead ? &Ly.bo : nullptr, x, E4,
         "attn_output", nullptr, lead, at_dt, beside_group(il, T, segs),
         {.send_y = sends ? 1u : 0u, .store_y = sends == 0 || sends == all_mask_});
}

void RuntimeImpl::add_normed_rows(const Vec& norm, uint32_t T, uint64_t x)
{
    k::RmsNormConfig r;
    r.cols = c_.n_embd, r.eps = c_.rms_eps;
    r.out = JAL_DT_BF16, r.out_mode = lin::activation_cvt_mode(numerics());
    r.block_rows = std::clamp<uint32_t>(T, 1, r.rows_per_block());
    const k::Program& code = program(fmt::format("rms_norm c{} b{} bf16", r.cols, r.block_rows),
                                     [&] { return k::build_rms_norm(r); });
    add(code, rows_mask(T),
        {x, uint64_t{c_.n_embd} * 4, va(norm.place), va(a_.xn), uint64_t{c_.n_embd} * 2, T},
        "attn_norm");
}

// Where a step of `rows` rows keeps its router logits: replicated for a few (kFewLogitRows),
// else interleaved (a prompt's thousands of rows would write 64 copies of each).
uint64_t RuntimeImpl::router_logits(uint32_t rows) const
{
    return rows <= kFewLogitRows ? va(a_.rlog_few) : va(a_.rlog);
}

void RuntimeImpl::add_moe_block(uint32_t il, uint32_t T, const std::vector<Segment>& segs,
                                const GraphKernels& g, uint64_t x)
{
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    const uint32_t K = c_.n_expert_used;
    const uint64_t F4 = uint64_t{c_.n_ff_exp} * 4;
    const Layer& Ly = layers_[il];
    const bool to_gate_up = router_messages(il, T);
    const uint64_t from = projection_messages(il, T, segs);
    const bool from_projection = from != 0, beside = from_projection && from != all_mask_;
    const uint64_t senders = beside ? from : 0;
    gemm(Ly.router, T, x, E4, &Ly.br, router_logits(T), c_.n_expert * 4ull, "router", &Ly.post_norm,
         false, JAL_DT_F32, -1,
         {.recv_x = from_projection,
          .x_senders = senders,
          .forward_x = from_projection,
          .send_y = to_gate_up ? 1u : 0u,
          .store_y = !to_gate_up});
    // Few tokens, split by rows: every slice of the gate|up GEMM routes the tokens itself
    // (one stage fewer); more: the routing kernel, each token once.
    const uint64_t gu = va(a_.gate_up);
    const bool route = gate_up_routes(il, T);
    if (!route)
        add(*g.route, rows_mask(T),
            {router_logits(T), c_.n_expert * 4ull, va(a_.ids), va(a_.wts), T}, "moe_routing");
    const jal_dtype act = act_handover(Ly, T);
    const uint64_t act_row = lin::packed_row_bytes(act, c_.n_ff_exp);
    // The SwiGLU in gate|up's epilogue: a prompt's (split by experts), or split by rows with
    // gate|up in halves (a decode step: half the rows for down to gather).
    const bool glu = swiglu_in_gate_up(Ly.gate_up, T);
    const bool msgs = expert_messages(il, T, route, glu);
    const bool prefetch = msgs && down_prefetch(il, T);
    if (glu) {
        expert_gemm(Ly.gate_up, T, false, x, E4, Ly.b_gate_up, va(a_.act), act_row,
                    "ffn_gate_up_exps", &Ly.post_norm, true, JAL_DT_F32, act,
                    {.route = route,
                     .send_output = msgs,
                     .recv_logits = to_gate_up,
                     .recv_x = from_projection,
                     .x_from_self = from_projection,
                     .send_x_columns = beside,
                     .prefetch = prefetch ? &Ly.down : nullptr});
    } else {
        expert_gemm(Ly.gate_up, T, false, x, E4, Ly.b_gate_up, gu, 2 * F4, "ffn_gate_up_exps",
                    &Ly.post_norm, false, JAL_DT_F32, JAL_DT_F32, {.route = route});
    }
    // Few pairs, split by rows: the down GEMM adds Σ w·e of its columns into x itself (the
    // combine with the residual), and without the SwiGLU in gate|up applies it to the
    // gate | up rows it gathers.
    if (down_combines(il, T)) {
        expert_gemm(Ly.down, T, true, glu ? va(a_.act) : gu, glu ? act_row : 2 * F4, Ly.b_down,
                    va(a_.eo), E4, "ffn_down_exps", nullptr, false, JAL_DT_F32, JAL_DT_F32,
                    {.swiglu_input = !glu,
                     .combine = true,
                     .recv_input = msgs,
                     .send_residual = msgs && residual_messages(il, T),
                     .recv_x_columns = beside,
                     .w0_prefetched = prefetch});
        return;
    }
    if (!glu)
        add(*g.swiglu, rows_mask(T * K), {gu, 2 * F4, gu + F4, 2 * F4, va(a_.act), F4, T * K},
            "swiglu");
    expert_gemm(Ly.down, T, true, va(a_.act), act_row, Ly.b_down, va(a_.eo), E4, "ffn_down_exps",
                nullptr, false, act);
    // x += Σ w·e: the residual add in the combine's epilogue.
    if (combine_normalises(il, T)) {
        add(*g.combine_norm, rows_mask(T),
            {va(a_.eo), E4, va(a_.wts), x, E4, T, va(layers_[il + 1].attn_norm.place), va(a_.xn),
             uint64_t{c_.n_embd} * 2},
            "moe_combine");
        return;
    }
    add(*g.combine, rows_mask(T), {va(a_.eo), E4, va(a_.wts), x, E4, T}, "moe_combine");
}

void RuntimeImpl::add_embedding(std::span<const int32_t> tokens, std::span<const int32_t> pos,
                                bool upload_tokens)
{
    const uint32_t T = static_cast<uint32_t>(tokens.size());
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    if (!o_.timing_only) {
        if (upload_tokens) launch_->upload(va(a_.tokens), tokens.data(), tokens.size() * 4);
        launch_->upload(va(a_.pos), pos.data(), pos.size() * 4);
    }
    // embedding
    {
        lin::EmbeddingConfig e{T, c_.n_vocab, c_.n_embd, embd_m_.dtype};
        const k::Program& code =
            program(fmt::format("embd t{} v{} d{} w{}", T, e.vocab, e.dim, int(e.table)),
                    [&] { return lin::build_embedding(e); });
        add(code, all_mask_, {va(a_.tokens), va(embd_.place), embd_m_.row_bytes, va(a_.x), E4},
            "embedding");
    }
}

std::vector<float> RuntimeImpl::run(const std::vector<Segment>& segs,
                                    std::span<const int32_t> tokens, std::span<const int32_t> pos,
                                    uint32_t out_row0, uint32_t out_rows)
{
    if (out_rows > std::min(T_, o_.max_sequences))  // a_.logits's rows (plan_activations)
        throw Error(JAL_STATUS_OUT_OF_RANGE,
                    fmt::format("model runtime: {} rows of logits, room for {}", out_rows,
                                std::min(T_, o_.max_sequences)));
    if (!peers_.empty()) return run_split(segs, tokens, pos, out_row0, out_rows);
    add_pass(segs, tokens, pos, out_row0, out_rows);
    std::vector<float> logits(size_t{out_rows} * c_.n_vocab, 0.0f);
    if (!o_.timing_only) launch_->download(logits.data(), va(a_.logits), logits.size() * 4);
    last_ += run_batch();
    last_ += detail::tray_exchange(o_, c_.n_layer, uint64_t{c_.n_embd} * 4,
                                   static_cast<uint32_t>(tokens.size()), out_rows);
    return logits;
}

void RuntimeImpl::add_pass(const std::vector<Segment>& segs, std::span<const int32_t> tokens,
                           std::span<const int32_t> pos, uint32_t out_row0, uint32_t out_rows,
                           const std::function<void()>& tail, bool upload_tokens)
{
    const uint32_t T = static_cast<uint32_t>(tokens.size());
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    add_embedding(tokens, pos, upload_tokens);
    plan_attention_batches(segs);
    const GraphKernels g = graph_kernels(T);
    // With o_.staged the whole pass is one staged dispatch (split only where a program would
    // pass the code-object limit): a dispatch boundary costs the command processor's start
    // and retire, the last stage's stores landing and the next one's argument misses, about
    // 1.2 µs a layer at concurrency 1 (docs/performance.md). `--unstaged --profile`
    // attributes time by kernel.
    for (uint32_t il = 0; il < c_.n_layer; il++) add_layer(il, T, segs, g);
    gemm(output_, out_rows, va(a_.x) + out_row0 * E4, E4, nullptr, va(a_.logits), c_.n_vocab * 4ull,
         "output", &out_norm_);
    if (tail) tail();
    launch_->cut(segs.size() == T   ? "decode step"
                 : segs.size() == 1 ? "prompt chunk"
                                    : "mixed step");
}

// The pass over the chips of a split, in pieces cut at the exchanges: each chip's dispatch
// up to an exchange runs (all chips together, each waited for), then the all-reduce of
// the residual stream is enqueued on every chip's queue and waited for, and the next piece
// follows. The residual stream is at a_.x before each layer and at a_.x2 between its
// attention and its experts (an all-reduce's input and output must not overlap).
std::vector<float> RuntimeImpl::run_split(const std::vector<Segment>& segs,
                                          std::span<const int32_t> tokens,
                                          std::span<const int32_t> pos, uint32_t out_row0,
                                          uint32_t out_rows)
{
    const uint32_t T = static_cast<uint32_t>(tokens.size());
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    std::vector<RuntimeImpl*> chips = {this};
    for (auto& p : peers_) chips.push_back(p.get());
    std::vector<GraphKernels> g;
    for (RuntimeImpl* c : chips) {
        c->add_embedding(tokens, pos);
        c->plan_attention_batches(segs);
        g.push_back(c->graph_kernels(T));
    }
    for (uint32_t il = 0; il < c_.n_layer; il++) {
        for (size_t r = 0; r < chips.size(); r++)
            chips[r]->add_attention_block(il, T, segs, g[r], chips[r]->va(chips[r]->a_.x));
        exchange(T, &Activations::x, &Activations::x2, "attention");
        for (size_t r = 0; r < chips.size(); r++)
            chips[r]->add_moe_block(il, T, segs, g[r], chips[r]->va(chips[r]->a_.x2));
        exchange(T, &Activations::x2, &Activations::x, "experts");
    }
    gemm(output_, out_rows, va(a_.x) + out_row0 * E4, E4, nullptr, va(a_.logits), c_.n_vocab * 4ull,
         "output", &out_norm_);
    launch_->cut("output");
    std::vector<float> logits(size_t{out_rows} * c_.n_vocab, 0.0f);
    launch_->download(logits.data(), va(a_.logits), logits.size() * 4);
    last_ += run_batch();
    return logits;
}

// Runs every chip's batch (its piece of the pass) together, then the all-reduce of the T
// rows of the residual stream from `from` to `to` on every chip. Rank 0's figures are the
// pass's.
void RuntimeImpl::exchange(uint32_t T, Place Activations::*from, Place Activations::*to,
                           const char* label)
{
    std::vector<RuntimeImpl*> chips = {this};
    for (auto& p : peers_) chips.push_back(p.get());
    // The chips' pieces run together; every started one is waited for before a failure
    // (a chip gone, a kernel's fault) ends the pass.
    size_t started = 0;
    std::exception_ptr failed;
    try {
        for (; started < chips.size(); started++) {
            chips[started]->launch_->cut(label);
            chips[started]->launch_->start_batch();
        }
    } catch (...) {
        failed = std::current_exception();
    }
    for (size_t r = 0; r < started; r++) try {
            RuntimeImpl& c = *chips[r];
            const ChipTotals t = detail::batch_totals(c.launch_->finish_batch(), c.by_kernel_);
            if (r == 0) last_ += t;
        } catch (...) {
            if (!failed) failed = std::current_exception();
        }
    if (failed) std::rethrow_exception(failed);
    std::vector<std::unique_ptr<runtime::Signal>> done;
    for (uint32_t r = 0; r < chips.size(); r++) {
        RuntimeImpl& c = *chips[r];
        done.push_back(std::make_unique<runtime::Signal>(c.device_, 1));
        comm_->all_reduce(r, c.va(c.a_.*from), c.va(c.a_.*to), uint64_t{T} * c_.n_embd, JAL_DT_F32,
                          done.back()->get());
    }
    for (uint32_t r = 0; r < chips.size(); r++) {
        const auto w = done[r]->wait_zero(std::chrono::minutes(2));
        const jal_status st = w.satisfied ? static_cast<jal_status>(w.status) : JAL_STATUS_TIMEOUT;
        if (st != JAL_STATUS_OK)
            throw Error(st, fmt::format("model runtime: the all-reduce after the {} failed on "
                                        "chip {} of the split",
                                        label, r));
    }
}

void RuntimeImpl::check_prompt(int seq, std::span<const int32_t> tokens) const
{
    detail::check_prompt(seq, slot(seq).len, tokens, o_.n_ctx, model_.n_vocab);
}

std::vector<float> RuntimeImpl::prefill(int seq, std::span<const int32_t> tokens)
{
    check_prompt(seq, tokens);
    Slot& s = slot(seq);
    last_ = {};
    by_kernel_.clear();
    std::vector<float> logits =
        run_prompt_chunks(tokens, o_.max_batch_tokens, s.len,
                          [&](std::span<const int32_t> chunk, std::span<const int32_t> pos) {
                              const uint32_t n = static_cast<uint32_t>(chunk.size());
                              return run({{seq, 0, n, s.len}}, chunk, pos, n - 1, 1);
                          });
    total_ += last_;
    return logits;
}

void RuntimeImpl::add_decode_rows(std::span<const std::pair<int, int32_t>> batch,
                                  std::vector<Segment>& segs, std::vector<int32_t>& tokens,
                                  std::vector<int32_t>& pos, uint32_t ahead) const
{
    for (auto [seq, tok] : batch) {
        add_decode_row(segs, tokens, pos, seq, tok, slot(seq).len + ahead, o_.n_ctx);
        if (tok < 0 || static_cast<uint32_t>(tok) >= model_.n_vocab)
            throw Error(JAL_STATUS_OUT_OF_RANGE,
                        fmt::format("model runtime: token {} is not in the vocabulary", tok));
    }
}

std::vector<std::vector<float>> RuntimeImpl::decode(std::span<const std::pair<int, int32_t>> batch)
{
    if (batch.empty()) return {};
    check_decode_step(batch.size(), T_);
    std::vector<Segment> segs;
    std::vector<int32_t> tokens, pos;
    add_decode_rows(batch, segs, tokens, pos);
    last_ = {};
    by_kernel_.clear();
    const uint32_t B = static_cast<uint32_t>(batch.size());
    std::vector<float> logits = run(segs, tokens, pos, 0, B);
    for (auto [seq, tok] : batch) slot(seq).len++;
    total_ += last_;
    return split_rows(logits, B, c_.n_vocab);
}

void RuntimeImpl::open_second_launcher()
{
    if (!launch_next_)
        launch_next_ = std::make_unique<k::Launcher>(device_, context_, *queue_, launch_options_);
}

// decode_greedy's steps use both Launchers, each its own linked program: both are built.
void RuntimeImpl::prepare_decode(std::span<const int> seqs, bool greedy)
{
    if (seqs.empty() || !peers_.empty()) return;
    std::vector<std::pair<int, int32_t>> batch;
    for (const int seq : seqs) batch.emplace_back(seq, 0);
    check_decode_step(batch.size(), T_);
    if (greedy && !o_.timing_only) {
        open_second_launcher();
        for (uint32_t s = 0; s < 2; s++) {
            add_greedy_step(batch, s, 0);
            launch_->prepare_batch();
            std::swap(launch_, launch_next_);
        }
        return;
    }
    std::vector<Segment> segs;
    std::vector<int32_t> tokens, pos;
    add_decode_rows(batch, segs, tokens, pos);
    add_pass(segs, tokens, pos, 0, static_cast<uint32_t>(batch.size()));
    launch_->prepare_batch();
}

// Step s: the tokens of step 0 are the caller's, a later step's are what the step before
// chose on the chip (a_.tokens, which its argmax wrote). The step's argmax writes a_.tokens
// for the next.
void RuntimeImpl::add_greedy_step(std::span<const std::pair<int, int32_t>> batch, uint32_t s,
                                  uint32_t ahead)
{
    const uint32_t B = static_cast<uint32_t>(batch.size());
    std::vector<Segment> segs;
    std::vector<int32_t> tokens, pos;
    add_decode_rows(batch, segs, tokens, pos, ahead);
    const lin::ArgmaxConfig ac{B, c_.n_vocab};
    const k::Program& pick = program(lin::argmax_name(ac), [&] { return lin::build_argmax(ac); });
    add_pass(
        segs, tokens, pos, 0, B,
        [&] {
            add(pick, all_mask_,
                k::Args(lin::argmax_args(ac, {va(a_.logits), B, c_.n_vocab, 0, JAL_DT_F32},
                                         {va(a_.tokens), B, 1, 0, JAL_DT_I32},
                                         {va(a_.best), B, 1, 0, JAL_DT_F32})),
                "argmax");
        },
        s == 0);
}

// Two Launchers take turns: step s + 1 is built and started while step s runs (the queue
// runs them in order), then step s is waited for and its tokens handed on. A failed step
// waits for the one behind it before the error goes on; the sequences keep the steps that
// finished.
std::vector<std::vector<int32_t>>
RuntimeImpl::decode_greedy(std::span<const std::pair<int, int32_t>> batch, uint32_t steps,
                           const std::function<void(std::span<const int32_t>)>& on_step)
{
    if (!peers_.empty() || o_.timing_only)
        return detail::greedy_on_host(*this, batch, steps, on_step, last_);
    if (batch.empty() || steps == 0) return {};
    check_decode_step(batch.size(), T_);
    open_second_launcher();
    const size_t B = batch.size();
    last_ = {};
    by_kernel_.clear();
    std::vector<std::vector<int32_t>> out(steps, std::vector<int32_t>(B));
    std::deque<k::Launcher*> flight;
    auto finish = [&](uint32_t s) {
        k::Launcher* l = flight.front();
        flight.pop_front();
        // The step behind it is queued: this one has most of its run ahead of it.
        const ChipTotals t = detail::batch_totals(l->finish_batch(JAL_WAIT_INTERRUPT), by_kernel_);
        last_ += t;
        total_ += t;
        for (auto [seq, tok] : batch) slot(seq).len++;
        if (on_step) on_step(out[s]);
    };
    uint32_t done = 0;
    try {
        for (uint32_t s = 0; s < steps; s++) {
            add_greedy_step(batch, s, static_cast<uint32_t>(flight.size()));
            launch_->download(out[s].data(), va(a_.tokens), B * 4);
            launch_->start_batch();
            flight.push_back(launch_.get());
            std::swap(launch_, launch_next_);
            if (flight.size() == 2) finish(done++);
        }
        while (!flight.empty()) finish(done++);
    } catch (...) {
        for (; !flight.empty(); flight.pop_front()) try {
                flight.front()->finish_batch();
            } catch (const Error&) {  // the first failure is the one to report
            }
        throw;
    }
    return out;
}

// The chunk's rows first, then one row a decoding sequence: the logits wanted (the chunk's
// last row and every decode row) are then rows n − 1 .. n + B − 1, one output GEMM.
std::vector<std::vector<float>>
RuntimeImpl::mixed_step(std::span<const std::pair<int, int32_t>> batch, int prompt_seq,
                        std::span<const int32_t> chunk)
{
    check_prompt(prompt_seq, chunk);
    if (chunk.size() + batch.size() > o_.max_batch_tokens)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: a step of {} prompt and {} decode rows, at most "
                                "{} rows (max_batch_tokens)",
                                chunk.size(), batch.size(), o_.max_batch_tokens));
    for (auto [seq, tok] : batch)
        if (seq == prompt_seq)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("model runtime: sequence {} both prefills and decodes in "
                                    "one step",
                                    seq));
    const uint32_t n = static_cast<uint32_t>(chunk.size());
    const uint32_t len = slot(prompt_seq).len;
    std::vector<Segment> segs = {{prompt_seq, 0, n, len}};
    std::vector<int32_t> tokens(chunk.begin(), chunk.end()), pos(n);
    for (uint32_t i = 0; i < n; i++) pos[i] = static_cast<int32_t>(len + i);
    add_decode_rows(batch, segs, tokens, pos);
    last_ = {};
    by_kernel_.clear();
    const uint32_t B = static_cast<uint32_t>(batch.size());
    std::vector<float> logits = run(segs, tokens, pos, n - 1, B + 1);
    slot(prompt_seq).len += n;
    for (auto [seq, tok] : batch) slot(seq).len++;
    total_ += last_;
    std::vector<std::vector<float>> rows = split_rows(logits, B + 1, c_.n_vocab);
    std::rotate(rows.begin(), rows.begin() + 1, rows.end());  // the chunk's row last
    return rows;
}

// A model without weights (open_shape) runs timing only, on one chip or a tray's projection.
void check_shape_options(const RuntimeOptions& options)
{
    if (!options.timing_only)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "model runtime: a model without weights runs in timing-only mode only");
    if (!options.split_devices.empty())
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "model runtime: a shape without weights is not split over chips "
                    "(split_devices); its projections take tray_chips");
}

// The modelled time of one decode step of max_sequences rows, each half of n_ctx long.
uint64_t probe_decode_ns(Runtime& rt)
{
    std::vector<std::pair<int, int32_t>> batch;
    for (uint32_t i = 0; i < rt.options().max_sequences; i++) {
        const int seq = rt.create_sequence();
        rt.assume_length(seq, std::max<uint32_t>(1, rt.options().n_ctx / 2));
        batch.emplace_back(seq, 0);
    }
    rt.decode(batch);
    return rt.last().modelled_ns;
}

// RuntimeOptions::tray_experts, automatic (a timing-only tray): the layout whose decode step
// of max_sequences rows the timing model finds faster. Each layout is opened, stepped once
// and closed; the caller opens the one kept. (The busiest slice's bytes, which pick an expert
// GEMM's layout on one chip, mispredict between chips: docs/decisions.md, "Experts over a
// tray's chips".) A layout that cannot open (experts that do not split N ways) is skipped.
RuntimeOptions
with_tray_experts(RuntimeOptions o,
                  const std::function<std::unique_ptr<Runtime>(const RuntimeOptions&)>& open)
{
    if (!o.timing_only || o.tray_chips <= 1 || o.tray_experts != TrayExperts::automatic) return o;
    uint64_t best = UINT64_MAX;
    TrayExperts pick = TrayExperts::experts;
    for (TrayExperts t : {TrayExperts::experts, TrayExperts::striped}) {
        RuntimeOptions p = o;
        p.tray_experts = t, p.progress = nullptr;
        std::unique_ptr<Runtime> rt;
        try {
            rt = open(p);
        } catch (const Error&) {
            continue;
        }
        if (const uint64_t ns = probe_decode_ns(*rt); ns < best) best = ns, pick = t;
    }
    o.tray_experts = pick;
    return o;
}

}  // namespace

std::unique_ptr<Runtime> Runtime::open(const std::string& gguf_path, const runtime::Device& device,
                                       const RuntimeOptions& options)
{
    GgufFile file = GgufFile::open(gguf_path);
    if (file.find_string("general.architecture") ==
        std::optional<std::string_view>(kDeepseekArch)) {
        if (!options.split_devices.empty())
            throw Error(JAL_STATUS_INVALID_FIELD,
                        "model runtime: a DeepSeek-V3 model does not run split over chips yet "
                        "(split_devices); its timing-only shapes take tray_chips");
        const DeepseekConfig config = read_deepseek_config(file);
        return std::make_unique<detail::DeepseekRuntime>(std::move(file), config, device, options);
    }
    GptOssConfig config = read_gpt_oss_config(file);
    if (options.split_devices.empty())
        return std::make_unique<RuntimeImpl>(std::move(file), config, device, options);
    // Split over real chips: the experts' layout is the one the timing-only projection of
    // the same split finds faster (the chips' share of the model, stepped without weights).
    const uint32_t chips = static_cast<uint32_t>(options.split_devices.size()) + 1;
    RuntimeOptions o = options;
    if (o.tray_experts == TrayExperts::automatic) {
        RuntimeOptions probe = options;
        probe.split_devices.clear();
        probe.timing_only = true, probe.tray_chips = chips;
        o.tray_experts = with_tray_experts(probe, [&](const RuntimeOptions& p) {
                             return std::make_unique<RuntimeImpl>(std::nullopt, config, device, p);
                         }).tray_experts;
    }
    auto rt = std::make_unique<RuntimeImpl>(std::move(file), config, device, o, Split{0, chips});
    rt->open_peers(gguf_path, o);
    return rt;
}

std::unique_ptr<Runtime> Runtime::open_shape(const GptOssConfig& config,
                                             const runtime::Device& device,
                                             const RuntimeOptions& options)
{
    check_shape_options(options);
    const RuntimeOptions o = with_tray_experts(options, [&](const RuntimeOptions& p) {
        return std::make_unique<RuntimeImpl>(std::nullopt, config, device, p);
    });
    return std::make_unique<RuntimeImpl>(std::nullopt, config, device, o);
}

std::unique_ptr<Runtime> Runtime::open_shape(const DeepseekConfig& config,
                                             const runtime::Device& device,
                                             const RuntimeOptions& options)
{
    check_shape_options(options);
    return std::make_unique<detail::DeepseekRuntime>(std::nullopt, config, device, options);
}

}  // namespace jal::model
