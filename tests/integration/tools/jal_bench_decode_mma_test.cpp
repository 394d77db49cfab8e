// `jal-bench decode-mma MODEL` (tools/jal-bench/decode_mma_bench.hpp): the matrices and bytes of
// a batch-1 decode step, counted here from the GGUF itself, for each dense type; one row for
// one thread and one for all; the table form; models it does not take refused with a message
// (no timing is judged: the machines are shared).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

#include <jal/model/gguf.hpp>
#include <jal/model/gpt_oss_config.hpp>

#include "../serve/made_model.hpp"
#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

using json = nlohmann::json;
using jal::test::bin_path;
using jal::test::run_command;

// The weight bytes of a batch-1 step: each layer's dense matrices whole, expert_used_count of
// each expert tensor's expert_count experts, the output head.
uint64_t step_bytes(const std::string& path, uint32_t& matrices)
{
    const auto f = jal::model::GgufFile::open(path);
    const auto c = jal::model::read_gpt_oss_config(f);
    uint64_t bytes = 0;
    matrices = 0;
    for (uint32_t il = 0; il < c.n_layer; il++) {
        for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate_inp"}) {
            bytes += f.find_tensor(fmt::format("blk.{}.{}.weight", il, w))->data.size();
            matrices++;
        }
        for (const char* w : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
            bytes += f.find_tensor(fmt::format("blk.{}.{}.weight", il, w))->data.size() /
                     c.n_expert * c.n_expert_used;
            matrices += c.n_expert_used;
        }
    }
    bytes += f.find_tensor("output.weight")->data.size();
    matrices++;
    return bytes;
}

TEST(JalBenchDecodeMma, CountsAStepsMatricesAndTimesOneAndTwoThreads)
{
    const jal::test::MadeModel m("jal-bench-decode-mma", "small.gguf",
                                 {"--preset", "small", "--seed", "1"});
    ASSERT_EQ(m.mkmodel.exit_code, 0) << m.mkmodel.err;
    const auto r = run_command(
        {bin_path("jal-bench"), "decode-mma", m.path, "--threads", "2", "--quick", "--json", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json d = json::parse(r.out);
    uint32_t matrices = 0;
    const uint64_t bytes = step_bytes(m.path, matrices);
    EXPECT_EQ(d["bytes"].get<uint64_t>(), bytes);
    EXPECT_EQ(d["matrices"].get<uint32_t>(), matrices);
    ASSERT_EQ(d["rows"].size(), 2u);
    EXPECT_EQ(d["rows"][0]["threads"], 1u);
    EXPECT_EQ(d["rows"][1]["threads"], 2u);
    for (const json& row : d["rows"]) {
        EXPECT_GE(row["steps"].get<unsigned>(), 5u) << row;
        EXPECT_GT(row["step_ms_best"].get<double>(), 0) << row;
        EXPECT_LE(row["step_ms_best"].get<double>(), row["step_ms"].get<double>()) << row;
        EXPECT_NEAR(row["gb_s"].get<double>(), double(bytes) / row["step_ms"].get<double>() / 1e6,
                    1e-6 * row["gb_s"].get<double>())
            << row;
        // F32 dense matrices and MXFP4 experts (jal-mkmodel's defaults), their bytes the step's.
        ASSERT_EQ(row["by_format"].size(), 2u) << row;
        EXPECT_EQ(row["by_format"][0]["dtype"], "f32");
        EXPECT_EQ(row["by_format"][1]["dtype"], "mxfp4");
        EXPECT_EQ(row["by_format"][0]["bytes"].get<uint64_t>() +
                      row["by_format"][1]["bytes"].get<uint64_t>(),
                  bytes);
        for (const json& f : row["by_format"]) EXPECT_GT(f["ms"].get<double>(), 0) << f;
    }
}

// Q8_0 matrices multiply Q8_0 activations (the engine takes no other a against them), the
// half-precision ones F32 activations K-major, as the runtime gives them.
TEST(JalBenchDecodeMma, TakesEveryDenseType)
{
    for (const char* type : {"q8_0", "bf16", "f16"}) {
        const jal::test::MadeModel m(std::string("jal-bench-decode-mma-") + type, "tiny.gguf",
                                     {"--dense-type", type, "--seed", "3"});
        ASSERT_EQ(m.mkmodel.exit_code, 0) << m.mkmodel.err;
        const auto r = run_command({bin_path("jal-bench"), "decode-mma", m.path, "--threads", "2",
                                    "--quick", "--json", "-q"});
        ASSERT_EQ(r.exit_code, 0) << type << ": " << r.err;
        uint32_t matrices = 0;
        EXPECT_EQ(json::parse(r.out)["bytes"].get<uint64_t>(), step_bytes(m.path, matrices))
            << type;
    }
}

TEST(JalBenchDecodeMma, PrintsATable)
{
    const jal::test::MadeModel m("jal-bench-decode-mma-table", "tiny.gguf", {"--seed", "2"});
    ASSERT_EQ(m.mkmodel.exit_code, 0) << m.mkmodel.err;
    const auto r =
        run_command({bin_path("jal-bench"), "decode-mma", m.path, "--threads", "1", "--quick"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("step ms median"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("1 thread(s)"), std::string::npos) << r.err;  // progress on stderr
}

TEST(JalBenchDecodeMma, RefusesAModelOfAnotherArchitecture)
{
    const jal::test::MadeModel m("jal-bench-decode-mma-ds", "ds.gguf",
                                 {"--preset", "ds-tiny", "--seed", "1"});
    ASSERT_EQ(m.mkmodel.exit_code, 0) << m.mkmodel.err;
    const auto r = run_command({bin_path("jal-bench"), "decode-mma", m.path, "--quick", "-q"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("gpt-oss"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
}

TEST(JalBenchDecodeMma, RefusesAMissingFile)
{
    const auto r = run_command(
        {bin_path("jal-bench"), "decode-mma", "/nonexistent/model.gguf", "--quick", "-q"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
}

}  // namespace
