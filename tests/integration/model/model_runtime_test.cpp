// The model runtime end to end through a real jal-emu: small synthetic GPT-OSS models, the
// logits of prefill and several decode steps against a double-precision host forward pass
// (reference_forward.hpp) in both numerics modes, continuous batching, seeded sampling and
// timing-only runs.
//
// Tolerance: the chip computes in F32 (F32 accumulation in the matrix engine, F32 exp and
// rsqrt in the vector engine) where the reference uses double, through 2-3 layers of
// residual sums: logits agree within kTol × max(1, largest |logit|) (about 20× what was
// measured: 1e-5 on logits of magnitude 10). In ggml numerics both sides round activations
// to Q8_0, but an F32 activation that lands on the other side of a rounding boundary moves
// one int8 step (1/127 of its block's largest value), hence the looser kTolGgml. Both stay
// well below the difference the Q8_0 rounding itself makes (checked: the two reference
// modes differ by more than kTolGgml), so each mode is told apart from the other.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include <jal/jal.hpp>
#include <jal/model/gguf.hpp>
#include <jal/model/jal_model.h>
#include <jal/model/runtime.hpp>
#include <jal/model/synthetic_gpt_oss.hpp>

#include "fixture/emu_process.hpp"
#include "reference_forward.hpp"

namespace {

namespace fs = std::filesystem;
using jal::model::KvType;
using jal::model::Numerics;

constexpr double kTol = 2e-4;
constexpr double kTolGgml = 2e-3;
// F16 dense matrices in ggml numerics: every dense GEMM's activations are rounded to F16
// (11 bits). An activation within ~1e-7 of an F16 rounding boundary (about 1 in 5000) rounds
// one way on the chip (F32) and the other in the double-precision host pass, and the Q8_0
// rounding before the next MXFP4 expert GEMM turns that into a jump: measured up to 7e-3
// of the largest logit (3 presets, prefills of 6-20 tokens, 8 decode steps). The F16 rounding
// itself is checked exactly by LinearGemmTest and numerics_ggml_test.
constexpr double kTolF16Ggml = 1e-2;
// BF16 dense matrices in ggml numerics: activations rounded to BF16 (8 bits), the same jumps
// more often: 3.3e-3 of the largest logit on gqa-window's 96-token prompt (bit for bit the
// same logits whether q·k·v normalises its rows itself or reads them normalised once).
constexpr double kTolBf16Ggml = 1e-2;

// The models of this process, removed at exit.
struct ModelDir {
    fs::path path = fs::temp_directory_path() / ("jal-model-test-" + std::to_string(::getpid()));
    ModelDir() { fs::create_directories(path); }
    ~ModelDir()
    {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

// `preset` with dense matrices of `dense` (jal-mkmodel's --dense-type names).
std::string model_file(const std::string& preset, const std::string& dense = "f32")
{
    static const ModelDir dir;
    fs::path p = dir.path / (preset + (dense == "f32" ? "" : "-" + dense) + ".gguf");
    if (!fs::exists(p)) {
        auto o = jal::model::synthetic_preset(preset);
        o->seed = 7;
        o->dense_type = *jal::model::synthetic_dense_type(dense);
        jal::model::write_synthetic_gpt_oss(p.string(), *o);
    }
    return p.string();
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b, double* scale)
{
    double d = 0, s = 1;
    for (size_t i = 0; i < b.size(); i++) {
        d = std::max(d, std::fabs(a[i] - b[i]));
        s = std::max(s, std::fabs(b[i]));
    }
    *scale = s;
    return d;
}

int32_t argmax(const std::vector<double>& v)
{
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// "small" on 4 slices (two slice groups: several sequences' attention runs in lanes).
jal::model::RuntimeOptions small_on_4_slices(Numerics n, uint32_t sequences, bool staged)
{
    jal::model::RuntimeOptions o;
    o.numerics = n;
    o.max_sequences = sequences;
    o.n_ctx = 64;
    o.max_batch_tokens = 32;
    o.slices = 4;
    o.staged = staged;
    return o;
}

void expect_same_bits(const std::vector<std::vector<float>>& a,
                      const std::vector<std::vector<float>>& b)
{
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); i++) {
        ASSERT_EQ(a[i].size(), b[i].size());
        EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)), 0)
            << "logits " << i;
    }
}

class ModelRuntime : public jal::test::EmuTest {
protected:
    // The native firmware build boots in milliseconds; the Cortex-M7 image's boot is
    // tested elsewhere and takes long under the sanitizers.
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.extra_args = {"--fw", "native"};
        return o;
    }
    void SetUp() override
    {
        jal::test::EmuTest::SetUp();
        device_ = std::make_unique<jal::runtime::Device>(0, emu().socket_dir());
    }
    void TearDown() override
    {
        device_.reset();
        jal::test::EmuTest::TearDown();
    }
    std::unique_ptr<jal::model::Runtime> open(const std::string& preset, Numerics n,
                                              uint32_t sequences = 2,
                                              const std::string& dense = "f32",
                                              KvType kv = KvType::f32)
    {
        jal::model::RuntimeOptions o;
        o.numerics = n;
        o.kv_type = kv;
        o.max_sequences = sequences;
        o.n_ctx = 64;
        o.max_batch_tokens = 32;
        o.slices = 4;
        return jal::model::Runtime::open(model_file(preset, dense), *device_, o);
    }
    // A path turned on by `option` (both numerics, decode_passes) gives the logits of the
    // path it replaces bit for bit, and a one-row decode step moves fewer HBM bytes with it
    // (so the test knows it was taken).
    // (`beside`: RuntimeOptions::projection_beside_attention; `fewer`: false where the option
    // moves the same bytes, only earlier.)
    // `at_least`: bytes the option must save (with `fewer`).
    void expect_same_logits_fewer_bytes(bool jal::model::RuntimeOptions::*option,
                                        bool beside = true, bool fewer = true,
                                        uint64_t at_least = 1)
    {
        for (Numerics n : {Numerics::native, Numerics::ggml}) {
            SCOPED_TRACE(jal::model::numerics_name(n));
            std::vector<std::vector<float>> logits[2];
            uint64_t step_bytes[2] = {0, 0};
            for (int on = 0; on < 2; on++) {
                jal::model::RuntimeOptions o = small_on_4_slices(n, 2, true);
                o.*option = on == 1;
                o.projection_beside_attention = beside;
                logits[on] = decode_passes(o, step_bytes[on]);
            }
            ASSERT_EQ(logits[0].size(), 7u);
            expect_same_bits(logits[0], logits[1]);
            if (fewer)
                EXPECT_GE(step_bytes[0], step_bytes[1] + at_least) << "the path was taken";
            else
                EXPECT_EQ(step_bytes[1], step_bytes[0]);
        }
    }
    // `small` (F32 dense) under o: a prompt and three one-row decode steps of one sequence,
    // a second prompt, a two-row step; every pass's logits, and the HBM bytes of the last
    // one-row step (how tests that a path was taken tell it).
    std::vector<std::vector<float>> decode_passes(const jal::model::RuntimeOptions& o,
                                                  uint64_t& one_row_step_bytes)
    {
        std::vector<std::vector<float>> logits;
        auto rt = jal::model::Runtime::open(model_file("small", "f32"), *device_, o);
        const int a = rt->create_sequence(), b = rt->create_sequence();
        logits.push_back(rt->prefill(a, std::vector<int32_t>{1, 2, 3, 4, 5}));
        for (int32_t step = 0; step < 3; step++) {
            const std::pair<int, int32_t> row[1] = {{a, 10 + step}};
            for (std::vector<float>& l : rt->decode(row)) logits.push_back(l);
        }
        one_row_step_bytes = rt->last().hbm_bytes;
        logits.push_back(rt->prefill(b, std::vector<int32_t>{7, 8}));
        const std::pair<int, int32_t> rows[2] = {{a, 21}, {b, 22}};
        for (std::vector<float>& l : rt->decode(rows)) logits.push_back(l);
        return logits;
    }
    // Prefill and `steps` greedy decode steps on the chip and on the reference. Activations
    // meet Q8_0 weights rounded to Q8_0 in either numerics: then the ggml tolerance applies.
    // (A preset and prompt whose Q8_0 activations sit near a rounding boundary can jump
    // further: `small` with Q8_0 dense does, by 1e-2, on prompts of 11 tokens and more.)
    void check_against_reference(const std::string& preset, Numerics n, uint32_t prompt_len,
                                 uint32_t steps, const std::string& dense = "f32",
                                 KvType kv = KvType::f32)
    {
        auto rt = open(preset, n, 2, dense, kv);
        jal::model::GgufFile file = jal::model::GgufFile::open(model_file(preset, dense));
        jal::test::ReferenceModel ref(file, n == Numerics::ggml, kv == KvType::f16);
        auto rseq = ref.new_sequence();
        const double tol = n == Numerics::ggml && dense == "f16"    ? kTolF16Ggml
                           : n == Numerics::ggml || dense == "q8_0" ? kTolGgml
                                                                    : kTol;

        std::vector<int32_t> prompt;
        for (uint32_t i = 0; i < prompt_len; i++)
            prompt.push_back(static_cast<int32_t>((i * 37 + 11) % rt->config().n_vocab));
        int seq = rt->create_sequence();
        std::vector<float> got = rt->prefill(seq, prompt);
        std::vector<double> want = ref.forward(rseq, prompt);
        double scale = 1;
        double d = max_abs_diff(got, want, &scale);
        EXPECT_LE(d, tol * scale) << preset << " prefill of " << prompt_len << " tokens";
        std::printf("[ %s %s ] prefill: max |logit diff| %.3g (scale %.3g)\n", preset.c_str(),
                    jal::model::numerics_name(n), d, scale);
        EXPECT_GT(rt->last().modelled_ns, 0u);
        {
            jal::test::ReferenceModel other(file, n != Numerics::ggml);
            auto oseq = other.new_sequence();
            std::vector<double> o = other.forward(oseq, prompt);
            std::vector<float> of(o.begin(), o.end());
            double s2 = 1;
            EXPECT_GT(max_abs_diff(of, want, &s2), kTolGgml * s2)
                << "the numerics modes should differ";
        }
        for (uint32_t s = 0; s < steps; s++) {
            const int32_t tok = argmax(want);  // the reference's choice keeps both on one path
            std::vector<std::pair<int, int32_t>> batch = {{seq, tok}};
            got = rt->decode(batch)[0];
            want = ref.forward(rseq, {tok});
            d = max_abs_diff(got, want, &scale);
            EXPECT_LE(d, tol * scale) << preset << " decode step " << s;
            std::printf("[ %s %s ] decode %u: max |logit diff| %.3g\n", preset.c_str(),
                        jal::model::numerics_name(n), s, d);
        }
        EXPECT_EQ(rt->sequence_length(seq), prompt_len + steps);
    }

    std::unique_ptr<jal::runtime::Device> device_;
};

TEST_F(ModelRuntime, TinyMatchesReferenceNative)
{
    check_against_reference("tiny", Numerics::native, 6, 3);
}
TEST_F(ModelRuntime, TinyMatchesReferenceGgml)
{
    check_against_reference("tiny", Numerics::ggml, 6, 3);
}

// GQA 3:1, three experts per token, a 16-token window: a 20-token prompt and decode steps
// past it make the sliding-window and full layers differ.
TEST_F(ModelRuntime, GqaWindowMatchesReferenceNative)
{
    check_against_reference("gqa-window", Numerics::native, 20, 3);
}
TEST_F(ModelRuntime, GqaWindowMatchesReferenceGgml)
{
    check_against_reference("gqa-window", Numerics::ggml, 20, 3);
}

// An F16 KV cache (--kv-type f16): the reference rounds its keys and values to F16 alike,
// within the usual tolerances (measured: native 9.8e-4 of 2.6e-3, ggml 9.8e-5; a key the
// chip (F32) and the host (double, then F32) put on the two sides of an F16 rounding
// boundary is what is left). Without the reference's rounding both fail (4.6e-3, 5.2e-2).
TEST_F(ModelRuntime, HalfKvCacheMatchesReferenceNative)
{
    check_against_reference("gqa-window", Numerics::native, 20, 3, "f32", KvType::f16);
}
TEST_F(ModelRuntime, HalfKvCacheMatchesReferenceGgml)
{
    check_against_reference("gqa-window", Numerics::ggml, 20, 3, "f32", KvType::f16);
}

// Dense matrices (token_embd, output, q/k/v, attention output, router) in F16 and Q8_0, as
// llama.cpp's converters write them: F16 is decoded exactly (and meets F16 activations in
// ggml numerics), Q8_0 meets Q8_0 activations (the integer block dot) in both.
TEST_F(ModelRuntime, F16DenseWeightsMatchReferenceNative)
{
    check_against_reference("tiny", Numerics::native, 6, 3, "f16");
    check_against_reference("gqa-window", Numerics::native, 20, 3, "f16");
}
TEST_F(ModelRuntime, F16DenseWeightsMatchReferenceGgml)
{
    check_against_reference("tiny", Numerics::ggml, 6, 3, "f16");
    check_against_reference("gqa-window", Numerics::ggml, 20, 3, "f16");
}
TEST_F(ModelRuntime, Q8_0DenseWeightsMatchReferenceNative)
{
    check_against_reference("tiny", Numerics::native, 6, 3, "q8_0");
    check_against_reference("gqa-window", Numerics::native, 20, 3, "q8_0");
}
TEST_F(ModelRuntime, Q8_0DenseWeightsMatchReferenceGgml)
{
    check_against_reference("tiny", Numerics::ggml, 6, 3, "q8_0");
    check_against_reference("gqa-window", Numerics::ggml, 20, 3, "q8_0");
}

// BF16 dense weights in ggml numerics: a prompt long enough that q·k·v runs in row groups
// reads its rows normalised once as BF16 (layer 0's by the rms_norm kernel, "attn_norm", the
// later layers' by the combine before them), and still agrees with the reference; native
// numerics, whose activations stay F32, keeps the norm in the GEMM.
TEST_F(ModelRuntime, Bf16DensePromptReadsRowsNormalisedOnceInGgml)
{
    for (Numerics n : {Numerics::ggml, Numerics::native}) {
        jal::model::RuntimeOptions o;
        o.numerics = n;
        o.max_sequences = 1;
        o.n_ctx = 128;
        o.max_batch_tokens = 128;
        o.slices = 4;
        o.staged = false;  // the by-kernel figures name the dispatches
        const std::string path = model_file("gqa-window", "bf16");
        auto rt = jal::model::Runtime::open(path, *device_, o);
        jal::model::GgufFile file = jal::model::GgufFile::open(path);
        jal::test::ReferenceModel ref(file, n == Numerics::ggml);
        auto rseq = ref.new_sequence();
        std::vector<int32_t> prompt;
        for (uint32_t i = 0; i < 96; i++)
            prompt.push_back(static_cast<int32_t>((i * 37 + 11) % rt->config().n_vocab));
        const std::vector<float> got = rt->prefill(rt->create_sequence(), prompt);
        const std::vector<double> want = ref.forward(rseq, prompt);
        double scale = 1;
        const double d = max_abs_diff(got, want, &scale);
        EXPECT_LE(d, (n == Numerics::ggml ? kTolBf16Ggml : kTol) * scale)
            << jal::model::numerics_name(n);
        EXPECT_EQ(rt->last_by_kernel().count("attn_norm"), n == Numerics::ggml ? 1u : 0u)
            << jal::model::numerics_name(n);
    }
}

// A type llama.cpp multiplies but the chip's kernels do not (Q4_0, Q4_1, Q5_0, Q5_1) is
// refused when the model is opened, naming the tensor: here tiny's output.weight, retyped
// from F32 to Q4_0 in its description (the F32 data more than covers Q4_0's 18-byte blocks).
TEST_F(ModelRuntime, WeightTypeTheKernelsDoNotTakeIsRefusedAtOpen)
{
    std::ifstream in(model_file("tiny"), std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const std::string name = "output.weight";
    size_t at = bytes.find(std::string("\x0d\0\0\0\0\0\0\0", 8) + name);  // u64 length, name
    ASSERT_NE(at, std::string::npos);
    at += 8 + name.size();
    uint32_t dims = 0, type = 0;
    std::memcpy(&dims, bytes.data() + at, 4);
    ASSERT_EQ(dims, 2u);
    at += 4 + 8 * dims;
    std::memcpy(&type, bytes.data() + at, 4);
    ASSERT_EQ(type, 0u);  // F32
    type = 2;             // Q4_0
    std::memcpy(bytes.data() + at, &type, 4);
    const fs::path path = fs::path(model_file("tiny")).parent_path() / "tiny-q4_0-output.gguf";
    std::ofstream(path, std::ios::binary) << bytes;

    jal::model::RuntimeOptions o;
    o.slices = 4;
    o.n_ctx = 64;
    try {
        jal::model::Runtime::open(path.string(), *device_, o);
        ADD_FAILURE() << "a Q4_0 output.weight was accepted";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_INVALID_FIELD);
        EXPECT_NE(std::string(e.what()).find(
                      "tensor 'output.weight' is q4_0, which the chip's kernels do not take"),
                  std::string::npos)
            << e.what();
    }
}

// Sequences joining and leaving between steps get the tokens they get alone. ("small" has
// 2 KV heads, so on 4 slices there are two slice groups and the attention of sequences in
// different groups runs on two lane queues side by side.)
TEST_F(ModelRuntime, ContinuousBatchingMatchesRunningAlone)
{
    auto rt = open("small", Numerics::native, 3);
    const std::vector<std::vector<int32_t>> prompts = {
        {1, 2, 3, 4}, {9, 8, 7}, {100, 50, 25, 12, 6}};
    constexpr uint32_t kSteps = 4;
    auto alone = [&](const std::vector<int32_t>& prompt) {
        int seq = rt->create_sequence();
        std::vector<int32_t> out = {jal::model::argmax(rt->prefill(seq, prompt))};
        for (uint32_t s = 1; s < kSteps; s++) {
            std::vector<std::pair<int, int32_t>> b = {{seq, out.back()}};
            out.push_back(jal::model::argmax(rt->decode(b)[0]));
        }
        rt->free_sequence(seq);
        return out;
    };
    std::vector<std::vector<int32_t>> want;
    for (auto& p : prompts) want.push_back(alone(p));

    // Sequence 0 starts; 1 joins after one step; 2 joins after two, while 0 leaves when done.
    std::vector<int> seq(3, -1);
    std::vector<std::vector<int32_t>> got(3);
    auto join = [&](size_t i) {
        seq[i] = rt->create_sequence();
        got[i].push_back(jal::model::argmax(rt->prefill(seq[i], prompts[i])));
    };
    join(0);
    for (int step = 0; step < 8; step++) {
        if (step == 1) join(1);
        if (step == 2) join(2);
        std::vector<std::pair<int, int32_t>> batch;
        std::vector<size_t> who;
        for (size_t i = 0; i < 3; i++)
            if (seq[i] >= 0 && got[i].size() < kSteps)
                batch.push_back({seq[i], got[i].back()}), who.push_back(i);
        if (batch.empty()) break;
        auto logits = rt->decode(batch);
        for (size_t b = 0; b < who.size(); b++) {
            got[who[b]].push_back(jal::model::argmax(logits[b]));
            if (got[who[b]].size() == kSteps) {
                rt->free_sequence(seq[who[b]]);
                seq[who[b]] = -1;
            }
        }
    }
    for (size_t i = 0; i < 3; i++) EXPECT_EQ(got[i], want[i]) << "sequence " << i;
}

// Local copies of the dense shards (RuntimeOptions::dense_copies) change where a prompt's
// GEMMs in row groups read W, not what they compute: the same logits bit for bit, prompt
// and decode, BF16 dense weights in both numerics; and the copies are read (the output
// projection's 96 rows run in row groups on 4 slices, and its modelled time changes with
// where its shards are: shorter in native numerics; in ggml, at this model's tiny shards,
// the more row groups the copies make the runtime choose cost more than they save, which
// the byte count of gemm_row_groups does not see).
TEST_F(ModelRuntime, DenseCopiesGiveTheLogitsWithout)
{
    for (Numerics n : {Numerics::native, Numerics::ggml}) {
        SCOPED_TRACE(jal::model::numerics_name(n));
        std::vector<std::vector<float>> logits[2];
        uint64_t wo_ns[2] = {0, 0};
        for (int copies = 0; copies < 2; copies++) {
            jal::model::RuntimeOptions o;
            o.numerics = n;
            o.max_sequences = 1;
            o.n_ctx = 128;
            o.max_batch_tokens = 128;
            o.slices = 4;
            o.staged = false;  // the by-kernel figures name the dispatches
            o.dense_copies = copies == 1;
            auto rt = jal::model::Runtime::open(model_file("gqa-window", "bf16"), *device_, o);
            std::vector<int32_t> prompt;
            for (uint32_t i = 0; i < 96; i++)
                prompt.push_back(static_cast<int32_t>((i * 37 + 11) % rt->config().n_vocab));
            const int seq = rt->create_sequence();
            logits[copies].push_back(rt->prefill(seq, prompt));
            wo_ns[copies] = rt->last_by_kernel().at("attn_output").modelled_ns;
            std::vector<std::pair<int, int32_t>> step = {{seq, 5}};
            logits[copies].push_back(rt->decode(step)[0]);
        }
        expect_same_bits(logits[0], logits[1]);
        EXPECT_NE(wo_ns[1], wo_ns[0]) << "the output projection reads its local copies";
    }
}

// K-major dense weights (RuntimeOptions::k_major_weights) against the weight layout: the
// same bits for F32, BF16 and F16 dense matrices, a prompt in row groups (the dense copies)
// and decode steps of two sequences (the output projection beside the attention).
TEST_F(ModelRuntime, KMajorWeightsGiveTheLogitsOfTheWeightLayout)
{
    for (const char* dense : {"f32", "bf16", "f16"}) {
        SCOPED_TRACE(dense);
        std::vector<std::vector<float>> logits[2];
        std::vector<uint8_t> placed[2];  // what the chip holds: the shards differ
        for (int k_major = 0; k_major < 2; k_major++) {
            jal::model::RuntimeOptions o;
            o.numerics = std::string(dense) == "bf16" ? Numerics::ggml : Numerics::native;
            o.max_sequences = 2;
            o.n_ctx = 128;
            o.max_batch_tokens = 64;
            o.slices = 8;
            o.k_major_weights = k_major == 1;
            auto rt = jal::model::Runtime::open(model_file("gqa-window", dense), *device_, o);
            std::vector<int32_t> prompt;
            for (uint32_t i = 0; i < 80; i++)
                prompt.push_back(static_cast<int32_t>((i * 29 + 5) % rt->config().n_vocab));
            placed[k_major] = rt->read_back_data_for_test(64u << 20);
            const int a = rt->create_sequence(), b = rt->create_sequence();
            logits[k_major].push_back(rt->prefill(a, prompt));
            const std::vector<int32_t> short_prompt = {3, 1, 4, 1, 5};
            logits[k_major].push_back(rt->prefill(b, short_prompt));
            for (int32_t t : {7, 9}) {
                std::vector<std::pair<int, int32_t>> step = {{a, t}, {b, t + 1}};
                for (auto& row : rt->decode(step)) logits[k_major].push_back(std::move(row));
            }
        }
        expect_same_bits(logits[0], logits[1]);
        ASSERT_EQ(placed[0].size(), placed[1].size());
        EXPECT_NE(placed[0], placed[1]) << "the dense shards are laid out K-major";
    }
}

// Key splits (RuntimeOptions::attention_key_splits): one sequence on 8 slices of 2 KV heads
// leaves three slot groups idle; the full-attention layer's decode rows then split each
// head's keys over 4 slices (each with a copy of the head's cache, which every append
// writes: a step moves more bytes), merged by split 0. Against the double-precision
// reference, native numerics with both caches and ggml with F32 (with an F16 cache, this
// prompt's ggml run jumps past the tolerance at a Q8_0 rounding boundary, split or not: 2.9e-2
// both), a prompt, then decode steps. The prompt is long enough that each split's share (a key chunk more than
// a quarter of the keys, the last one shorter: attention.hpp) leaves the newest keys to a
// split other than the first, which appends them.
TEST_F(ModelRuntime, KeySplitsMatchTheReference)
{
    for (Numerics n : {Numerics::native, Numerics::ggml})
        for (KvType kv : {KvType::f32, KvType::f16}) {
            if (n == Numerics::ggml && kv == KvType::f16) continue;
            SCOPED_TRACE(std::string(jal::model::numerics_name(n)) + ", " +
                         jal::model::kv_type_name(kv));
            jal::model::GgufFile file = jal::model::GgufFile::open(model_file("gqa-window"));
            uint64_t step_bytes[2] = {0, 0};
            for (uint32_t splits : {1u, 4u}) {
                jal::model::RuntimeOptions o = small_on_4_slices(n, 1, true);
                o.slices = 8;
                o.n_ctx = 320;
                o.kv_type = kv;
                o.attention_key_splits = splits;
                auto rt = jal::model::Runtime::open(model_file("gqa-window"), *device_, o);
                EXPECT_EQ(rt->options().attention_key_splits, splits);
                jal::test::ReferenceModel ref(file, n == Numerics::ggml, kv == KvType::f16);
                auto rseq = ref.new_sequence();
                const double tol = n == Numerics::ggml ? kTolGgml : kTol;
                std::vector<int32_t> prompt;
                for (uint32_t i = 0; i < 300; i++)
                    prompt.push_back(static_cast<int32_t>((i * 37 + 11) % rt->config().n_vocab));
                const int seq = rt->create_sequence();
                std::vector<float> got = rt->prefill(seq, prompt);
                std::vector<double> want = ref.forward(rseq, prompt);
                for (uint32_t step = 0; step < 8; step++) {
                    const int32_t tok = argmax(want);
                    const std::pair<int, int32_t> row[1] = {{seq, tok}};
                    got = rt->decode(row)[0];
                    want = ref.forward(rseq, {tok});
                    double scale = 1;
                    const double d = max_abs_diff(got, want, &scale);
                    EXPECT_LE(d, tol * scale) << splits << " splits, decode step " << step;
                }
                step_bytes[splits > 1] = rt->last().hbm_bytes;
            }
            EXPECT_GT(step_bytes[1], step_bytes[0]) << "the appends wrote every copy";
        }
}

TEST_F(ModelRuntime, KeySplitsTheSlotGroupsCannotHoldAreRefused)
{
    jal::model::RuntimeOptions o = small_on_4_slices(Numerics::native, 2, true);
    o.slices = 8;
    for (uint32_t splits : {3u, 4u}) {  // not a power of 2; more than 4 groups over 2 slots
        o.attention_key_splits = splits;
        EXPECT_THROW(jal::model::Runtime::open(model_file("gqa-window"), *device_, o), jal::Error)
            << splits;
    }
}

// A slot group's decode rows in one batched attention call (RuntimeOptions::
// attention_batches) compute what one call a sequence does: the same logits bit for bit,
// decode steps and a mixed step, both numerics, F32 and F16 caches. Five sequences on 4
// slices: slots 0, 2, 4 in one slice group, 1 and 3 in the other, so both groups batch,
// and a step is then fewer dispatches (unstaged: one a group and layer, not one a row).
TEST_F(ModelRuntime, BatchedAttentionGivesTheLogitsOfOneCallASequence)
{
    for (Numerics n : {Numerics::native, Numerics::ggml})
        for (jal::model::KvType kv : {jal::model::KvType::f32, jal::model::KvType::f16}) {
            SCOPED_TRACE(std::string(jal::model::numerics_name(n)) +
                         (kv == jal::model::KvType::f16 ? " f16" : " f32"));
            std::vector<std::vector<float>> logits[2];
            uint64_t dispatches[2] = {0, 0};
            for (int batches = 0; batches < 2; batches++) {
                jal::model::RuntimeOptions o = small_on_4_slices(n, 6, false);
                o.kv_type = kv;
                o.attention_batches = batches == 1;
                auto rt = jal::model::Runtime::open(model_file("small", "f32"), *device_, o);
                std::vector<int> seqs;
                for (int32_t i = 0; i < 5; i++) {
                    seqs.push_back(rt->create_sequence());
                    rt->prefill(seqs.back(), std::vector<int32_t>{1 + i, 20 + 3 * i, 7});
                }
                for (int32_t step = 0; step < 2; step++) {
                    std::vector<std::pair<int, int32_t>> rows;
                    for (int32_t i = 0; i < 5; i++) rows.push_back({seqs[i], 30 + step + i});
                    for (std::vector<float>& l : rt->decode(rows)) logits[batches].push_back(l);
                    dispatches[batches] = rt->last().dispatches;
                }
                const int late = rt->create_sequence();
                std::vector<std::pair<int, int32_t>> rows;
                for (int32_t i = 0; i < 5; i++) rows.push_back({seqs[i], 40 + i});
                for (std::vector<float>& l :
                     rt->mixed_step(rows, late, std::vector<int32_t>{3, 1, 4, 1}))
                    logits[batches].push_back(l);
            }
            ASSERT_EQ(logits[0].size(), 16u);
            expect_same_bits(logits[0], logits[1]);
            EXPECT_LT(dispatches[1], dispatches[0]) << "a group's rows are one dispatch a layer";
        }
}

// The output projection beside the attention (RuntimeOptions::projection_beside_attention):
// where a decode pass attends on one slot group, the projection runs on the other slices
// from their copy of Wo, loading it before its ACQUIRE. The same logits bit for bit, both
// numerics: one sequence (group 0), two in one group (slots 0 and 2: a batched call), two
// in different groups (not beside), and a prompt (not beside). With it, fewer slices read
// the attention's rows, so a one-sequence step reads fewer bytes: the path was taken. (The
// router as messages is off in both runs: on every slice the projection would also send the
// router and gate|up their x, which moves fewer bytes still and would hide what this counts.)
TEST_F(ModelRuntime, ProjectionBesideTheAttentionGivesTheSameLogits)
{
    for (Numerics n : {Numerics::native, Numerics::ggml}) {
        SCOPED_TRACE(jal::model::numerics_name(n));
        std::vector<std::vector<float>> logits[2];
        uint64_t step_bytes[2] = {0, 0};
        for (int beside = 0; beside < 2; beside++) {
            jal::model::RuntimeOptions o = small_on_4_slices(n, 3, true);
            o.projection_beside_attention = beside == 1;
            o.router_messages = false;
            auto rt = jal::model::Runtime::open(model_file("small", "f32"), *device_, o);
            const int a = rt->create_sequence(), b = rt->create_sequence(),
                      c = rt->create_sequence();
            logits[beside].push_back(rt->prefill(a, std::vector<int32_t>{1, 2, 3, 4, 5}));
            for (int32_t step = 0; step < 3; step++) {
                const std::pair<int, int32_t> row[1] = {{a, 10 + step}};
                for (std::vector<float>& l : rt->decode(row)) logits[beside].push_back(l);
            }
            step_bytes[beside] = rt->last().hbm_bytes;
            logits[beside].push_back(rt->prefill(b, std::vector<int32_t>{7, 8}));
            logits[beside].push_back(rt->prefill(c, std::vector<int32_t>{9}));
            for (auto pair : {std::array<int, 2>{a, c}, std::array<int, 2>{a, b}}) {
                const std::pair<int, int32_t> rows[2] = {{pair[0], 21}, {pair[1], 22}};
                for (std::vector<float>& l : rt->decode(rows)) logits[beside].push_back(l);
            }
        }
        ASSERT_EQ(logits[0].size(), 10u);
        expect_same_bits(logits[0], logits[1]);
        EXPECT_LT(step_bytes[1], step_bytes[0]) << "the projection ran beside the attention";
    }
}

// Expert rows as messages (RuntimeOptions::expert_messages): a decode step's gate|up sends
// its SwiGLU rows to the down projection, which routes the tokens itself and starts without
// a barrier. The same logits bit for bit, both numerics, one sequence and two (up to 8
// pairs), and a prompt (which does not take the path). With it, nothing stores the rows or
// gathers them back, so a decode step moves fewer HBM bytes: the path was taken.
TEST_F(ModelRuntime, ExpertRowsAsMessagesGiveTheSameLogits)
{
    expect_same_logits_fewer_bytes(&jal::model::RuntimeOptions::expert_messages);
}

// The residual as messages (RuntimeOptions::residual_messages): where the down projection
// takes its rows as messages, it also sends the residual columns it stores to the next
// layer's q·k·v, which receives its x and starts without a barrier. The same logits bit for
// bit, both numerics, one sequence and two, and a prompt (which does not take the path);
// with it no slice reads x back for q·k·v, so a decode step moves fewer HBM bytes.
TEST_F(ModelRuntime, ResidualAsMessagesGivesTheSameLogits)
{
    expect_same_logits_fewer_bytes(&jal::model::RuntimeOptions::residual_messages);
}

// The router as messages (RuntimeOptions::router_messages): where gate|up takes its
// routing from the router, the router sends its logits instead of storing them and gate|up
// receives them, starting without a barrier; the output projection also sends its residual
// columns to the router, which receives its x and forwards the rows to gate|up, on every
// slice or beside the attention (from the slices outside its group, named as dispatch
// slices; gate|up then hands down the columns its combine adds to, which nothing stored).
// The same logits bit for bit either way, both numerics, one sequence and two, and a prompt
// (which does not take the path). With it nothing stores the logits or reads them back, and
// no router slice reads the residual row (n_embd F32 each of the 4 slices, every layer): at
// least that many fewer HBM bytes a one-row step, either way, so x came as messages.
TEST_F(ModelRuntime, RouterAsMessagesGivesTheSameLogits)
{
    const jal::model::GptOssConfig c =
        jal::model::synthetic_config(*jal::model::synthetic_preset("small"));
    const uint64_t x_reads = uint64_t{c.n_layer} * 4 * c.n_embd * 4;
    for (bool beside : {true, false}) {
        SCOPED_TRACE(beside ? "projection beside the attention" : "projection on every slice");
        expect_same_logits_fewer_bytes(&jal::model::RuntimeOptions::router_messages, beside, true,
                                       x_reads);
    }
}

// Down's first W tile issued by gate|up (RuntimeOptions::down_prefetch): where the rows go as
// messages, gate|up gathers the down projection's first W tile behind its own and down
// multiplies what it finds in L1. The same bytes move either way (only earlier), so what
// this checks is the bits: both numerics, one sequence and two, and a prompt (which does
// not take the path); a tile not issued as down would load it gives other logits
// (LinearExpertMessagesTest checks the pair on its own).
TEST_F(ModelRuntime, DownsFirstTileIssuedByGateUpGivesTheSameLogits)
{
    expect_same_logits_fewer_bytes(&jal::model::RuntimeOptions::down_prefetch, true, false);
}

// Without the rows layout (expert_layout experts) every slice keeps only its own experts'
// bias rows (a per-slice table) where the rows layout keeps them replicated: the same
// logits bit for bit, prompt and decode, both numerics (both splits give the same bits).
TEST_F(ModelRuntime, ExpertBiasesOnTheirSlicesGiveTheLogitsOfReplicatedOnes)
{
    for (Numerics n : {Numerics::native, Numerics::ggml}) {
        SCOPED_TRACE(jal::model::numerics_name(n));
        std::vector<std::vector<float>> logits[2];
        int i = 0;
        for (auto layout : {jal::model::ExpertLayout::experts, jal::model::ExpertLayout::both}) {
            jal::model::RuntimeOptions o = small_on_4_slices(n, 2, true);
            o.expert_layout = layout;
            auto rt = jal::model::Runtime::open(model_file("small", "f32"), *device_, o);
            int a = rt->create_sequence(), b = rt->create_sequence();
            logits[i].push_back(rt->prefill(a, std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));
            logits[i].push_back(rt->prefill(b, std::vector<int32_t>{9, 8}));
            std::vector<std::pair<int, int32_t>> two = {{a, 7}, {b, 6}};
            for (std::vector<float>& l : rt->decode(two)) logits[i].push_back(std::move(l));
            i++;
        }
        expect_same_bits(logits[0], logits[1]);
    }
}

// A layer as one staged dispatch computes exactly what one dispatch a kernel computes:
// the same logits bit for bit, prefill and decode, one sequence and two (on 4 slices
// "small" has two slice groups, so two sequences' attention runs as lanes inside the
// staged layer), in both numerics.
TEST_F(ModelRuntime, StagedLayersGiveTheLogitsOfOneDispatchAKernel)
{
    for (Numerics n : {Numerics::native, Numerics::ggml}) {
        SCOPED_TRACE(jal::model::numerics_name(n));
        std::vector<std::vector<float>> logits[2];
        uint64_t dispatches[2] = {0, 0};
        for (int staged = 0; staged < 2; staged++) {
            auto rt = jal::model::Runtime::open(model_file("small", "f32"), *device_,
                                                small_on_4_slices(n, 2, staged == 1));
            int a = rt->create_sequence(), b = rt->create_sequence();
            logits[staged].push_back(rt->prefill(a, std::vector<int32_t>{1, 2, 3, 4, 5}));
            logits[staged].push_back(rt->prefill(b, std::vector<int32_t>{9, 8, 7}));
            std::vector<std::pair<int, int32_t>> one = {{a, 6}}, two = {{a, 7}, {b, 6}};
            logits[staged].push_back(rt->decode(one)[0]);
            for (std::vector<float>& l : rt->decode(two)) logits[staged].push_back(std::move(l));
            dispatches[staged] = rt->last().dispatches;
        }
        expect_same_bits(logits[0], logits[1]);
        EXPECT_LT(dispatches[1], dispatches[0]) << "a staged decode step is fewer dispatches";
    }
}

// Building a decode step ahead (prepare_decode) runs nothing: the sequences keep their
// lengths, the chip's totals do not move, and the steps after give the logits of a runtime
// that never prepared, bit for bit (staged and not, both numerics).
TEST_F(ModelRuntime, APreparedDecodeStepChangesNothingButWhereItIsBuilt)
{
    for (Numerics n : {Numerics::native, Numerics::ggml})
        for (bool staged : {false, true}) {
            SCOPED_TRACE(std::string(jal::model::numerics_name(n)) + (staged ? " staged" : ""));
            std::vector<std::vector<float>> logits[2];
            for (int prepared = 0; prepared < 2; prepared++) {
                auto rt = jal::model::Runtime::open(model_file("small", "f32"), *device_,
                                                    small_on_4_slices(n, 2, staged));
                const int a = rt->create_sequence(), b = rt->create_sequence();
                rt->prefill(a, std::vector<int32_t>{1, 2, 3, 4, 5});
                rt->prefill(b, std::vector<int32_t>{9, 8, 7});
                if (prepared) {
                    const jal::model::ChipTotals before = rt->total();
                    const int seqs[] = {a, b};
                    rt->prepare_decode(seqs);
                    EXPECT_EQ(rt->sequence_length(a), 5u);
                    EXPECT_EQ(rt->sequence_length(b), 3u);
                    EXPECT_EQ(rt->total().dispatches, before.dispatches);
                    EXPECT_EQ(rt->total().modelled_ns, before.modelled_ns);
                }
                for (int32_t step = 0; step < 2; step++) {
                    const std::pair<int, int32_t> rows[2] = {{a, 10 + step}, {b, 20 + step}};
                    for (std::vector<float>& l : rt->decode(rows)) logits[prepared].push_back(l);
                }
            }
            ASSERT_EQ(logits[0].size(), 4u);
            expect_same_bits(logits[0], logits[1]);
        }
}

// Greedy decoding with the argmax on the chip (decode_greedy: steps back to back, each
// step's tokens fed to the next there, its programs prepared ahead) chooses the tokens a
// host argmax of decode()'s logits chooses, step by step, for two sequences together; on_step sees each step's in
// order; the sequences advance by the steps, and the decode() after gives the logits of
// the runtime that decoded on the host (the caches hold the same keys and values). Staged
// and not, both numerics.
TEST_F(ModelRuntime, GreedyDecodingOnTheChipChoosesTheHostsTokens)
{
    constexpr uint32_t kSteps = 5;
    for (Numerics n : {Numerics::native, Numerics::ggml})
        for (bool staged : {false, true}) {
            SCOPED_TRACE(std::string(jal::model::numerics_name(n)) + (staged ? " staged" : ""));
            std::vector<std::vector<int32_t>> chosen[2];
            std::vector<std::vector<float>> after[2];
            uint64_t host_step_dispatches = 0;
            for (int on_chip = 0; on_chip < 2; on_chip++) {
                auto rt = jal::model::Runtime::open(model_file("small", "f32"), *device_,
                                                    small_on_4_slices(n, 2, staged));
                const int a = rt->create_sequence(), b = rt->create_sequence();
                const std::vector<float> la = rt->prefill(a, std::vector<int32_t>{1, 2, 3, 4, 5});
                const std::vector<float> lb = rt->prefill(b, std::vector<int32_t>{9, 8, 7});
                std::vector<std::pair<int, int32_t>> rows = {{a, jal::model::argmax(la)},
                                                             {b, jal::model::argmax(lb)}};
                if (on_chip) {
                    const int seqs[] = {a, b};
                    rt->prepare_decode(seqs, true);  // builds both Launchers' steps, runs none
                    EXPECT_EQ(rt->sequence_length(a), 5u);
                    std::vector<std::vector<int32_t>> seen;
                    chosen[1] = rt->decode_greedy(rows, kSteps, [&](std::span<const int32_t> t) {
                        seen.emplace_back(t.begin(), t.end());
                    });
                    EXPECT_EQ(seen, chosen[1]) << "on_step saw every step, in order";
                    // The argmax ran on the chip: a kernel more a step, or (staged) a stage
                    // of the step's one dispatch.
                    EXPECT_EQ(rt->last().dispatches,
                              kSteps * (host_step_dispatches + (staged ? 0 : 1)));
                } else {
                    for (uint32_t s = 0; s < kSteps; s++) {
                        const std::vector<std::vector<float>> l = rt->decode(rows);
                        host_step_dispatches = rt->last().dispatches;
                        for (size_t i = 0; i < rows.size(); i++)
                            rows[i].second = jal::model::argmax(l[i]);
                        chosen[0].push_back({rows[0].second, rows[1].second});
                    }
                }
                EXPECT_EQ(rt->sequence_length(a), 5u + kSteps);
                EXPECT_EQ(rt->sequence_length(b), 3u + kSteps);
                const std::pair<int, int32_t> next[2] = {{a, chosen[on_chip].back()[0]},
                                                         {b, chosen[on_chip].back()[1]}};
                after[on_chip] = rt->decode(next);
            }
            ASSERT_EQ(chosen[0].size(), kSteps);
            EXPECT_EQ(chosen[1], chosen[0]);
            expect_same_bits(after[0], after[1]);
        }
}

// decode_greedy's arguments are checked before anything runs.
TEST_F(ModelRuntime, GreedyDecodingRefusesATokenOutsideTheVocabulary)
{
    auto rt = open("tiny", Numerics::native);
    const int a = rt->create_sequence();
    rt->prefill(a, std::vector<int32_t>{1, 2, 3});
    const std::pair<int, int32_t> bad[1] = {{a, 1 << 20}};
    EXPECT_THROW(rt->decode_greedy(bad, 3, {}), jal::Error);
    EXPECT_EQ(rt->sequence_length(a), 3u);
    const std::pair<int, int32_t> ok[1] = {{a, 4}};
    EXPECT_TRUE(rt->decode_greedy(ok, 0, {}).empty());
    EXPECT_EQ(rt->decode_greedy(ok, 2, {}).size(), 2u);
    EXPECT_EQ(rt->sequence_length(a), 5u);
}

// A prompt chunk mixed into a decode step computes exactly what the chunk's prefill and
// the step's decode compute apart: the same logits bit for bit, and the same caches after
// (the next step agrees too). Two sequences decode while a third's prompt runs, on 4
// slices ("small" has two slice groups: the decode rows' attention runs in lanes, the
// chunk's on every slice before them), staged and not, in both numerics.
TEST_F(ModelRuntime, MixedStepGivesTheLogitsOfPrefillAndDecodeApart)
{
    for (Numerics n : {Numerics::native, Numerics::ggml})
        for (bool staged : {false, true}) {
            SCOPED_TRACE(std::string(jal::model::numerics_name(n)) + (staged ? " staged" : ""));
            std::vector<std::vector<float>> logits[2];
            uint64_t passes[2] = {0, 0};
            for (int mixed = 0; mixed < 2; mixed++) {
                auto rt = jal::model::Runtime::open(model_file("small", "f32"), *device_,
                                                    small_on_4_slices(n, 3, staged));
                int a = rt->create_sequence(), b = rt->create_sequence(), c = rt->create_sequence();
                rt->prefill(a, std::vector<int32_t>{1, 2, 3, 4, 5});
                rt->prefill(c, std::vector<int32_t>{11, 12});
                const std::vector<int32_t> chunk = {9, 8, 7, 6};
                std::vector<std::pair<int, int32_t>> step = {{a, 6}, {c, 13}};
                if (mixed) {
                    logits[mixed] = rt->mixed_step(step, b, chunk);
                    passes[mixed] = rt->last().dispatches;
                } else {
                    logits[mixed] = rt->decode(step);
                    passes[mixed] = rt->last().dispatches;
                    logits[mixed].push_back(rt->prefill(b, chunk));
                    passes[mixed] += rt->last().dispatches;
                }
                EXPECT_EQ(rt->sequence_length(b), 4u);
                EXPECT_EQ(rt->sequence_length(a), 6u);
                std::vector<std::pair<int, int32_t>> next = {{a, 7}, {b, 5}, {c, 14}};
                for (std::vector<float>& l : rt->decode(next)) logits[mixed].push_back(l);
            }
            // One pass, not a prefill and a decode: fewer dispatches (one, staged).
            EXPECT_LT(passes[1], passes[0]);
            if (staged) {
                EXPECT_EQ(passes[1], 1u);
            }
            ASSERT_EQ(logits[0].size(), 6u);
            expect_same_bits(logits[0], logits[1]);
        }
}

// What a mixed step refuses, with a reason: too many rows, a sequence both prefilling and
// decoding, an empty chunk.
TEST_F(ModelRuntime, MixedStepRejectsWhatItCannotRun)
{
    jal::model::RuntimeOptions o;
    o.max_sequences = 2;
    o.n_ctx = 64;
    o.max_batch_tokens = 8;
    auto rt = jal::model::Runtime::open(model_file("tiny", "f32"), *device_, o);
    int a = rt->create_sequence(), b = rt->create_sequence();
    rt->prefill(a, std::vector<int32_t>{1, 2});
    std::vector<std::pair<int, int32_t>> step = {{a, 3}};
    auto message = [&](auto&& f) {
        try {
            f();
        } catch (const jal::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message([&] {
                  rt->mixed_step(step, b, std::vector<int32_t>(8, 1));
              }).find("a step of 8 prompt and 1 decode rows, at most 8 rows"),
              std::string::npos);
    EXPECT_NE(message([&] {
                  rt->mixed_step(step, a, std::vector<int32_t>{1});
              }).find("both prefills and decodes"),
              std::string::npos);
    EXPECT_NE(message([&] {
                  rt->mixed_step(step, b, std::vector<int32_t>{});
              }).find("at least one token"),
              std::string::npos);
    EXPECT_EQ(rt->sequence_length(a), 2u);  // nothing ran
    EXPECT_EQ(rt->sequence_length(b), 0u);
}

TEST_F(ModelRuntime, SeededSamplingIsReproducible)
{
    auto rt = open("tiny", Numerics::native, 1);
    auto generate = [&](uint64_t seed) {
        jal::model::Sampler sampler({1.0f, 0.9f, seed});
        int seq = rt->create_sequence();
        std::vector<int32_t> out = {
            sampler.sample(rt->prefill(seq, std::vector<int32_t>{5, 6, 7}))};
        for (int s = 0; s < 5; s++) {
            std::vector<std::pair<int, int32_t>> b = {{seq, out.back()}};
            out.push_back(sampler.sample(rt->decode(b)[0]));
        }
        rt->free_sequence(seq);
        return out;
    };
    EXPECT_EQ(generate(42), generate(42));
}

// The C API a serving runtime uses gives the C++ runtime's tokens.
TEST_F(ModelRuntime, CApiGeneratesTheSameTokens)
{
    const std::vector<int32_t> prompt = {3, 1, 4, 1, 5};
    std::vector<int32_t> want;
    {
        auto rt = open("tiny", Numerics::ggml, 1);
        int seq = rt->create_sequence();
        want.push_back(jal::model::argmax(rt->prefill(seq, prompt)));
        for (int s = 0; s < 3; s++) {
            std::vector<std::pair<int, int32_t>> b = {{seq, want.back()}};
            want.push_back(jal::model::argmax(rt->decode(b)[0]));
        }
    }
    jal_model_options_t o{};
    o.struct_size = sizeof o;
    o.numerics = JAL_MODEL_NUMERICS_GGML;
    o.slices = 4;
    o.max_sequences = 2;
    o.n_ctx = 64;
    o.max_batch_tokens = 32;
    const std::string dir = emu().socket_dir();
    o.emu_dir = dir.c_str();
    jal_model_t m = nullptr;
    ASSERT_EQ(jal_model_open(model_file("tiny").c_str(), 0, &o, &m), JAL_STATUS_OK)
        << jal_model_last_error();
    jal_model_info_t info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(jal_model_get_info(m, &info), JAL_STATUS_OK);
    std::vector<float> logits(info.n_vocab);
    int32_t seq = -1;
    ASSERT_EQ(jal_model_sequence_create(m, &seq), JAL_STATUS_OK);
    ASSERT_EQ(jal_model_prefill(m, seq, prompt.data(), static_cast<uint32_t>(prompt.size()),
                                logits.data()),
              JAL_STATUS_OK);
    jal_sampler_t sampler = nullptr;
    ASSERT_EQ(jal_sampler_create(0.0f, 1.0f, 1, &sampler), JAL_STATUS_OK);
    std::vector<int32_t> got;
    ASSERT_EQ(jal_model_prepare_step(m, &seq, 1), JAL_STATUS_OK) << jal_model_last_error();
    for (int s = 0; s < 4; s++) {
        int32_t tok = -1;
        ASSERT_EQ(jal_sampler_sample(sampler, logits.data(), info.n_vocab, &tok), JAL_STATUS_OK);
        got.push_back(tok);
        if (s == 0) {
            int32_t ids[3];
            float lps[3];
            ASSERT_EQ(jal_model_top_logprobs(logits.data(), info.n_vocab, 3, ids, lps),
                      JAL_STATUS_OK);
            EXPECT_EQ(ids[0], tok);
        }
        if (s < 3) {
            ASSERT_EQ(jal_model_step(m, &seq, &tok, 1, logits.data()), JAL_STATUS_OK)
                << jal_model_last_error();
        }
    }
    EXPECT_EQ(got, want);
    // The same steps again from the prompt, chosen on the chip.
    int32_t again = -1;
    ASSERT_EQ(jal_model_sequence_create(m, &again), JAL_STATUS_OK);
    ASSERT_EQ(jal_model_prefill(m, again, prompt.data(), static_cast<uint32_t>(prompt.size()),
                                logits.data()),
              JAL_STATUS_OK);
    std::vector<int32_t> on_chip(3);
    ASSERT_EQ(jal_model_decode_greedy(m, &again, &want[0], 1, 3, on_chip.data()), JAL_STATUS_OK)
        << jal_model_last_error();
    EXPECT_EQ(on_chip, std::vector<int32_t>(want.begin() + 1, want.end()));
    EXPECT_NE(jal_model_decode_greedy(m, &again, &want[0], 1, 3, nullptr), JAL_STATUS_OK);
    EXPECT_EQ(jal_model_sequence_free(m, again), JAL_STATUS_OK);
    jal_model_totals_t t{};
    ASSERT_EQ(jal_model_totals(m, 0, &t), JAL_STATUS_OK);
    EXPECT_GT(t.modelled_ns, 0u);
    // A bad sequence is an error with a message, not a crash.
    int32_t bad = 99, tok = 1;
    EXPECT_EQ(jal_model_step(m, &bad, &tok, 1, logits.data()), JAL_STATUS_INVALID_FIELD);
    EXPECT_NE(std::string(jal_model_last_error()), "");
    EXPECT_EQ(jal_model_prepare_step(m, &bad, 1), JAL_STATUS_INVALID_FIELD);
    EXPECT_NE(jal_model_prepare_step(m, nullptr, 1), JAL_STATUS_OK);
    EXPECT_EQ(jal_model_sequence_free(m, seq), JAL_STATUS_OK);
    EXPECT_EQ(jal_sampler_destroy(sampler), JAL_STATUS_OK);
    EXPECT_EQ(jal_model_close(m), JAL_STATUS_OK);
}

TEST(ModelSampler, SeedDecidesTheDraws)
{
    std::vector<float> logits(64);
    for (size_t i = 0; i < logits.size(); i++) logits[i] = static_cast<float>(std::sin(i * 0.7));
    auto draws = [&](uint64_t seed, float top_p) {
        jal::model::Sampler s({1.0f, top_p, seed});
        std::vector<int32_t> out;
        for (int i = 0; i < 32; i++) out.push_back(s.sample(logits));
        return out;
    };
    EXPECT_EQ(draws(1, 0.9f), draws(1, 0.9f));
    EXPECT_NE(draws(1, 1.0f), draws(2, 1.0f));
    // top_p 0 keeps only the most likely id: greedy.
    for (int32_t t : draws(3, 0.0f)) EXPECT_EQ(t, jal::model::argmax(logits));
    auto top = jal::model::top_logprobs(logits, 3);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].first, jal::model::argmax(logits));
    EXPECT_GE(top[0].second, top[1].second);
    EXPECT_LT(top[0].second, 0.0f);
}

// Timing only: the modelled time is there, and nothing was written: the runtime's own
// device memory (activations, KV caches, weights) reads back as zeros.
// Timing only, as one chip of a tray of 2 (RuntimeOptions::tray_chips): the chip runs its
// share of heads, experts and vocabulary, config() still reports the whole model, and every
// pass adds the exchange the cost function prices: two all-reduces of the rows' residual
// stream a layer and one of the sampled rows' (value, index) pairs. A real model, and a
// split the heads do not divide, are refused.
TEST_F(ModelRuntime, TimingOnlyTrayShareAddsTheExchange)
{
    const jal::model::GptOssConfig c =
        jal::model::synthetic_config(*jal::model::synthetic_preset("small"));
    std::vector<uint64_t> sizes;
    jal::model::RuntimeOptions o;
    // 64 slices and one KV head on this chip: 64 slice groups, more than a client may open
    // queues for, so groups share the runtime's lane queues.
    o.timing_only = true, o.tray_chips = 2, o.slices = 64, o.max_sequences = 2, o.n_ctx = 32;
    o.tray_allreduce_ns = [&](uint64_t bytes) {
        sizes.push_back(bytes);
        return 1000 + bytes;
    };
    auto rt = jal::model::Runtime::open_shape(c, *device_, o);
    EXPECT_EQ(rt->config().n_head, c.n_head);
    EXPECT_EQ(rt->config().n_expert, c.n_expert);
    const int a = rt->create_sequence(), b = rt->create_sequence();
    sizes.clear();
    rt->prefill(a, std::vector<int32_t>(12, c.n_vocab - 1));  // the model's last token
    // Priced once a size: the chunk's 12 rows of x, then the one sampled row.
    EXPECT_EQ(sizes, (std::vector<uint64_t>{12u * c.n_embd * 4, 8u}));
    EXPECT_EQ(rt->last().exchange_ns, 2 * c.n_layer * (1000 + 12 * c.n_embd * 4) + 1008);
    EXPECT_GT(rt->last().modelled_ns, rt->last().exchange_ns);
    rt->assume_length(b, 12);
    sizes.clear();
    const std::vector<std::pair<int, int32_t>> batch = {{a, 0}, {b, 0}};
    rt->decode(batch);
    EXPECT_EQ(rt->last().exchange_ns, 2 * c.n_layer * (1000 + 2 * c.n_embd * 4) + 1016);

    jal::model::RuntimeOptions three = o;
    three.tray_chips = 3;  // 8 heads, 2 KV heads and 8 experts do not split 3 ways
    EXPECT_THROW(jal::model::Runtime::open_shape(c, *device_, three), jal::Error);
    jal::model::RuntimeOptions real;
    real.tray_chips = 2, real.slices = 4;
    EXPECT_THROW(jal::model::Runtime::open(model_file("small"), *device_, real), jal::Error);
}

// Timing only, a tray of 2 sharing the experts either way (RuntimeOptions::tray_experts):
// automatic keeps the layout whose decode step the timing model finds faster, and reports
// it; experts that do not split over the chips leave only the striped layout, which opens.
TEST_F(ModelRuntime, TimingOnlyTrayKeepsTheFasterExpertLayout)
{
    jal::model::GptOssConfig c =
        jal::model::synthetic_config(*jal::model::synthetic_preset("small"));
    jal::model::RuntimeOptions o;
    o.timing_only = true, o.tray_chips = 2, o.slices = 8, o.n_ctx = 32;
    using TE = jal::model::TrayExperts;
    for (uint32_t users : {1u, 4u}) {
        o.max_sequences = users;
        std::map<TE, uint64_t> step_ns;
        for (TE t : {TE::experts, TE::striped}) {
            jal::model::RuntimeOptions p = o;
            p.tray_experts = t;
            auto rt = jal::model::Runtime::open_shape(c, *device_, p);
            EXPECT_EQ(rt->options().tray_experts, t);
            EXPECT_EQ(rt->config().n_expert, c.n_expert);
            std::vector<std::pair<int, int32_t>> batch;
            for (uint32_t i = 0; i < users; i++) {
                batch.emplace_back(rt->create_sequence(), 0);
                rt->assume_length(batch.back().first, 16);
            }
            rt->decode(batch);
            step_ns[t] = rt->last().modelled_ns;
            EXPECT_GT(step_ns[t], 0u);
        }
        auto rt = jal::model::Runtime::open_shape(c, *device_, o);
        EXPECT_EQ(rt->options().tray_experts,
                  step_ns[TE::striped] < step_ns[TE::experts] ? TE::striped : TE::experts)
            << users << " users: experts " << step_ns[TE::experts] << " ns, striped "
            << step_ns[TE::striped] << " ns";
    }
    c.n_expert = 3;  // does not split over 2 chips: only striped opens
    o.max_sequences = 1;
    jal::model::RuntimeOptions by_experts = o;
    by_experts.tray_experts = TE::experts;
    EXPECT_THROW(jal::model::Runtime::open_shape(c, *device_, by_experts), jal::Error);
    EXPECT_EQ(jal::model::Runtime::open_shape(c, *device_, o)->options().tray_experts, TE::striped);
}

TEST_F(ModelRuntime, TimingOnlyWritesNothing)
{
    jal::model::GptOssConfig c =
        jal::model::synthetic_config(*jal::model::synthetic_preset("small"));
    jal::model::RuntimeOptions o;
    o.timing_only = true;
    o.slices = 4;
    o.max_sequences = 2;
    o.n_ctx = 32;
    o.max_batch_tokens = 16;
    auto rt = jal::model::Runtime::open_shape(c, *device_, o);
    int a = rt->create_sequence(), b = rt->create_sequence();
    rt->prefill(a, std::vector<int32_t>(10, 3));
    EXPECT_GT(rt->last().modelled_ns, 0u);
    EXPECT_GT(rt->last().dispatches, 0u);
    rt->assume_length(b, 10);
    std::vector<std::pair<int, int32_t>> batch = {{a, 1}, {b, 2}};
    auto logits = rt->decode(batch);
    EXPECT_GT(rt->last().modelled_ns, 0u);
    for (auto& row : logits)
        for (float v : row) ASSERT_EQ(v, 0.0f);
    std::vector<uint8_t> bytes = rt->read_back_data_for_test();
    ASSERT_GT(bytes.size(), 0u);
    EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](uint8_t v) { return v == 0; }));
}

// A whole decode step is never modelled faster than the chip: its bytes at 240 GB/s a slice
// and its FLOPs at the MXFP4 peak of the slices it runs on (the published chip facts,
// ARCHITECTURE.md §12, not the emulator's constants). Fused and unfused layouts, one and
// several sequences, timing-only and with data.
TEST_F(ModelRuntime, AStepIsNeverFasterThanTheRoofline)
{
    constexpr double kSliceBytesPerNs = 15.36e12 / 64 / 1e9, kSliceFlopsPerNs = 13.4e15 / 64 / 1e9;
    auto check = [&](jal::model::Runtime& rt, const char* what) {
        SCOPED_TRACE(what);
        const jal::model::ChipTotals& t = rt.last();
        ASSERT_GT(t.hbm_bytes, 0u);
        EXPECT_GE(double(t.modelled_ns), t.hbm_bytes / (rt.slices() * kSliceBytesPerNs));
        EXPECT_GE(double(t.modelled_ns), t.flops / (rt.slices() * kSliceFlopsPerNs));
    };
    for (jal::model::ExpertLayout layout :
         {jal::model::ExpertLayout::experts, jal::model::ExpertLayout::both}) {
        jal::model::RuntimeOptions o;
        o.slices = 8;
        o.max_sequences = 3;
        o.expert_layout = layout;
        o.n_ctx = 64;
        auto rt = jal::model::Runtime::open(model_file("small", "f32"), *device_, o);
        int a = rt->create_sequence(), b = rt->create_sequence();
        rt->prefill(a, std::vector<int32_t>{1, 2, 3, 4, 5, 6});
        check(*rt, "prefill");
        rt->prefill(b, std::vector<int32_t>{7, 8});
        std::vector<std::pair<int, int32_t>> one = {{a, 9}}, two = {{a, 10}, {b, 11}};
        rt->decode(one);
        check(*rt, "decode, one sequence");
        rt->decode(two);
        check(*rt, "decode, two sequences");
    }
    jal::model::RuntimeOptions o;
    o.timing_only = true;
    o.slices = 8;
    o.n_ctx = 64;
    auto rt = jal::model::Runtime::open_shape(
        jal::model::synthetic_config(*jal::model::synthetic_preset("small")), *device_, o);
    int a = rt->create_sequence();
    rt->prefill(a, std::vector<int32_t>(20, 3));
    check(*rt, "timing-only prefill");
    std::vector<std::pair<int, int32_t>> one = {{a, 1}};
    rt->decode(one);
    check(*rt, "timing-only decode");
}

}  // namespace
