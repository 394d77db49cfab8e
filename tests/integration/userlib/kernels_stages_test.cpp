// Staged batches end to end (stages.hpp): the Launcher links a batch's kernels into one
// program on a real jal-emu; every kernel sees what a dispatch of its own would show it
// (its slices numbered from 0, its arguments), runs after the one before it has finished
// writing, and a fork-join region's lanes run inside the same program.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/error.hpp>
#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/stages.hpp>

#include "kernels_fixture.hpp"

namespace {

using jal::kernels::BatchReport;
using jal::kernels::Builder;
using jal::kernels::Launcher;
using jal::kernels::LauncherOptions;
using jal::kernels::Program;
using jal::kernels::X;

class KernelsStagesTest : public jal::test::KernelsTest {
protected:
    void SetUp() override
    {
        KernelsTest::SetUp();
        staged = std::make_unique<Launcher>(dev(), *context, *queue,
                                            LauncherOptions{.lanes = 2, .stages = true});
        digit = std::make_unique<Program>(dev(), *context, *queue, append_digit_kernel());
        values = std::make_unique<Program>(dev(), *context, *queue, slice_kernel());
    }
    void TearDown() override
    {
        values.reset();
        digit.reset();
        staged.reset();
        KernelsTest::TearDown();
    }

    void clear_out()
    {
        std::memset(host->data(), 0, 4096);
        jal::runtime::Signal done(dev(), 1);
        queue->copy_to_device(out->va(), *host, 0, 4096, &done);
        ASSERT_EQ(done.wait_zero().status, JAL_STATUS_OK);
    }

    // Each slice stores {slice * 100 + nslices, logical slice} at out + 16 * slice + base.
    static jal::kernels::CodeObject slice_kernel()
    {
        Builder b("slice_values");
        X dst = b.arg("out", JAL_ARG_ADDRESS);
        X me = b.slice_index(), n = b.slice_count();
        X v = b.x(), t = b.x();
        b.muli(v, me, 100);
        b.add(v, v, n);
        b.muli(t, me, 16);
        b.add(t, dst, t);
        b.st(v, t, 0);
        b.movsr(v, JAL_SR_LOGICAL_SLICE);
        b.st(v, t, 8);
        b.end();
        return b.finish();
    }

    // The batch every test runs: a chain of digits on slice 1, the slice kernel on slices
    // 1 and 3, two lanes (digits on slice 1, digits on slice 2), then a digit after.
    void add_batch(Launcher& l)
    {
        const uint64_t a = out->va(), b = out->va() + 64, c = out->va() + 128;
        for (uint64_t d = 1; d <= 4; d++)
            l.add(*digit, {a, d}, {.slice_mask = 2, .label = "chain"});
        l.add(*values, {out->va() + 256}, {.slice_mask = 0b1010, .label = "values"});
        l.fork();
        l.add(*digit, {a, 5}, {.slice_mask = 2, .label = "lane 0", .lane = 0});
        for (uint64_t d = 6; d <= 8; d++)
            l.add(*digit, {b, d}, {.slice_mask = 4, .label = "lane 1", .lane = 1});
        l.join();
        l.add(*digit, {c, 9}, {.slice_mask = 1, .label = "after"});
        l.cut("whole batch");
    }
    void expect_batch_results()
    {
        const auto v = read_out(40);
        EXPECT_EQ(v[0], 12345u) << "the chain in order, then lane 0";
        EXPECT_EQ(v[8], 678u) << "lane 1 in its own order";
        EXPECT_EQ(v[16], 9u);
        // The slice kernel saw two slices numbered 0 and 1: logical slices 1 and 3.
        EXPECT_EQ(v[32], 0u * 100 + 2);
        EXPECT_EQ(v[33], 1u);
        EXPECT_EQ(v[34], 1u * 100 + 2);
        EXPECT_EQ(v[35], 3u);
    }

    std::unique_ptr<Launcher> staged;
    std::unique_ptr<Program> digit, values;
};

TEST_F(KernelsStagesTest, AStagedBatchComputesWhatSeparateDispatchesDoInOneDispatch)
{
    Launcher plain(dev(), *context, *queue, LauncherOptions{.lanes = 2});
    add_batch(plain);
    const BatchReport unstaged = plain.run_batch();
    EXPECT_EQ(unstaged.dispatches.size(), 10u) << "cut() does nothing without stages";
    expect_batch_results();

    clear_out();
    add_batch(*staged);
    const BatchReport r = staged->run_batch();
    ASSERT_EQ(r.dispatches.size(), 1u);
    EXPECT_EQ(r.dispatches[0].label, "whole batch");
    EXPECT_EQ(r.dispatches[0].report.status, uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(r.modelled_ns, r.dispatches[0].report.modelled_ns);
    expect_batch_results();
}

TEST_F(KernelsStagesTest, TheLinkedProgramIsReusedWithNewArguments)
{
    for (int round = 0; round < 3; round++) {
        clear_out();
        add_batch(*staged);
        ASSERT_EQ(staged->run_batch().dispatches.size(), 1u);
        expect_batch_results();
        EXPECT_EQ(staged->staged_programs(), 1u) << "round " << round;
    }
}

// prepare_batch links the batch's program and runs nothing; the same batch added again
// then runs that program (no second one is linked) and computes what it always does.
TEST_F(KernelsStagesTest, APreparedBatchRunsNothingAndItsProgramRunsTheNextOne)
{
    clear_out();
    add_batch(*staged);
    staged->prepare_batch();
    EXPECT_EQ(staged->staged_programs(), 1u);
    EXPECT_EQ(read_out(40), std::vector<uint64_t>(40, 0)) << "nothing ran";
    EXPECT_TRUE(staged->run_batch().dispatches.empty()) << "the prepared batch was cleared";
    EXPECT_EQ(read_out(40), std::vector<uint64_t>(40, 0));

    add_batch(*staged);
    const BatchReport r = staged->run_batch();
    ASSERT_EQ(r.dispatches.size(), 1u);
    EXPECT_EQ(r.dispatches[0].report.status, uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(staged->staged_programs(), 1u) << "the prepared program ran";
    expect_batch_results();
}

TEST_F(KernelsStagesTest, CutsSplitTheBatchAndASingleDispatchStaysAsItIs)
{
    const uint64_t a = out->va();
    staged->add(*digit, {a, 1}, {.slice_mask = 2, .label = "one"});
    staged->cut("first");
    staged->add(*digit, {a, 2}, {.slice_mask = 2, .label = "two"});
    staged->add(*digit, {a, 3}, {.slice_mask = 2, .label = "three"});
    const BatchReport r = staged->run_batch();
    ASSERT_EQ(r.dispatches.size(), 2u);
    EXPECT_EQ(r.dispatches[0].label, "one") << "a group of one dispatch is not linked";
    EXPECT_EQ(r.dispatches[1].label, "two … three");
    EXPECT_EQ(read_out(1)[0], 123u);
}

TEST_F(KernelsStagesTest, AFaultInAStageFailsTheBatchAndTheQueueGoesOn)
{
    Builder b("faulty");
    X v = b.arg("value");
    X bad = b.x();
    b.li(bad, 0x10);  // not mapped in any context
    b.st(v, bad, 8);
    Program faulty(dev(), *context, *queue, b.finish());
    staged->add(*digit, {out->va(), 4}, {.slice_mask = 2, .label = "first"});
    staged->add(faulty, {42}, {.slice_mask = 2, .label = "store"});
    try {
        staged->run_batch();
        FAIL() << "no exception";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_PAGE_FAULT);
        EXPECT_NE(std::string(e.what()).find("st x2, [x3+8] (address 0x18)"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(read_out(1)[0], 4u) << "the stage before the fault ran";
    staged->add(*digit, {out->va(), 5}, {.slice_mask = 2});
    staged->add(*digit, {out->va(), 6}, {.slice_mask = 2});
    EXPECT_EQ(staged->run_batch().dispatches.size(), 1u);
    EXPECT_EQ(read_out(1)[0], 456u);
}

TEST(LinkStages, RefusesWhatCannotBeLinked)
{
    const uint64_t end = JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0);
    jal::kernels::Stage s{std::span<const uint64_t>(&end, 1), 0, 1, 0};
    EXPECT_THROW(jal::kernels::link_stages("none", {}, 0), jal::Error);
    jal::kernels::Stage no_slices = s;
    no_slices.slices = 0;
    const jal::kernels::StageSection a{{{no_slices}}};
    EXPECT_THROW(jal::kernels::link_stages("no slices", std::span(&a, 1), 8), jal::Error);
    jal::kernels::Stage misaligned = s;
    misaligned.args_offset = 4;
    const jal::kernels::StageSection b{{{misaligned}}};
    EXPECT_THROW(jal::kernels::link_stages("misaligned", std::span(&b, 1), 8), jal::Error);
    const jal::kernels::StageSection ok{{{s}, {s}}};
    EXPECT_NO_THROW(jal::kernels::link_stages("two lanes", std::span(&ok, 1), 8));
    // A stage taking messages (no barrier) needs a sender before it: on the same slices
    // (peers are ranks of both stages), or anywhere when it is the whole dispatch and names
    // its senders as dispatch slices.
    jal::kernels::Stage fewer = s, whole = s, taker = s;
    fewer.slices = 0b01, whole.slices = 0b11, taker.after_messages = true;
    const jal::kernels::StageSection first{{{taker}}};
    EXPECT_THROW(jal::kernels::link_stages("first", std::span(&first, 1), 8), jal::Error);
    jal::kernels::Stage other = taker;
    other.slices = 0b10;
    const jal::kernels::StageSection apart{{{fewer, other, whole}}};
    EXPECT_THROW(jal::kernels::link_stages("apart", std::span(&apart, 1), 8), jal::Error);
    jal::kernels::Stage onto_whole = taker;
    onto_whole.slices = 0b11;
    const jal::kernels::StageSection ranks{{{fewer, onto_whole}}};
    EXPECT_THROW(jal::kernels::link_stages("ranks", std::span(&ranks, 1), 8), jal::Error);
    onto_whole.dispatch_senders = true;
    const jal::kernels::StageSection wider{{{fewer, onto_whole}}};
    EXPECT_NO_THROW(jal::kernels::link_stages("onto the whole dispatch", std::span(&wider, 1), 8));
}

// The code words of a linked program.
std::vector<uint64_t> code_words(const jal::kernels::CodeObject& co)
{
    jal_code_object_header h{};
    std::memcpy(&h, co.bytes.data(), sizeof h);
    std::vector<uint64_t> words(h.code_words);
    std::memcpy(words.data(), co.bytes.data() + h.code_offset, words.size() * 8);
    return words;
}

// The offsets of the argument lines a linked program reads ahead (PREFETCH [x3 + offset]).
std::vector<int32_t> prefetched(const jal::kernels::CodeObject& co)
{
    std::vector<int32_t> out;
    for (uint64_t w : code_words(co))
        if (JAL_INSN_OPCODE(w) == JAL_OP_PREFETCH && JAL_INSN_B(w) == 3)
            out.push_back(JAL_INSN_IMM(w));
    return out;
}

// A stage reads the next one's argument lines after its own code, while its stores land,
// so that the next kernel's argument loads hit: from SR_ARGS as the stage sees it (its own
// arguments) when all its slices go on to the next stage, from the buffer itself for the
// slices that join it, and not at all when nothing says which slices go on.
TEST(LinkStages, AStageReadsTheNextStagesArgumentLinesAhead)
{
    const uint64_t end = JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0);
    const std::span<const uint64_t> code(&end, 1);
    using jal::kernels::Stage;
    const Stage first{code, 0, 0b0011, 64, 64}, second{code, 0, 0b0011, 128, 100};
    const Stage wider{code, 0, 0b1111, 256, 8}, narrower{code, 0, 0b0100, 320, 8};
    const jal::kernels::StageSection sec{{{first, second, wider, narrower}}};
    const auto co = jal::kernels::link_stages("prefetch", std::span(&sec, 1), 384);
    // first → second: 100 bytes from 64 past first's own, two lines. second → wider: slices 0
    // and 1 from their own arguments, slices 2 and 3 (outside second) from the buffer.
    // wider → narrower: wider is the whole dispatch, so its slices test their membership.
    EXPECT_EQ(prefetched(co), (std::vector<int32_t>{64, 128, 128, 256, 64}));

    const Stage a{code, 0, 0b0011, 0, 8}, b{code, 0, 0b0001, 64, 8}, c{code, 0, 0b1100, 128, 8};
    const jal::kernels::StageSection sub{{{a, b, c}}};
    const auto none = jal::kernels::link_stages("subsets", std::span(&sub, 1), 192);
    // a → b: a is neither within b nor the whole dispatch; b → c: c's slices join from the
    // buffer (b's slice 0 is not in c and b is not the whole dispatch).
    EXPECT_EQ(prefetched(none), (std::vector<int32_t>{128}));
}

// A kernel that reads entry SR_SLICE of a shard table given as an argument
// (CodeObject::slice_table_arg) gets that entry's line read ahead too, by the stage before it
// on the same slices: the table's address from the argument line just read (x4), plus 8 ×
// SR_SLICE, then PREFETCH unless the line's scalar-cache set is one of the argument lines'
// (a BEQ past the PREFETCH for each of them). Not from a stage on other slices, whose SR_SLICE
// numbers others, unless the next stage is the whole dispatch (below, SR_DISPATCH_SLICE).
TEST(LinkStages, AStageReadsTheNextKernelsShardTableEntryAhead)
{
    const uint64_t end = JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0);
    const std::span<const uint64_t> code(&end, 1);
    using jal::kernels::Stage;
    const Stage first{code, 0, 0b0011, 0, 64}, second{code, 0, 0b0011, 64, 128, 2};
    const Stage third{code, 0, 0b0110, 192, 64, 1};
    const jal::kernels::StageSection sec{{{first, second, third}}};
    const auto co = jal::kernels::link_stages("tables", std::span(&sec, 1), 256);
    const std::vector<uint64_t> words = code_words(co);
    size_t from = words.size(), ld = words.size(), reads = 0;
    for (size_t i = 0; i < words.size(); i++) {
        const uint64_t op = JAL_INSN_OPCODE(words[i]);
        if (op == JAL_OP_LD && JAL_INSN_A(words[i]) == 4) from = i, reads++;
        if (op == JAL_OP_PREFETCH && JAL_INSN_B(words[i]) == 4 && ld == words.size()) ld = i;
    }
    ASSERT_LT(from + 4, words.size()) << "second's table entry is read ahead";
    EXPECT_EQ(words[from], JAL_INSN(JAL_OP_LD, 4, 3, 0, 0, 64 + 2 * 8));
    EXPECT_EQ(words[from + 1], JAL_INSN(JAL_OP_MOVSR, 5, 0, 0, 0, JAL_SR_SLICE));
    EXPECT_EQ(words[from + 2], JAL_INSN(JAL_OP_MULI, 5, 5, 0, 0, 8));
    EXPECT_EQ(words[from + 3], JAL_INSN(JAL_OP_ADD, 4, 4, 5, 0, 0));
    ASSERT_LT(ld, words.size());
    EXPECT_EQ(words[ld], JAL_INSN(JAL_OP_PREFETCH, 0, 4, 0, 0, 0));
    std::vector<int64_t> skips;  // each branch's target, relative to the LD
    for (size_t i = from; i < ld; i++)
        if (JAL_INSN_OPCODE(words[i]) == JAL_OP_BEQ)
            skips.push_back(static_cast<int64_t>(i) + JAL_INSN_IMM(words[i]) -
                            static_cast<int64_t>(ld));
    EXPECT_EQ(skips, (std::vector<int64_t>{1, 1})) << "one set check an argument line (two)";
    EXPECT_EQ(reads, 1u) << "third runs on other slices: its entry is not read ahead";
    // The Launcher cuts staged programs by an upper bound of what linking adds.
    size_t bound = 1;  // the program's END
    for (const Stage& st : {first, second, third})
        bound += st.code.size() + jal::kernels::kStageOverheadWords +
                 (st.slice_table_arg >= 0 ? jal::kernels::table_read_words(st.args_size) : 0);
    EXPECT_LE(words.size(), bound);
}

// A kernel's read-ahead slot (Builder::readahead_slot) takes the next stage's reads where
// that stage runs on the same slices: its argument lines and its shard-table entry's line,
// with the slot's own registers (named by its no-ops), from SR_ARGS as the stage sees it;
// nothing is then read after the kernel's end. Where the next stage is the whole dispatch
// the same, the entry at SR_DISPATCH_SLICE (ISA 1.3); the slices that join it from outside
// read the lines and their entry (at SR_SLICE, their dispatch index) from the buffer. Before
// a stage on other slices the slot stays a jump over itself and the reads come after the
// kernel, as without a slot.
TEST(LinkStages, AKernelsReadAheadSlotTakesTheNextStagesReads)
{
    jal::kernels::Builder b("slot");
    b.readahead_slot();
    b.end();
    const jal::kernels::CodeObject k = b.finish();
    ASSERT_EQ(k.readahead_slot, 0);
    const std::vector<uint64_t> kcode = code_words(k);
    ASSERT_EQ(kcode.size(), jal::kernels::kReadaheadSlotWords + 1);
    EXPECT_EQ(kcode[0], JAL_INSN(JAL_OP_JMP, 0, 0, 0, 0, jal::kernels::kReadaheadSlotWords));
    const unsigned base = JAL_INSN_B(kcode[1]), addr = JAL_INSN_B(kcode[2]);
    ASSERT_NE(base, 0u);
    ASSERT_NE(addr, 0u);
    ASSERT_NE(base, addr);
    const uint64_t end = JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0);
    using jal::kernels::Stage;
    const Stage first{
        .code = kcode, .slices = 0b0011, .args_offset = 0, .args_size = 64, .readahead_slot = 0};
    const Stage second{.code = std::span(&end, 1),
                       .slices = 0b0011,
                       .args_offset = 64,
                       .args_size = 128,
                       .slice_table_arg = 2};
    const jal::kernels::StageSection same{{{first, second}}};
    const std::vector<uint64_t> words =
        code_words(jal::kernels::link_stages("same", std::span(&same, 1), 192));
    const auto slot =
        std::find(words.begin(), words.end(), JAL_INSN(JAL_OP_MOVSR, base, 0, 0, 0, JAL_SR_ARGS));
    ASSERT_LE(slot + jal::kernels::kReadaheadSlotWords, words.end()) << "the slot was filled";
    const std::vector<uint64_t> want = {JAL_INSN(JAL_OP_MOVSR, base, 0, 0, 0, JAL_SR_ARGS),
                                        JAL_INSN(JAL_OP_PREFETCH, 0, base, 0, 0, 64),
                                        JAL_INSN(JAL_OP_PREFETCH, 0, base, 0, 0, 128),
                                        JAL_INSN(JAL_OP_LD, addr, base, 0, 0, 64 + 2 * 8),
                                        JAL_INSN(JAL_OP_MOVSR, base, 0, 0, 0, JAL_SR_SLICE),
                                        JAL_INSN(JAL_OP_MULI, base, base, 0, 0, 8),
                                        JAL_INSN(JAL_OP_ADD, addr, addr, base, 0, 0),
                                        JAL_INSN(JAL_OP_PREFETCH, 0, addr, 0, 0, 0)};
    EXPECT_TRUE(std::equal(want.begin(), want.end(), slot));
    for (auto it = slot + static_cast<std::ptrdiff_t>(want.size());
         it < slot + jal::kernels::kReadaheadSlotWords; ++it)
        EXPECT_EQ(*it, JAL_INSN(JAL_OP_ADDI, 0, 0, 0, 0, 0)) << "no-ops to the slot's end";
    EXPECT_TRUE(prefetched(jal::kernels::link_stages("same", std::span(&same, 1), 192)).empty())
        << "nothing read again after the kernel";

    Stage whole = second;
    whole.slices = 0b0111;  // first's and slice 2
    const jal::kernels::StageSection wider{{{first, whole}}};
    const std::vector<uint64_t> ww =
        code_words(jal::kernels::link_stages("whole", std::span(&wider, 1), 192));
    const auto wslot =
        std::find(ww.begin(), ww.end(), JAL_INSN(JAL_OP_MOVSR, base, 0, 0, 0, JAL_SR_ARGS));
    ASSERT_LE(wslot + jal::kernels::kReadaheadSlotWords, ww.end()) << "the slot was filled";
    std::vector<uint64_t> wwant = want;
    wwant[4] = JAL_INSN(JAL_OP_MOVSR, base, 0, 0, 0, JAL_SR_DISPATCH_SLICE);
    EXPECT_TRUE(std::equal(wwant.begin(), wwant.end(), wslot));
    // Slice 2, outside first: the lines at the buffer's offset 64 and 128, then the entry
    // (the table's address into x4, at x4 + 8 × SR_SLICE).
    EXPECT_EQ(prefetched(jal::kernels::link_stages("whole", std::span(&wider, 1), 192)),
              (std::vector<int32_t>{64, 128}));
    const auto table = std::find(ww.begin(), ww.end(), JAL_INSN(JAL_OP_LD, 4, 3, 0, 0, 64 + 2 * 8));
    ASSERT_LE(table + 2, ww.end()) << "slice 2 reads the table's address";
    EXPECT_EQ(table[1], JAL_INSN(JAL_OP_MOVSR, 5, 0, 0, 0, JAL_SR_SLICE))
        << "slice 2's entry is its dispatch index's";

    Stage other = second;
    other.slices = 0b0001;  // within first, not the whole dispatch
    const jal::kernels::StageSection apart{{{first, other}}};
    const auto co = jal::kernels::link_stages("apart", std::span(&apart, 1), 192);
    const std::vector<uint64_t> kept = code_words(co);
    EXPECT_NE(std::find(kept.begin(), kept.end(), kcode[0]), kept.end()) << "still a jump";
    EXPECT_FALSE(prefetched(co).empty()) << "read after the kernel instead";
}

}  // namespace
