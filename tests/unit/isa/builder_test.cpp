// The kernel builder: constants, labels, loops, registers, L1, arguments, and that every
// object it produces passes the device's validator.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/error.hpp>
#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>
#include <jal/kernels/builder.hpp>

namespace {

using jal::kernels::Builder;
using jal::kernels::CodeObject;
using jal::kernels::Label;
using jal::kernels::X;

std::vector<uint64_t> code_of(const CodeObject& co)
{
    jal::isa::CodeObjectView v;
    std::string error;
    EXPECT_EQ(jal::isa::parse_code_object(co.bytes, &v, &error), JAL_STATUS_OK) << error;
    return v.code;
}

std::vector<std::string> listing(const CodeObject& co)
{
    std::vector<std::string> out;
    auto code = code_of(co);
    for (size_t pc = 0; pc < code.size(); pc++)
        out.push_back(jal::isa::disassemble_instruction(code[pc], static_cast<uint32_t>(pc)));
    return out;
}

// What LI/LUI leave in a register (isa.h), to check li() without an emulator.
int64_t run_constant(const std::vector<uint64_t>& code)
{
    uint64_t r = 0;
    for (uint64_t w : code) {
        if (JAL_INSN_OPCODE(w) == JAL_OP_LI)
            r = static_cast<uint64_t>(static_cast<int64_t>(JAL_INSN_IMM(w)));
        else if (JAL_INSN_OPCODE(w) == JAL_OP_LUI)
            r = (r & 0xffffffffu) |
                (static_cast<uint64_t>(static_cast<uint32_t>(JAL_INSN_IMM(w))) << 32);
    }
    return static_cast<int64_t>(r);
}

template <typename F>
std::string error_of(F&& f)
{
    try {
        f();
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_INVALID_FIELD);
        return e.what();
    }
    ADD_FAILURE() << "no jal::Error thrown";
    return {};
}

TEST(Builder, LiLoadsAny64BitConstant)
{
    const int64_t values[] = {0,
                              1,
                              -1,
                              5,
                              -5,
                              INT32_MAX,
                              INT32_MIN,
                              int64_t{INT32_MAX} + 1,
                              0xffffffffll,
                              0x123456789abcdef0ll,
                              INT64_MIN,
                              INT64_MAX,
                              -0x100000000ll};
    for (int64_t v : values) {
        Builder b("li");
        X r = b.x();
        b.li(r, v);
        auto code = code_of(b.finish());
        code.pop_back();  // END
        const bool fits = v >= INT32_MIN && v <= INT32_MAX;
        EXPECT_EQ(code.size(), fits ? 1u : 2u) << v;
        EXPECT_EQ(run_constant(code), v);
    }
}

TEST(Builder, LabelsResolveForwardAndBackward)
{
    Builder b("labels");
    X i = b.x(), n = b.x();
    Label top = b.label(), done = b.label();
    b.li(n, 3);
    b.bind(top);
    b.bge(i, n, done);
    b.addi(i, i, 1);
    b.jmp(top);
    b.bind(done);
    b.end();
    auto lines = listing(b.finish());
    std::vector<std::string> want = {"li x2, 3", "bge x1, x2, @4", "addi x1, x1, 1", "jmp @1",
                                     "end"};
    EXPECT_EQ(lines, want);
}

TEST(Builder, UnboundLabelFailsAtFinishNamingTheKernel)
{
    Builder b("dangling");
    Label l = b.label();
    b.jmp(l);
    std::string e = error_of([&] { b.finish(); });
    EXPECT_NE(e.find("kernel dangling"), std::string::npos) << e;
    EXPECT_NE(e.find("label 0 is never bound"), std::string::npos) << e;
}

TEST(Builder, LabelBoundTwiceFails)
{
    Builder b("twice");
    Label l = b.label();
    b.bind(l);
    b.end();
    EXPECT_NE(error_of([&] { b.bind(l); }).find("already bound"), std::string::npos);
}

TEST(Builder, ForRangeComparesAtTheTopAndFreesItsCounter)
{
    Builder b("loop");
    X begin = b.x(), end = b.x(), out = b.x();
    X seen{};
    b.for_range(begin, end, 2, [&](X i) {
        seen = i;
        b.st(i, out, 0);
    });
    b.end();
    EXPECT_EQ(seen.r, 4);
    EXPECT_EQ(b.x().r, 4) << "the loop's counter is free again";
    auto lines = listing(b.finish());
    std::vector<std::string> want = {"addi x4, x1, 0", "bge x4, x2, @5", "st x4, [x3]",
                                     "addi x4, x4, 2", "jmp @1",         "end"};
    EXPECT_EQ(lines, want);
}

TEST(Builder, ForRangeCountingDownLeavesAtTheEnd)
{
    Builder b("down");
    X begin = b.x(), end = b.x();
    b.for_range(begin, end, -1, [&](X) {});
    auto lines = listing(b.finish());
    EXPECT_EQ(lines[1], "bge x2, x3, @4");
    EXPECT_EQ(lines[2], "addi x3, x3, -1");
    EXPECT_NE(error_of([&] {
                  Builder c("zero");
                  c.for_range(begin, end, 0, [](X) {});
              }).find("step 0"),
              std::string::npos);
}

TEST(Builder, RegisterExhaustionThrowsNamingTheKernel)
{
    Builder b("greedy");
    for (int i = 1; i < JAL_ISA_SCALAR_REGS; i++) EXPECT_EQ(b.x().r, i);
    std::string e = error_of([&] { b.x(); });
    EXPECT_NE(e.find("kernel greedy"), std::string::npos) << e;
    EXPECT_NE(e.find("out of scalar registers"), std::string::npos) << e;
    b.free(X{7});
    EXPECT_EQ(b.x().r, 7);

    for (int i = 0; i < JAL_ISA_TILE_REGS; i++) b.t();
    EXPECT_NE(error_of([&] { b.t(); }).find("out of tile registers"), std::string::npos);
    for (int i = 0; i < JAL_ISA_SEMAPHORES; i++) b.q();
    EXPECT_NE(error_of([&] { b.q(); }).find("out of semaphores"), std::string::npos);
}

TEST(Builder, FreeingWhatIsNotAllocatedThrows)
{
    Builder b("frees");
    EXPECT_NE(error_of([&] { b.free(X{0}); }).find("free(x0)"), std::string::npos);
    EXPECT_NE(error_of([&] { b.free(X{3}); }).find("free(x3)"), std::string::npos);
    EXPECT_NE(error_of([&] { b.free(jal::kernels::T{2}); }).find("free(t2)"), std::string::npos);
    EXPECT_NE(error_of([&] { b.free(jal::kernels::Q{1}); }).find("free(q1)"), std::string::npos);
}

TEST(Builder, L1AllocatorAlignsResetsAndRecordsTheHighWaterMark)
{
    Builder b("l1");
    EXPECT_EQ(b.l1_alloc(100), 0u);
    EXPECT_EQ(b.l1_alloc(10), 128u);
    uint32_t mark = b.l1_alloc(1000);  // 192..1192
    EXPECT_EQ(mark, 192u);
    b.l1_reset(mark);
    EXPECT_EQ(b.l1_alloc(64), 192u);
    EXPECT_NE(error_of([&] { b.l1_alloc(JAL_SLICE_L1_BYTES); }).find("l1_alloc(4194304)"),
              std::string::npos);
    EXPECT_NE(error_of([&] { b.l1_reset(100000); }).find("l1_reset"), std::string::npos);
    b.l1_reset(0);
    EXPECT_EQ(b.l1_alloc(JAL_SLICE_L1_BYTES), 0u) << "all of L1 fits once freed";
    CodeObject co = b.finish();
    EXPECT_EQ(co.l1_bytes, JAL_SLICE_L1_BYTES);
}

TEST(Builder, ArgumentsAreLoadedFromTheArgumentBufferInOrder)
{
    Builder b("args");
    X n = b.arg("n");
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X scale = b.arg("scale", JAL_ARG_F32);
    EXPECT_EQ(b.args_size(), 24u);
    b.st(n, out, 0);
    b.st(scale, out, 8);
    EXPECT_NE(error_of([&] { b.arg("n"); }).find("declared twice"), std::string::npos);
    EXPECT_NE(error_of([&] { b.arg("a_name_longer_than_19"); }).find("must be 1..19 characters"),
              std::string::npos);
    CodeObject co = b.finish();
    EXPECT_EQ(co.args_size, 24u);
    EXPECT_EQ(co.name, "args");
    std::vector<std::string> want = {
        "movsr x1, args", "ld x2, [x1]", "ld x3, [x1+8]", "ld x4, [x1+16]", "st x2, [x3]",
        "st x4, [x3+8]",  "end"};
    EXPECT_EQ(listing(co), want);
    jal::isa::CodeObjectView v;
    ASSERT_EQ(jal::isa::parse_code_object(co.bytes, &v, nullptr), JAL_STATUS_OK);
    ASSERT_EQ(v.args.size(), 3u);
    EXPECT_STREQ(v.args[2].name, "scale");
    EXPECT_EQ(v.args[2].offset, 16u);
    EXPECT_EQ(v.args[2].kind, uint32_t{JAL_ARG_F32});
}

TEST(Builder, BadOperandsThrowAtTheLineThatWroteThem)
{
    Builder b("operands");
    b.end();
    std::string e = error_of([&] { b.add(X{40}, X{1}, X{2}); });
    EXPECT_NE(e.find("kernel operands: instruction 1: add: field a is 40"), std::string::npos) << e;
    EXPECT_NE(error_of([&] { b.vtopk({1}, {2}, 0); }).find("k 0"), std::string::npos);
    EXPECT_NE(error_of([&] { b.trap(JAL_STATUS_OK); }).find("trap: status 0"), std::string::npos);
    EXPECT_NE(error_of([&] {
                  b.tdesc({1}, X{2}, X{3}, X{4}, static_cast<jal_dtype>(0));
              }).find("dtype 0"),
              std::string::npos);
    EXPECT_NE(error_of([] { Builder bad(std::string(64, 'n')); }).find("must be 1..63 characters"),
              std::string::npos);
}

TEST(Builder, FinishIsOnceAndClosesTheProgramWithEnd)
{
    Builder b("once");
    X r = b.x();
    b.li(r, 1);
    CodeObject co = b.finish();
    EXPECT_EQ(listing(co).back(), "end");
    EXPECT_NE(error_of([&] { b.finish(); }).find("already finished"), std::string::npos);
    EXPECT_NE(error_of([&] { b.end(); }).find("already finished"), std::string::npos);
}

TEST(Builder, RawWordsReachTheObjectForValidatorTests)
{
    Builder b("raw");
    b.emit(uint64_t{0xfe} << 56);
    CodeObject co = b.finish();
    std::string error;
    EXPECT_EQ(jal::isa::validate_code_object(co.bytes, &error), JAL_STATUS_INVALID_OPCODE);
    EXPECT_NE(error.find("instruction 0"), std::string::npos) << error;
}

// A kernel that uses every builder method: the validator accepts it and the disassembly
// flags nothing.
TEST(Builder, EveryMethodsOutputPassesTheValidator)
{
    using jal::kernels::Q;
    using jal::kernels::T;
    Builder b("everything");
    X n = b.arg("n"), src = b.arg("src", JAL_ARG_ADDRESS), s = b.arg("s", JAL_ARG_F32);
    X me = b.slice_index(), all = b.slice_count();
    X a = b.x(), c = b.x();
    b.li(a, 0x1122334455667788ll);
    b.movsr(c, JAL_SR_CLOCK);
    b.add(a, a, c), b.sub(a, a, c), b.mul(a, a, c), b.divu(a, a, all), b.remu(a, a, all);
    b.and_(a, a, c), b.or_(a, a, c), b.xor_(a, a, c), b.shl(a, a, c), b.shr(a, a, c);
    b.slt(a, a, c), b.sltu(a, a, c), b.min(a, a, c), b.max(a, a, c), b.addi(a, a, -3),
        b.muli(a, a, 7);
    b.mov(c, a);
    b.ld(a, src, 8), b.lw(a, src, 4), b.st(a, src, 16);
    Label skip = b.label();
    b.beq(a, c, skip), b.bne(a, c, skip), b.blt(a, c, skip), b.bge(a, c, skip), b.bltu(a, c, skip);
    b.trap(JAL_STATUS_OUT_OF_RANGE);
    b.bind(skip);
    T t0 = b.t(), t1 = b.t(), t2 = b.t(), idx = b.t();
    Q q0 = b.q();
    X l1 = b.x();
    b.li(l1, b.l1_alloc(4096));
    b.tdesc(t0, l1, n, n, JAL_DT_F32);
    b.tdesc(t1, l1, n, n, JAL_DT_BF16, 256);
    b.tdesc(idx, l1, n, n, JAL_DT_I32);
    b.tload(t0, src, n, q0), b.tstore(t0, src, n, q0), b.tgather(t1, src, n, idx, q0);
    b.wait(q0, 3), b.signal(q0);
    b.tread(a, t0, me, 1), b.twrite(a, t0, me, 2);
    b.mma(t2, t0, t1);
    b.vadd(t2, t0, t1), b.vsub(t2, t0, t1), b.vmul(t2, t0, t1), b.vmax(t2, t0, t1),
        b.vmin(t2, t0, t1);
    b.vfma(t2, t0, t1), b.vscale(t2, t0, 0.5f), b.vadds(t2, t0, 1.0f);
    b.vexp(t2, t0), b.vrsqrt(t2, t0), b.vsilu(t2, t0), b.vsigmoid(t2, t0), b.vrecip(t2, t0),
        b.vneg(t2, t0);
    b.vclamp(t2, t0, s, s);
    b.vredsum(t2, t0), b.vredmax(t2, t0), b.vargmax(idx, t0), b.vtopk(idx, t0, 4),
        b.vtopkv(t2, t0, 4);
    b.vcvt(t1, t0, JAL_CVT_GGML), b.vcopy(t2, t0), b.vfill(t2, -0.0f), b.vfill_i32(idx, 7);
    b.vmask(t2, me, all, 128), b.viota(t2, me, all);
    b.for_range(jal::kernels::zero, all, 1, [&](X peer) {
        b.send(t0, peer, q0);
        b.recv(t0, peer, q0);
    });
    b.barrier();
    b.end();
    CodeObject co = b.finish();
    std::string error;
    ASSERT_EQ(jal::isa::validate_code_object(co.bytes, &error), JAL_STATUS_OK) << error;
    std::string text = jal::isa::disassemble(co.bytes);
    EXPECT_EQ(text.find("invalid"), std::string::npos) << text;
    EXPECT_EQ(co.l1_bytes, 4096u);
    EXPECT_EQ(co.args_size, 24u);
}

}  // namespace
