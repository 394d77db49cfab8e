// link_stages: kernels joined into one staged program (stages.hpp).
//
// A stage: its slices in x1, its argument offset in x2, STAGE (slices outside it branch
// to the stage's end), the registers the kernel may read before writing them cleared (so
// it starts from what a dispatch of its own would give it; isa::registers_read_before_written), the kernel's code with every END turned into a jump to the
// stage's end. Consecutive stages are ordered by STAGE's "ordered" flag: every slice owes
// a barrier of the whole dispatch and pays it at the kernel's ACQUIRE (so what comes
// before, argument and weight loads, overlaps the previous stage's end), or at its next
// STAGE or END. A kernel without ACQUIRE gets one before its first instruction. STAGE waits
// for the slice's stores, so a barrier paid after it means every earlier store has landed.
// Lanes of a section run side by side: their stages are joined by barriers of the lane's
// slices, and the whole dispatch meets after the section. A stage that takes its inputs as
// messages from the one before (Stage::after_messages) is unordered: no barrier.
#include <jal/kernels/stages.hpp>

#include <jal/isa/code_object.hpp>
#include <jal/jal.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <vector>

namespace jal::kernels {
namespace {

constexpr unsigned kMaskReg = 1, kArgsReg = 2, kTmpReg = 3, kTableReg = 4, kSetReg = 5,
                   kSetBits = 6;
// The scalar data cache's sets (direct-mapped: one line each): what a program reads ahead
// depends on it, never its results.
constexpr int32_t kScalarCacheSets = JAL_ISA_SCALAR_CACHE_LINES;
constexpr uint32_t kLineBytes = JAL_ISA_SCALAR_LINE_BYTES;
constexpr int32_t kLineShift = std::countr_zero(kLineBytes);
constexpr uint64_t kEverySlice = ~uint64_t{0};

class StageEmitter {
public:
    explicit StageEmitter(uint64_t all) : all_(all) {}

    // A stage; `ordered`: after the work before it (else the slices were just joined);
    // `next`: the stage that follows it on its slices, if any.
    void stage(const Stage& s, bool ordered, const Stage* next = nullptr)
    {
        if (s.slices == 0) fail("a stage without slices");
        if (s.args_offset % 8)
            fail(fmt::format("argument offset {} is not 8-aligned", s.args_offset));
        l1_bytes_ = std::max(l1_bytes_, s.l1_bytes);
        const size_t enter = open_stage(s.slices, s.args_offset);
        // The kernel as it will run: every END a jump to its end, its read-ahead slot filled.
        std::vector<uint64_t> kernel(s.code.begin(), s.code.end());
        for (size_t i = 0; i < kernel.size(); i++)
            if (JAL_INSN_OPCODE(kernel[i]) == JAL_OP_END)
                kernel[i] =
                    JAL_INSN(JAL_OP_JMP, 0, 0, 0, 0, static_cast<int32_t>(kernel.size() - i));
        const bool slot_filled = next && fill_readahead_slot(s, *next, kernel);
        // Cleared: the registers the kernel may read before writing them (a dispatch of
        // its own would have them zero); the others' values cannot reach its results.
        const uint32_t clear = isa::registers_read_before_written(kernel);
        for (unsigned r = 1; r < JAL_ISA_SCALAR_REGS; r++)
            if (clear >> r & 1) code_.push_back(JAL_INSN(JAL_OP_LI, r, 0, 0, 0, 0));
        const bool acquires = std::any_of(s.code.begin(), s.code.end(), [](uint64_t w) {
            return JAL_INSN_OPCODE(w) == JAL_OP_ACQUIRE;
        });
        if (!acquires) code_.push_back(JAL_INSN(JAL_OP_ACQUIRE, 0, 0, 0, 0, 0));
        code_.insert(code_.end(), kernel.begin(), kernel.end());
        if (next && !slot_filled) prefetch_args_from_stage(s, *next);
        const size_t skip = next ? code_.size() : 0;
        if (next) code_.push_back(0);  // the stage's slices jump over the others' prefetch
        close_stage(enter, ordered);
        if (next) {
            prefetch_args_outside_stage(s, *next);
            code_[skip] =
                JAL_INSN(JAL_OP_JMP, 0, 0, 0, 0, static_cast<int32_t>(code_.size() - skip));
        }
    }

    // A lane of a section: slices outside every stage of the lane skip it; inside, each
    // stage waits for the lane's slices to finish the one before. The first lane of a
    // section carries the order after the previous stage.
    void lane(const StageLane& lane, bool ordered)
    {
        uint64_t slices = 0;
        for (const Stage& s : lane) slices |= s.slices;
        const size_t enter = open_stage(slices, 0);
        for (size_t i = 0; i < lane.size(); i++) {
            stage(lane[i], false, i + 1 < lane.size() ? &lane[i + 1] : nullptr);
            if (i + 1 < lane.size()) join(slices);
        }
        close_stage(enter, ordered);
    }

    // Back to `slices` (every slice of it waits for its own stores), then their barrier.
    void join(uint64_t slices)
    {
        close_stage(open_stage(slices, 0), false);  // every slice in it falls through
        code_.push_back(JAL_INSN(JAL_OP_BARRIER, 0, 0, 0, 0, 0));
    }

    CodeObject finish(const std::string& name, uint32_t args_size)
    {
        code_.push_back(JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0));
        const size_t bytes = sizeof(jal_code_object_header) + code_.size() * 8 + name.size() + 8;
        if (bytes > JAL_CODE_MAX_BYTES)
            fail(fmt::format("{} instructions: over the {} bytes of a code object", code_.size(),
                             JAL_CODE_MAX_BYTES));
        CodeObject out;
        out.name = name;
        out.args_size = args_size;
        out.l1_bytes = l1_bytes_;
        out.bytes = isa::encode_code_object(name, code_, args_size, l1_bytes_, {});
        return out;
    }

    [[noreturn]] static void fail(const std::string& what)
    {
        throw Error(JAL_STATUS_INVALID_FIELD, fmt::format("link_stages: {}", what));
    }

private:
    // The next stage's argument lines (at most two) and, if it declares one, its shard-table
    // entry's line, read in the kernel's read-ahead slot (Builder::readahead_slot: the
    // kernel's code starts at `begin`), where the scalar unit waits anyway, instead of after
    // the kernel's end; only where the next stage runs on the same slices or on the whole
    // dispatch (its rank is then this stage's SR_SLICE, or SR_DISPATCH_SLICE: next_rank_sr).
    // The slot's registers are the kernel's free ones there, named by its no-ops. No
    // scalar-cache set check: if the kernel's own reads after the slot evict
    // a line (or it evicts one of theirs), that miss comes later, on the same path. (Reading
    // the lines again at the end as well, or leaving out the table's line where it would
    // evict one of the kernel's argument lines, measured slightly slower.)
    bool fill_readahead_slot(const Stage& s, const Stage& next, std::vector<uint64_t>& kernel)
    {
        const int rank = next_rank_sr(s, next);
        if (s.readahead_slot < 0 || rank < 0 || next.args_size == 0 ||
            next.args_size > 2 * kLineBytes)
            return false;
        const auto at = static_cast<size_t>(s.readahead_slot);
        const unsigned base = JAL_INSN_B(kernel[at + 1]), addr = JAL_INSN_B(kernel[at + 2]);
        const int32_t off = static_cast<int32_t>(int64_t{next.args_offset} - s.args_offset);
        std::vector<uint64_t> w = {JAL_INSN(JAL_OP_MOVSR, base, 0, 0, 0, JAL_SR_ARGS)};
        for (uint32_t line = 0; line < next.args_size; line += kLineBytes)
            w.push_back(JAL_INSN(JAL_OP_PREFETCH, 0, base, 0, 0, off + static_cast<int32_t>(line)));
        if (next.slice_table_arg >= 0) {
            w.push_back(JAL_INSN(JAL_OP_LD, addr, base, 0, 0, off + next.slice_table_arg * 8));
            w.push_back(JAL_INSN(JAL_OP_MOVSR, base, 0, 0, 0, rank));
            w.push_back(JAL_INSN(JAL_OP_MULI, base, base, 0, 0, 8));
            w.push_back(JAL_INSN(JAL_OP_ADD, addr, addr, base, 0, 0));
            w.push_back(JAL_INSN(JAL_OP_PREFETCH, 0, addr, 0, 0, 0));
        }
        while (w.size() < kReadaheadSlotWords) w.push_back(JAL_INSN(JAL_OP_ADDI, 0, 0, 0, 0, 0));
        std::copy(w.begin(), w.end(), kernel.begin() + static_cast<std::ptrdiff_t>(at));
        return true;
    }
    // The next stage's argument lines, read into the scalar cache while this stage's last
    // stores land (STAGE waits for them anyway), so that the next kernel's argument loads
    // hit instead of missing on the path between the two stages. Run by this stage's
    // slices, with SR_ARGS still this stage's; only where every one of them is in the next
    // stage, or the stage is the whole dispatch (SR_SLICE is then the dispatch index).
    void prefetch_args_from_stage(const Stage& s, const Stage& next)
    {
        if (next.args_size == 0) return;
        const bool covered = (s.slices & ~next.slices) == 0;
        if (!covered && s.slices != all_) return;
        const size_t skip = covered ? 0 : branch_unless_in(next.slices);
        code_.push_back(JAL_INSN(JAL_OP_MOVSR, kTmpReg, 0, 0, 0, JAL_SR_ARGS));
        const int64_t at = static_cast<int64_t>(next.args_offset) - s.args_offset;
        touch_lines(at, next.args_size);
        const int rank = next_rank_sr(s, next);
        if (next.slice_table_arg >= 0 && rank >= 0)
            touch_table_entry(at, next.args_size, next.slice_table_arg, rank);
        if (!covered) bind_branch(skip);
    }
    // The special register that holds, for a slice of stage s, its rank in the next stage
    // (the index its shard-table entry is read at), or -1 where none does: SR_SLICE on the
    // same slices, SR_DISPATCH_SLICE (ISA 1.3) where the next stage is the whole dispatch.
    int next_rank_sr(const Stage& s, const Stage& next) const
    {
        if (next.slices == s.slices) return JAL_SR_SLICE;
        return next.slices == all_ ? JAL_SR_DISPATCH_SLICE : -1;
    }
    // PREFETCH of the line of entry `rank` (a special register) of the table whose address is
    // argument `arg` of the arguments at [x3 + offset] (lines touch_lines just read): the
    // next kernel's shard-table entry (next_rank_sr).
    // Its miss joins the argument lines' under the last stores' landing instead of coming
    // after the next stage's barrier, before its first weights can stream. Skipped where
    // the line would take the set of one of the argument lines in the direct-mapped scalar
    // cache (the kernel's argument loads would then miss, and evict it again).
    void touch_table_entry(int64_t offset, uint32_t args_bytes, int32_t arg, int rank)
    {
        code_.push_back(JAL_INSN(JAL_OP_LD, kTableReg, kTmpReg, 0, 0,
                                 static_cast<int32_t>(offset + int64_t{arg} * 8)));
        code_.push_back(JAL_INSN(JAL_OP_MOVSR, kSetReg, 0, 0, 0, rank));
        code_.push_back(JAL_INSN(JAL_OP_MULI, kSetReg, kSetReg, 0, 0, 8));
        code_.push_back(JAL_INSN(JAL_OP_ADD, kTableReg, kTableReg, kSetReg, 0, 0));
        std::vector<size_t> skips;
        for (uint32_t line = 0; line < args_bytes; line += kLineBytes) {
            code_.push_back(
                JAL_INSN(JAL_OP_ADDI, kSetReg, kTmpReg, 0, 0, static_cast<int32_t>(offset + line)));
            code_.push_back(JAL_INSN(JAL_OP_XOR, kSetReg, kSetReg, kTableReg, 0, 0));
            code_.push_back(JAL_INSN(JAL_OP_LI, kSetBits, 0, 0, 0, kLineShift));
            code_.push_back(JAL_INSN(JAL_OP_SHR, kSetReg, kSetReg, kSetBits, 0, 0));
            code_.push_back(JAL_INSN(JAL_OP_LI, kSetBits, 0, 0, 0, kScalarCacheSets - 1));
            code_.push_back(JAL_INSN(JAL_OP_AND, kSetReg, kSetReg, kSetBits, 0, 0));
            skips.push_back(code_.size());
            code_.push_back(0);  // BEQ x5, x0 past the PREFETCH: the same set
        }
        code_.push_back(JAL_INSN(JAL_OP_PREFETCH, 0, kTableReg, 0, 0, 0));
        for (size_t at : skips)
            code_[at] =
                JAL_INSN(JAL_OP_BEQ, kSetReg, 0, 0, 0, static_cast<int32_t>(code_.size() - at));
    }
    // The same for the slices outside this stage that are in the next one (SR_ARGS is the
    // buffer itself for them, SR_SLICE their dispatch index: their rank in the next stage
    // too when it is the whole dispatch, and then its shard-table entry's line as well).
    void prefetch_args_outside_stage(const Stage& s, const Stage& next)
    {
        if (next.args_size == 0 || (next.slices & ~s.slices) == 0) return;
        const size_t skip = branch_unless_in(next.slices);
        code_.push_back(JAL_INSN(JAL_OP_MOVSR, kTmpReg, 0, 0, 0, JAL_SR_ARGS));
        touch_lines(next.args_offset, next.args_size);
        if (next.slice_table_arg >= 0 && next.slices == all_)
            touch_table_entry(next.args_offset, next.args_size, next.slice_table_arg, JAL_SR_SLICE);
        bind_branch(skip);
    }
    // PREFETCH of every line of [x3 + offset, + bytes) (argument buffers start on a line).
    void touch_lines(int64_t offset, uint32_t bytes)
    {
        for (uint32_t at = 0; at < bytes; at += kLineBytes)
            code_.push_back(
                JAL_INSN(JAL_OP_PREFETCH, 0, kTmpReg, 0, 0, static_cast<int32_t>(offset + at)));
    }
    // Branches (target filled by bind_branch) unless dispatch slice SR_SLICE is in `mask`.
    size_t branch_unless_in(uint64_t mask)
    {
        load_mask(mask);
        code_.push_back(JAL_INSN(JAL_OP_MOVSR, kTmpReg, 0, 0, 0, JAL_SR_SLICE));
        code_.push_back(JAL_INSN(JAL_OP_SHR, kMaskReg, kMaskReg, kTmpReg, 0, 0));
        code_.push_back(JAL_INSN(JAL_OP_LI, kTmpReg, 0, 0, 0, 1));
        code_.push_back(JAL_INSN(JAL_OP_AND, kMaskReg, kMaskReg, kTmpReg, 0, 0));
        code_.push_back(0);
        return code_.size() - 1;
    }
    void bind_branch(size_t at)
    {
        code_[at] =
            JAL_INSN(JAL_OP_BEQ, kMaskReg, 0, 0, 0, static_cast<int32_t>(code_.size() - at));
    }

    // x1 = the slices, x2 = the argument offset, then a STAGE whose flag and target
    // close_stage fills in (slices outside it go to what is emitted after close_stage).
    size_t open_stage(uint64_t slices, uint32_t args_offset)
    {
        load_mask(slices);
        code_.push_back(JAL_INSN(JAL_OP_LI, kArgsReg, 0, 0, 0, static_cast<int32_t>(args_offset)));
        code_.push_back(0);
        return code_.size() - 1;
    }
    void close_stage(size_t at, bool ordered)
    {
        code_[at] = JAL_INSN(JAL_OP_STAGE, kMaskReg, kArgsReg, ordered ? 1 : 0, 0,
                             static_cast<int32_t>(code_.size() - at));
    }

    void load_mask(uint64_t mask)
    {
        code_.push_back(JAL_INSN(JAL_OP_LI, kMaskReg, 0, 0, 0, static_cast<int32_t>(mask)));
        code_.push_back(JAL_INSN(JAL_OP_LUI, kMaskReg, 0, 0, 0, static_cast<int32_t>(mask >> 32)));
    }

    std::vector<uint64_t> code_;
    uint32_t l1_bytes_ = 0;
    uint64_t all_ = 0;  // the dispatch's slices: every stage's
};

// The stage after stage i of single-lane section k, when it is one (a section of lanes
// starts with a join).
const Stage* next_in_order(std::span<const StageSection> sections, size_t k, size_t i)
{
    const StageLane& lane = sections[k].lanes.front();
    if (i + 1 < lane.size()) return &lane[i + 1];
    if (k + 1 < sections.size() && sections[k + 1].lanes.size() == 1)
        return &sections[k + 1].lanes.front().front();
    return nullptr;
}

}  // namespace

CodeObject link_stages(const std::string& name, std::span<const StageSection> sections,
                       uint32_t args_size)
{
    if (sections.empty()) StageEmitter::fail("no stages");
    uint64_t all = 0;
    for (size_t k = 0; k < sections.size(); k++) {
        const StageSection& sec = sections[k];
        if (sec.lanes.empty() || std::any_of(sec.lanes.begin(), sec.lanes.end(),
                                             [](const StageLane& l) { return l.empty(); }))
            StageEmitter::fail(fmt::format("section {} has an empty lane", k));
        for (const StageLane& l : sec.lanes)
            for (const Stage& s : l) all |= s.slices;
    }
    StageEmitter e(all);
    bool ordered = false;  // the first stage follows nothing
    for (size_t k = 0; k < sections.size(); k++) {
        const StageSection& sec = sections[k];
        if (sec.lanes.size() == 1) {
            const StageLane& lane = sec.lanes.front();
            for (size_t i = 0; i < lane.size(); i++) {
                // After other slices only on the whole dispatch, naming its senders as
                // dispatch slices (ISA 1.3): ranks of the two stages differ.
                const bool anywhere = lane[i].dispatch_senders && lane[i].slices == all;
                if (lane[i].after_messages &&
                    (i == 0 || (lane[i - 1].slices != lane[i].slices && !anywhere)))
                    StageEmitter::fail(fmt::format(
                        "stage {} of section {} takes messages from a stage before it on other "
                        "slices (not the whole dispatch), or from none",
                        i, k));
                e.stage(lane[i], ordered && !lane[i].after_messages, next_in_order(sections, k, i));
                ordered = true;
            }
            continue;
        }
        for (const StageLane& l : sec.lanes)
            for (const Stage& s : l)
                if (s.after_messages)
                    StageEmitter::fail(
                        fmt::format("section {}: a lane's stage cannot take messages", k));
        for (size_t l = 0; l < sec.lanes.size(); l++) e.lane(sec.lanes[l], ordered && l == 0);
        e.join(kEverySlice);
        ordered = false;
    }
    return e.finish(name, args_size);
}

}  // namespace jal::kernels
