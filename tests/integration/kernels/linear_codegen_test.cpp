// The linear kernels' generators: every kernel in the shapes the model and jal-bench use
// (GPT-OSS: hidden 2880, expert width 2880, vocab 201088) and in awkward ones builds a code
// object the device's validator accepts, within L1, with the argument table the host fills.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/error.hpp>
#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>
#include <jal/kernels/library/argmax.hpp>
#include <jal/kernels/library/collective.hpp>
#include <jal/kernels/library/embedding.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/library/quantize.hpp>

namespace jk = jal::kernels;
namespace jl = jal::kernels::linear;

namespace {

std::vector<std::string> valid_args(const jk::CodeObject& co)
{
    std::string error;
    EXPECT_EQ(jal::isa::validate_code_object(co.bytes, &error), JAL_STATUS_OK)
        << co.name << ": " << error;
    EXPECT_LE(co.l1_bytes, JAL_SLICE_L1_BYTES);
    EXPECT_FALSE(jal::isa::disassemble(co.bytes).empty());
    jal::isa::CodeObjectView view;
    EXPECT_EQ(jal::isa::parse_code_object(co.bytes, &view, &error), JAL_STATUS_OK) << error;
    std::vector<std::string> names;
    for (const jal_code_arg& a : view.args) names.emplace_back(a.name);
    return names;
}

}  // namespace

TEST(LinearCodegen, SliceRangeCoversEveryRowOnce)
{
    for (uint32_t total : {1u, 7u, 64u, 2880u, 201088u})
        for (uint32_t slices : {1u, 3u, 8u, 64u}) {
            uint32_t next = 0;
            for (uint32_t s = 0; s < slices; s++) {
                jl::Range r = jl::slice_range(total, slices, s);
                EXPECT_EQ(r.begin, next);
                EXPECT_LE(r.begin, r.end);
                next = r.end;
            }
            EXPECT_EQ(next, total) << total << " over " << slices;
        }
}

TEST(LinearCodegen, GemmEveryFormatAndNumerics)
{
    for (jal_dtype w :
         {JAL_DT_MXFP4, JAL_DT_MXFP8_E4M3, JAL_DT_BF16, JAL_DT_F16, JAL_DT_Q8_0, JAL_DT_F32})
        for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast})
            for (uint32_t m : {1u, 4u, 130u, 512u}) {
                jl::GemmConfig c{
                    .m = m, .n = 2880, .k = 2880, .weight = w, .numerics = n, .bias = m != 4};
                SCOPED_TRACE(jl::gemm_name(c));
                auto names = valid_args(jl::build_gemm(c));
                std::vector<std::string> want{"x", "x_stride", "w_shards", "w_stride"};
                if (c.bias) want.push_back("bias");
                want.insert(want.end(), {"y", "y_stride"});
                EXPECT_EQ(names, want);
            }
}

TEST(LinearCodegen, GemmPlansFitAndPrequantizedXLoadsDirectly)
{
    jl::GemmConfig c{
        .m = 512, .n = 2880, .k = 2880, .weight = JAL_DT_MXFP4, .numerics = jl::Numerics::fast};
    jl::GemmPlan p = jl::plan_gemm(c);
    EXPECT_TRUE(p.convert_x);
    EXPECT_EQ(p.activation, JAL_DT_MXFP4);
    EXPECT_EQ(p.m_chunk, 512u);  // MXFP4 x of 512 rows stays resident: W is read once
    c.x_dtype = JAL_DT_MXFP4;
    p = jl::plan_gemm(c);
    EXPECT_FALSE(p.convert_x);
    EXPECT_LE(p.l1_bytes, JAL_SLICE_L1_BYTES);
    EXPECT_EQ(jl::activation_dtype(JAL_DT_MXFP4, jl::Numerics::ggml), JAL_DT_Q8_0);
}

// llama.cpp's vec_dot_type for F16 and Q8_0 weights in ggml numerics; the matrix engine
// multiplies Q8_0 only by Q8_0, so Q8_0 weights take Q8_0 activations in every mode.
TEST(LinearCodegen, ActivationFormatsOfF16AndQ8_0Weights)
{
    EXPECT_EQ(jl::activation_dtype(JAL_DT_F16, jl::Numerics::native), JAL_DT_F32);
    EXPECT_EQ(jl::activation_dtype(JAL_DT_F16, jl::Numerics::ggml), JAL_DT_F16);
    EXPECT_EQ(jl::activation_dtype(JAL_DT_F16, jl::Numerics::fast), JAL_DT_F16);
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast})
        EXPECT_EQ(jl::activation_dtype(JAL_DT_Q8_0, n), JAL_DT_Q8_0);
    jl::GemmConfig c{.m = 1, .n = 8, .k = 64, .weight = JAL_DT_Q8_0, .x_dtype = JAL_DT_Q8_0};
    EXPECT_FALSE(jl::plan_gemm(c).convert_x);  // already quantized (quantize.hpp): as is
}

TEST(LinearCodegen, GemmRejectsWhatCannotWork)
{
    EXPECT_THROW(jl::build_gemm({.m = 1, .n = 8, .k = 40, .weight = JAL_DT_MXFP4}),
                 jal::Error);  // K % 32
    EXPECT_THROW(jl::build_gemm({.m = 1, .n = 8, .k = 40, .weight = JAL_DT_Q8_0}),
                 jal::Error);  // K % 32
    EXPECT_THROW(jl::build_gemm({.m = 1, .n = 8, .k = 64, .weight = JAL_DT_MXFP8_E5M2}),
                 jal::Error);
    EXPECT_THROW(jl::build_gemm({.m = 1, .n = 8, .k = 64, .weight = JAL_DT_I32}), jal::Error);
    EXPECT_THROW(jl::build_gemm({.m = 0, .n = 8, .k = 64}), jal::Error);
    EXPECT_THROW(
        jl::build_gemm({.m = 1, .n = 8, .k = 64, .weight = JAL_DT_MXFP4, .x_dtype = JAL_DT_BF16}),
        jal::Error);
}

TEST(LinearCodegen, QuantizeEmbeddingArgmaxAllReduce)
{
    for (jal_dtype dt : {JAL_DT_Q8_0, JAL_DT_MXFP8_E4M3, JAL_DT_MXFP4, JAL_DT_BF16})
        EXPECT_EQ(valid_args(jl::build_quantize({.m = 512, .k = 2880, .out = dt})),
                  (std::vector<std::string>{"x", "x_stride", "out", "out_stride"}));
    for (jal_dtype dt : {JAL_DT_F32, JAL_DT_BF16, JAL_DT_F16, JAL_DT_MXFP4, JAL_DT_Q8_0})
        EXPECT_EQ(valid_args(jl::build_embedding(
                      {.tokens = 512, .vocab = 201088, .dim = 2880, .table = dt})),
                  (std::vector<std::string>{"ids", "table", "table_stride", "out", "out_stride"}));
    for (uint32_t rows : {1u, 3u, 64u})
        EXPECT_EQ(valid_args(jl::build_argmax({.rows = rows, .vocab = 201088})),
                  (std::vector<std::string>{"logits", "logits_stride", "out_index", "out_value"}));
    for (uint32_t len : {1u, 2880u, 3000000u})
        EXPECT_EQ(valid_args(jl::build_all_reduce({.length = len})),
                  (std::vector<std::string>{"vectors"}));
}

TEST(LinearCodegen, ExpertGemmUpAndDown)
{
    for (jal_dtype w : {JAL_DT_MXFP4, JAL_DT_F16, JAL_DT_Q8_0})
        for (uint32_t tokens : {1u, 512u})
            for (bool down : {false, true})
                for (jl::Numerics n :
                     {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast}) {
                    jl::ExpertGemmConfig c{.tokens = tokens,
                                           .k = 4,
                                           .experts = 32,
                                           .n = down ? 2880u : 5760u,
                                           .kdim = 2880,
                                           .weight = w,
                                           .numerics = n,
                                           .input_per_pair = down};
                    SCOPED_TRACE(jl::expert_gemm_name(c));
                    EXPECT_EQ(
                        valid_args(jl::build_expert_gemm(c)),
                        (std::vector<std::string>{"x", "x_stride", "ids", "w_shards", "w_stride",
                                                  "expert_stride", "bias", "y", "y_stride"}));
                }
}
