// jal-objdump's listing of every kind of kernel the library builds assembles back to the
// same bytes: assemble(disassemble(x)) == x, on real code (tile DMA, matrix and vector
// instructions, float immediates, loops).
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/isa/assembler.hpp>
#include <jal/isa/disasm.hpp>
#include <jal/kernels/library/argmax.hpp>
#include <jal/kernels/library/attention.hpp>
#include <jal/kernels/library/elementwise.hpp>
#include <jal/kernels/library/embedding.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/library/moe.hpp>
#include <jal/kernels/library/norm.hpp>
#include <jal/kernels/library/quantize.hpp>
#include <jal/kernels/library/rope.hpp>
#include <jal/kernels/library/softmax.hpp>
#include <jal/kernels/library/swiglu.hpp>

namespace {

namespace k = jal::kernels;

std::vector<std::function<k::CodeObject()>> library_kernels()
{
    return {
        [] { return k::build_rms_norm({.cols = 256}); },
        [] { return k::build_softmax({.cols = 128, .sinks = true}); },
        [] { return k::build_swiglu_oai({.cols = 256}); },
        [] { return k::build_rope_neox({.n_head = 4, .head_dim = 64}); },
        [] { return k::build_elementwise({.cols = 64, .broadcast_b = true}); },
        [] { return k::build_moe_routing({.n_expert = 32, .k = 4}); },
        [] { return k::build_moe_combine({.cols = 256, .k = 4, .residual = true}); },
        [] {
            return k::build_attention(
                {.n_head = 8, .n_head_kv = 2, .head_dim = 64, .n_ctx = 256, .sinks = true});
        },
        [] { return k::build_kv_append({.n_head_kv = 2, .head_dim = 64, .n_ctx = 256}); },
        [] { return k::linear::build_gemm({.m = 2, .n = 64, .k = 256}); },
        [] { return k::linear::build_argmax({.rows = 1, .vocab = 1000}); },
        [] { return k::linear::build_embedding({.tokens = 2, .vocab = 100, .dim = 64}); },
        [] { return k::linear::build_quantize({.m = 2, .k = 64}); },
        [] {
            return k::linear::build_expert_gemm(
                {.tokens = 2, .k = 2, .experts = 4, .n = 64, .kdim = 64});
        },
    };
}

TEST(AssemblerLibrary, ObjdumpOfEveryLibraryKernelAssemblesToTheSameBytes)
{
    size_t checked = 0;
    for (const auto& build : library_kernels()) {
        const k::CodeObject co = build();
        const std::string listing = jal::isa::disassemble(co.bytes);
        ASSERT_EQ(listing.find("; invalid"), std::string::npos) << co.name;
        const jal::isa::AsmResult r = jal::isa::assemble(listing);
        ASSERT_TRUE(r.ok()) << co.name << ": " << r.error.text();
        EXPECT_EQ(r.object, co.bytes) << co.name;
        ++checked;
    }
    EXPECT_EQ(checked, library_kernels().size());
}

}  // namespace
