// The transformer kernels' generators: every configuration the model uses (and the edge
// shapes the other tests use) builds a code object the device's validator accepts, with
// the argument table the host calls fill in.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/error.hpp>
#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>
#include <jal/kernels/library/transformer.hpp>

namespace jk = jal::kernels;

namespace {

std::vector<std::string> arg_names(const jk::CodeObject& co)
{
    jal::isa::CodeObjectView view;
    std::string error;
    EXPECT_EQ(jal::isa::parse_code_object(co.bytes, &view, &error), JAL_STATUS_OK)
        << co.name << ": " << error;
    std::vector<std::string> names;
    for (const jal_code_arg& a : view.args) names.emplace_back(a.name);
    return names;
}

void expect_valid(const jk::CodeObject& co)
{
    std::string error;
    EXPECT_EQ(jal::isa::validate_code_object(co.bytes, &error), JAL_STATUS_OK)
        << co.name << ": " << error;
    EXPECT_LE(co.l1_bytes, JAL_SLICE_L1_BYTES);
    EXPECT_FALSE(jal::isa::disassemble(co.bytes).empty());
}

}  // namespace

TEST(TransformerCodegen, RmsNormForGptOss)
{
    jk::CodeObject co = jk::build_rms_norm({.cols = 2880, .eps = 1e-5f});
    expect_valid(co);
    EXPECT_EQ(arg_names(co),
              (std::vector<std::string>{"x", "x_stride", "weight", "out", "out_stride", "rows"}));
    expect_valid(jk::build_rms_norm({.cols = 2880, .out = JAL_DT_BF16, .out_mode = JAL_CVT_GGML}));
}

TEST(TransformerCodegen, SoftmaxWithAndWithoutSinks)
{
    for (bool sinks : {false, true}) {
        jk::CodeObject co = jk::build_softmax({.cols = 100, .scale = 0.125f, .sinks = sinks});
        expect_valid(co);
        EXPECT_EQ(arg_names(co).size(), 8u);
    }
}

TEST(TransformerCodegen, RopeForQueriesAndKeys)
{
    for (uint32_t heads : {64u, 8u})
        expect_valid(jk::build_rope_neox({.n_head = heads, .head_dim = 64}));
}

TEST(TransformerCodegen, SwigluElementwiseAndMoe)
{
    expect_valid(jk::build_swiglu_oai({.cols = 2880}));
    expect_valid(jk::build_elementwise({.op = jk::ElementwiseOp::add, .cols = 2880}));
    expect_valid(
        jk::build_elementwise({.op = jk::ElementwiseOp::mul, .cols = 2880, .broadcast_b = true}));
    expect_valid(jk::build_moe_routing({.n_expert = 32, .k = 4}));
    expect_valid(jk::build_moe_routing({.n_expert = 128, .k = 4}));
    expect_valid(jk::build_moe_combine({.cols = 2880, .k = 4}));
    // The model runtime's prompt combine: blocks of 64 rows, the residual and the norm.
    jk::CodeObject co = jk::build_moe_combine(
        {.cols = 2880, .k = 4, .block_rows = 64, .residual = true, .norm = true});
    expect_valid(co);
    EXPECT_EQ(arg_names(co),
              (std::vector<std::string>{"experts", "expert_stride", "weights", "out", "out_stride",
                                        "rows", "norm_weight", "normed", "normed_stride"}));
}

TEST(TransformerCodegen, AttentionConfigurations)
{
    expect_valid(jk::build_kv_append({.n_head_kv = 8, .head_dim = 64, .n_ctx = 4096}));
    for (uint32_t kv : {64u, 8u, 1u})
        for (uint32_t window : {0u, 128u})
            for (bool sinks : {false, true}) {
                jk::CodeObject co = jk::build_attention({.n_head = 64,
                                                         .n_head_kv = kv,
                                                         .head_dim = 64,
                                                         .n_ctx = 4096,
                                                         .window = window,
                                                         .sinks = sinks});
                expect_valid(co);
                EXPECT_EQ(arg_names(co),
                          (std::vector<std::string>{"q", "q_stride", "out", "out_stride", "rows",
                                                    "pos0", "heads", "sinks"}));
            }
    // flash decoding: 8 key splits a head
    expect_valid(jk::build_attention({.n_head = 64,
                                      .n_head_kv = 8,
                                      .head_dim = 64,
                                      .n_ctx = 4096,
                                      .window = 128,
                                      .sinks = true,
                                      .key_splits = 8}));
}

TEST(TransformerCodegen, BadConfigurationsAreRefused)
{
    EXPECT_THROW(jk::build_rms_norm({.cols = 0}), jal::Error);
    EXPECT_THROW(jk::build_rope_neox({.n_head = 8, .head_dim = 63}), jal::Error);
    EXPECT_THROW(jk::build_attention({.n_head = 12, .n_head_kv = 8, .head_dim = 64, .n_ctx = 16}),
                 jal::Error);
    EXPECT_THROW(jk::build_moe_routing({.n_expert = 4, .k = 5}), jal::Error);
    EXPECT_THROW(jk::build_rms_norm({.cols = 64, .out = JAL_DT_F16}), jal::Error);
    EXPECT_THROW(jk::build_moe_combine({.cols = 64, .k = 1, .norm = true}), jal::Error);
}
