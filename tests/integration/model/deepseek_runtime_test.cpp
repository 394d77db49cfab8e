// The DeepSeek-V3 model runtime (deepseek2: MLA in the absorbed form, group routing with the
// correction bias, the shared expert, dense leading layers, YaRN RoPE on the decoupled dims)
// end to end through a real jal-emu: the synthetic ds-tiny (R1's routing: groups) and
// kimi-tiny (Kimi's: many experts, no groups) presets, the logits of a prefill and greedy
// decode steps against the double-precision host pass of tests/reference/deepseek
// (itself checked against llama.cpp there), in both numerics.
//
// Tolerances as for GPT-OSS (model_runtime_test.cpp): F32 on the chip against double,
// kTol × max(1, largest |logit|) in native numerics; in ggml numerics both sides round the
// activations of the MXFP4 experts to Q8_0 and an F32 value that lands on the other side of
// a rounding boundary moves one int8 step, hence kTolGgml (the two modes differ by more:
// checked).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include <jal/jal.hpp>
#include <jal/model/gguf.hpp>
#include <jal/model/jal_model.h>
#include <jal/model/runtime.hpp>
#include <jal/model/synthetic_deepseek.hpp>
#include <jal/model/synthetic_gpt_oss.hpp>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"
#include "reference/deepseek/deepseek_forward.hpp"

namespace {

namespace fs = std::filesystem;
using jal::model::KvType;
using jal::model::Numerics;

constexpr double kTol = 2e-4;
constexpr double kTolGgml = 2e-3;

struct ModelDir {
    fs::path path = fs::temp_directory_path() / ("jal-deepseek-test-" + std::to_string(::getpid()));
    ModelDir() { fs::create_directories(path); }
    ~ModelDir()
    {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

// The preset with seed 11; `dense`: jal-mkmodel's --dense-type (every matrix but the MXFP4
// experts).
std::string model_file(const std::string& preset, const std::string& dense = "f32")
{
    static const ModelDir dir;
    const fs::path p = dir.path / (preset + "-" + dense + ".gguf");
    if (!fs::exists(p)) {
        auto o = *jal::model::synthetic_deepseek_preset(preset);
        o.seed = 11;
        o.dense_type = *jal::model::synthetic_dense_type(dense);
        jal::model::write_synthetic_deepseek(p.string(), o);
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

class DeepseekRuntime : public jal::test::EmuTest {
protected:
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
                                              const std::string& dense = "f32",
                                              KvType kv = KvType::f32)
    {
        jal::model::RuntimeOptions o;
        o.numerics = n;
        o.kv_type = kv;
        o.max_sequences = 2;
        o.n_ctx = 64;
        o.max_batch_tokens = 16;  // a 20-token prompt runs in two chunks
        o.slices = 4;
        return jal::model::Runtime::open(model_file(preset, dense), *device_, o);
    }
    void check_against_reference(const std::string& preset, Numerics n, uint32_t prompt_len,
                                 uint32_t steps, const std::string& dense = "f32",
                                 KvType kv = KvType::f32)
    {
        auto rt = open(preset, n, dense, kv);
        const jal::model::GgufFile file = jal::model::GgufFile::open(model_file(preset, dense));
        const jal::test::DeepseekReference ref(file, n == Numerics::ggml, false, kv == KvType::f16);
        auto rseq = ref.new_sequence();
        const double tol = n == Numerics::ggml ? kTolGgml : kTol;
        std::vector<int32_t> prompt;
        for (uint32_t i = 0; i < prompt_len; i++)
            prompt.push_back(static_cast<int32_t>((i * 37 + 11) % rt->config().n_vocab));
        const int seq = rt->create_sequence();
        std::vector<float> got = rt->prefill(seq, prompt);
        std::vector<double> want = ref.forward(rseq, prompt);
        double scale = 1;
        double d = max_abs_diff(got, want, &scale);
        EXPECT_LE(d, tol * scale) << preset << " prefill of " << prompt_len << " tokens";
        std::printf("[ %s %s ] prefill: max |logit diff| %.3g (scale %.3g)\n", preset.c_str(),
                    jal::model::numerics_name(n), d, scale);
        {
            const jal::test::DeepseekReference other(file, n != Numerics::ggml);
            auto oseq = other.new_sequence();
            const std::vector<double> o = other.forward(oseq, prompt);
            const std::vector<float> of(o.begin(), o.end());
            double s2 = 1;
            EXPECT_GT(max_abs_diff(of, want, &s2), kTolGgml * s2) << "the numerics should differ";
        }
        for (uint32_t s = 0; s < steps; s++) {
            const int32_t tok = argmax(want);
            const std::vector<std::pair<int, int32_t>> batch = {{seq, tok}};
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

}  // namespace

TEST_F(DeepseekRuntime, DsTinyMatchesReferenceNative)
{
    check_against_reference("ds-tiny", Numerics::native, 20, 4);
}
TEST_F(DeepseekRuntime, DsTinyMatchesReferenceGgml)
{
    check_against_reference("ds-tiny", Numerics::ggml, 20, 4);
}
TEST_F(DeepseekRuntime, KimiTinyMatchesReferenceNative)
{
    check_against_reference("kimi-tiny", Numerics::native, 20, 4);
}
TEST_F(DeepseekRuntime, KimiTinyMatchesReferenceGgml)
{
    check_against_reference("kimi-tiny", Numerics::ggml, 20, 4);
}

// The matrices other than the experts as llama.cpp's own GGUFs often have them (BF16, the
// published R1's and Kimi K2.5's type): the chip decodes them exactly, so in native numerics
// it keeps to the host pass as with F32 ones. (In ggml numerics llama.cpp also rounds
// q_nope and the latent to BF16 before the absorbed k_b/v_b, which k_abs/v_abs in F32 do
// not: docs/deepseek.md §7.)
TEST_F(DeepseekRuntime, DsTinyBf16DenseMatchesReferenceNative)
{
    check_against_reference("ds-tiny", Numerics::native, 20, 4, "bf16");
}

// An F16 latent cache (--kv-type f16): the chip rounds each appended entry to F16 as the
// host pass does, and agrees with it in both numerics; an F32 host pass is further off than
// the tolerance would hide (checked below), so the rounding is really there.
TEST_F(DeepseekRuntime, DsTinyF16CacheMatchesReferenceNative)
{
    check_against_reference("ds-tiny", Numerics::native, 20, 4, "f32", KvType::f16);
}
TEST_F(DeepseekRuntime, KimiTinyF16CacheMatchesReferenceGgml)
{
    check_against_reference("kimi-tiny", Numerics::ggml, 20, 4, "f32", KvType::f16);
}
TEST_F(DeepseekRuntime, AnF16CacheIsNotTheF32One)
{
    auto rt = open("ds-tiny", Numerics::native, "f32", KvType::f16);
    const jal::model::GgufFile file = jal::model::GgufFile::open(model_file("ds-tiny", "f32"));
    const jal::test::DeepseekReference f32_cache(file, false);
    auto rseq = f32_cache.new_sequence();
    std::vector<int32_t> prompt;
    for (uint32_t i = 0; i < 20; i++)
        prompt.push_back(static_cast<int32_t>((i * 37 + 11) % rt->config().n_vocab));
    const std::vector<float> got = rt->prefill(rt->create_sequence(), prompt);
    double scale = 1;
    EXPECT_GT(max_abs_diff(got, f32_cache.forward(rseq, prompt), &scale), kTol * scale);
}

// Continuous batching: two sequences of different lengths decode in one step, each against
// its own reference pass (their caches on different slices).
TEST_F(DeepseekRuntime, TwoSequencesDecodeTogether)
{
    auto rt = open("ds-tiny", Numerics::native);
    const jal::model::GgufFile file = jal::model::GgufFile::open(model_file("ds-tiny"));
    const jal::test::DeepseekReference ref(file, false);
    const std::vector<std::vector<int32_t>> prompts = {{5, 9, 200, 3, 77},
                                                       {13, 1, 250, 42, 8, 8, 91, 17, 2}};
    std::vector<int> seqs;
    std::vector<jal::test::DeepseekReference::Sequence> rseqs;
    std::vector<std::vector<double>> want;
    for (const auto& p : prompts) {
        seqs.push_back(rt->create_sequence());
        rt->prefill(seqs.back(), p);
        rseqs.push_back(ref.new_sequence());
        want.push_back(ref.forward(rseqs.back(), p));
    }
    for (int step = 0; step < 3; step++) {
        std::vector<std::pair<int, int32_t>> batch;
        for (size_t i = 0; i < seqs.size(); i++) batch.push_back({seqs[i], argmax(want[i])});
        const auto got = rt->decode(batch);
        ASSERT_EQ(got.size(), 2u);
        for (size_t i = 0; i < seqs.size(); i++) {
            want[i] = ref.forward(rseqs[i], {batch[i].second});
            double scale = 1;
            EXPECT_LE(max_abs_diff(got[i], want[i], &scale), kTol * scale)
                << "sequence " << i << " step " << step;
        }
    }
    EXPECT_EQ(rt->sequence_length(seqs[0]), 8u);
    EXPECT_EQ(rt->sequence_length(seqs[1]), 12u);
}

// decode_greedy (chosen on the host here) gives the tokens of decode() and argmax step by
// step, and last() covers every step.
TEST_F(DeepseekRuntime, GreedyDecodingChoosesTheArgmaxOfEachStep)
{
    std::vector<std::vector<int32_t>> chosen[2];
    uint64_t step_dispatches = 0;
    for (int greedy = 0; greedy < 2; greedy++) {
        auto rt = open("ds-tiny", Numerics::native);
        const int a = rt->create_sequence(), b = rt->create_sequence();
        std::vector<std::pair<int, int32_t>> rows = {
            {a, jal::model::argmax(rt->prefill(a, std::vector<int32_t>{5, 9, 200}))},
            {b, jal::model::argmax(rt->prefill(b, std::vector<int32_t>{13, 1}))}};
        if (greedy) {
            chosen[1] = rt->decode_greedy(rows, 3, {});
            EXPECT_EQ(rt->last().dispatches, 3 * step_dispatches);
        } else {
            for (int s = 0; s < 3; s++) {
                const auto l = rt->decode(rows);
                step_dispatches = rt->last().dispatches;
                for (size_t i = 0; i < rows.size(); i++) rows[i].second = jal::model::argmax(l[i]);
                chosen[0].push_back({rows[0].second, rows[1].second});
            }
        }
        EXPECT_EQ(rt->sequence_length(a), 6u);
        EXPECT_EQ(rt->sequence_length(b), 5u);
    }
    EXPECT_EQ(chosen[1], chosen[0]);
}

// The C API a serving runtime uses opens a deepseek2 file as it is: its info says what the
// runtime runs (MLA as one KV head of kv_lora_rank + n_rot), and a prefill of each of two
// sequences and decode steps of both together (jal_model_step of n = 2) give the host
// pass's logits.
TEST_F(DeepseekRuntime, CApiDecodesTwoSequencesLikeTheReference)
{
    const jal::model::GgufFile file = jal::model::GgufFile::open(model_file("ds-tiny"));
    const jal::test::DeepseekReference ref(file, false);
    const jal::model::DeepseekConfig& c = ref.config();
    jal_model_options_t o{};
    o.struct_size = sizeof o;
    o.numerics = JAL_MODEL_NUMERICS_NATIVE;
    o.slices = 4;
    o.max_sequences = 2;
    o.n_ctx = 64;
    o.max_batch_tokens = 16;
    const std::string dir = emu().socket_dir();
    o.emu_dir = dir.c_str();
    jal_model_t m = nullptr;
    ASSERT_EQ(jal_model_open(model_file("ds-tiny").c_str(), 0, &o, &m), JAL_STATUS_OK)
        << jal_model_last_error();
    jal_model_info_t info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(jal_model_get_info(m, &info), JAL_STATUS_OK);
    EXPECT_EQ(info.n_layer, c.n_layer);
    EXPECT_EQ(info.n_head, c.n_head);
    EXPECT_EQ(info.n_head_kv, 1u);
    EXPECT_EQ(info.head_dim, c.kv_lora_rank + c.n_rot);
    EXPECT_EQ(info.n_expert, c.n_expert);
    EXPECT_EQ(info.n_expert_used, c.n_expert_used);
    ASSERT_EQ(info.n_vocab, c.n_vocab);

    const std::vector<std::vector<int32_t>> prompts = {{7, 200, 3, 91, 45, 12},
                                                       {250, 1, 9, 9, 64, 30, 18, 5, 77, 140}};
    std::vector<float> logits(2 * info.n_vocab);
    std::vector<int32_t> seqs;
    std::vector<jal::test::DeepseekReference::Sequence> rseqs;
    std::vector<std::vector<double>> want;
    double scale = 1;
    for (const auto& p : prompts) {
        int32_t seq = -1;
        ASSERT_EQ(jal_model_sequence_create(m, &seq), JAL_STATUS_OK);
        ASSERT_EQ(
            jal_model_prefill(m, seq, p.data(), static_cast<uint32_t>(p.size()), logits.data()),
            JAL_STATUS_OK)
            << jal_model_last_error();
        seqs.push_back(seq);
        rseqs.push_back(ref.new_sequence());
        want.push_back(ref.forward(rseqs.back(), p));
        const std::vector<float> got(logits.begin(), logits.begin() + info.n_vocab);
        EXPECT_LE(max_abs_diff(got, want.back(), &scale), kTol * scale)
            << "prefill of sequence " << seqs.size() - 1;
    }
    // The step's programs built ahead change nothing the reference would see.
    ASSERT_EQ(jal_model_prepare_step(m, seqs.data(), 2), JAL_STATUS_OK) << jal_model_last_error();
    for (int step = 0; step < 3; step++) {
        const std::vector<int32_t> toks = {argmax(want[0]), argmax(want[1])};
        ASSERT_EQ(jal_model_step(m, seqs.data(), toks.data(), 2, logits.data()), JAL_STATUS_OK)
            << jal_model_last_error();
        for (size_t i = 0; i < 2; i++) {
            want[i] = ref.forward(rseqs[i], {toks[i]});
            const auto row = logits.begin() + static_cast<std::ptrdiff_t>(i * info.n_vocab);
            const std::vector<float> got(row, row + info.n_vocab);
            EXPECT_LE(max_abs_diff(got, want[i], &scale), kTol * scale)
                << "sequence " << i << " step " << step;
        }
    }
    jal_model_totals_t t{};
    ASSERT_EQ(jal_model_totals(m, 1, &t), JAL_STATUS_OK);
    EXPECT_GT(t.modelled_ns, 0u);
    for (int32_t seq : seqs) EXPECT_EQ(jal_model_sequence_free(m, seq), JAL_STATUS_OK);
    EXPECT_EQ(jal_model_close(m), JAL_STATUS_OK);
}

// `jal-run FILE` with no option (the chip from JAL_EMU_DIR, as a user's shell has it): its
// defaults (prompt ids 1..8, 16 greedy tokens, native numerics) print the host pass's
// greedy continuation as ids.
TEST_F(DeepseekRuntime, JalRunTakesTheFileAlone)
{
    const std::string model = model_file("ds-tiny");
    const jal::test::CommandResult r = jal::test::run_command(
        {jal::test::bin_path("jal-run"), model}, {"JAL_EMU_DIR=" + emu().socket_dir()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream first_line(r.out.substr(0, r.out.find('\n')));
    std::vector<int32_t> got;
    for (int32_t id; first_line >> id;) got.push_back(id);

    const jal::model::GgufFile file = jal::model::GgufFile::open(model);
    const jal::test::DeepseekReference ref(file, false);
    auto rseq = ref.new_sequence();
    std::vector<int32_t> want = {argmax(ref.forward(rseq, {1, 2, 3, 4, 5, 6, 7, 8}))};
    while (want.size() < 16) want.push_back(argmax(ref.forward(rseq, {want.back()})));
    EXPECT_EQ(got, want) << r.out;
}

// The pass as one staged dispatch (RuntimeOptions::staged, the default) gives the bits of
// one dispatch a kernel.
TEST_F(DeepseekRuntime, StagedPassGivesTheLogitsOfOneDispatchAKernel)
{
    const std::vector<int32_t> prompt = {4, 8, 15, 16, 23, 42, 7};
    std::vector<std::vector<float>> out;
    std::vector<uint64_t> dispatches;
    for (bool staged : {true, false}) {
        jal::model::RuntimeOptions o;
        o.max_sequences = 1, o.n_ctx = 32, o.slices = 4, o.staged = staged;
        auto rt = jal::model::Runtime::open(model_file("kimi-tiny"), *device_, o);
        const int seq = rt->create_sequence();
        out.push_back(rt->prefill(seq, prompt));
        const std::vector<std::pair<int, int32_t>> batch = {{seq, 3}};
        out.push_back(rt->decode(batch)[0]);
        dispatches.push_back(rt->last().dispatches);
    }
    EXPECT_EQ(out[0], out[2]);
    EXPECT_EQ(out[1], out[3]);
    EXPECT_EQ(dispatches[0], 1u);
    EXPECT_GT(dispatches[1], 40u);
}

// Timing only, as one chip of a tray of 2 (RuntimeOptions::tray_chips): the graph runs on
// the shape alone, charges modelled time and writes nothing to the weights, caches or
// activations. A real model refuses the tray.
TEST_F(DeepseekRuntime, TimingOnlyTrayShareWritesNothing)
{
    const jal::model::GgufFile file = jal::model::GgufFile::open(model_file("ds-tiny"));
    const jal::model::DeepseekConfig cfg = jal::model::read_deepseek_config(file);
    jal::model::RuntimeOptions o;
    o.timing_only = true, o.tray_chips = 2, o.slices = 4, o.max_sequences = 2, o.n_ctx = 32;
    auto rt = jal::model::Runtime::open_shape(cfg, *device_, o);
    EXPECT_EQ(rt->config().n_head, cfg.n_head);  // the model's, not the chip's share
    const int a = rt->create_sequence(), b = rt->create_sequence();
    const std::vector<int32_t> prompt(12, 0);
    const std::vector<float> logits = rt->prefill(a, prompt);
    EXPECT_TRUE(std::all_of(logits.begin(), logits.end(), [](float v) { return v == 0; }));
    EXPECT_GT(rt->last().modelled_ns, 0u);
    rt->assume_length(b, 12);
    const std::vector<std::pair<int, int32_t>> batch = {{a, 0}, {b, 0}};
    rt->decode(batch);
    EXPECT_GT(rt->last().modelled_ns, 0u);
    const std::vector<uint8_t> bytes = rt->read_back_data_for_test();
    EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](uint8_t v) { return v == 0; }));

    jal::model::RuntimeOptions real;
    real.tray_chips = 2, real.slices = 4;
    EXPECT_THROW(jal::model::Runtime::open(model_file("ds-tiny"), *device_, real), jal::Error);
}

// mixed_step (a decode step beside another sequence's prompt chunk): the numbers of the
// decode step and of the prefill, each against its reference pass.
TEST_F(DeepseekRuntime, MixedStepGivesTheDecodeAndThePrefill)
{
    auto rt = open("kimi-tiny", Numerics::native);
    const jal::model::GgufFile file = jal::model::GgufFile::open(model_file("kimi-tiny"));
    const jal::test::DeepseekReference ref(file, false);
    const std::vector<int32_t> pa = {3, 1, 4, 1, 5, 9}, pb = {2, 7, 1, 8, 2, 8, 1, 8};
    const int a = rt->create_sequence(), b = rt->create_sequence();
    rt->prefill(a, pa);
    auto ra = ref.new_sequence(), rb = ref.new_sequence();
    const int32_t tok = argmax(ref.forward(ra, pa));
    const std::vector<std::pair<int, int32_t>> batch = {{a, tok}};
    const auto got = rt->mixed_step(batch, b, pb);
    ASSERT_EQ(got.size(), 2u);
    double scale = 1;
    EXPECT_LE(max_abs_diff(got[0], ref.forward(ra, {tok}), &scale), kTol * scale);
    EXPECT_LE(max_abs_diff(got[1], ref.forward(rb, pb), &scale), kTol * scale);
    EXPECT_EQ(rt->sequence_length(a), 7u);
    EXPECT_EQ(rt->sequence_length(b), 8u);
    EXPECT_GT(rt->last().dispatches, 1u);  // both passes counted
}
