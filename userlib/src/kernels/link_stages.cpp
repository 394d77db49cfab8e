// link_stages: kernels joined into one staged program (stages.hpp).
//
// A stage: its slices in x1, its argument offset in x2, STAGE (slices outside it branch
// to the stage's end), x1..x31 cleared so the kernel starts from the registers a dispatch
// of its own would give it, the kernel's code with every END turned into a jump to the
// stage's end. Consecutive stages are ordered by STAGE's "ordered" flag: every slice owes
// a barrier of the whole dispatch and pays it at the kernel's ACQUIRE (so what comes
// before, argument and weight loads, overlaps the previous stage's end), or at its next
// STAGE or END. A kernel without ACQUIRE gets one before its first instruction. STAGE waits
// for the slice's stores, so a barrier paid after it means every earlier store has landed.
// Lanes of a section run side by side: their stages are joined by barriers of the lane's
// slices, and the whole dispatch meets after the section.
#include <jal/kernels/stages.hpp>

#include <jal/isa/code_object.hpp>
#include <jal/jal.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace jal::kernels {
namespace {

constexpr unsigned kMaskReg = 1, kArgsReg = 2;
constexpr uint64_t kEverySlice = ~uint64_t{0};

class StageEmitter {
public:
    // A stage; `ordered`: after the work before it (else the slices were just joined).
    void stage(const Stage& s, bool ordered)
    {
        if (s.slices == 0) fail("a stage without slices");
        if (s.args_offset % 8)
            fail(fmt::format("argument offset {} is not 8-aligned", s.args_offset));
        l1_bytes_ = std::max(l1_bytes_, s.l1_bytes);
        const size_t enter = open_stage(s.slices, s.args_offset);
        for (unsigned r = 1; r < JAL_ISA_SCALAR_REGS; r++)
            code_.push_back(JAL_INSN(JAL_OP_LI, r, 0, 0, 0, 0));
        const bool acquires = std::any_of(s.code.begin(), s.code.end(), [](uint64_t w) {
            return JAL_INSN_OPCODE(w) == JAL_OP_ACQUIRE;
        });
        if (!acquires) code_.push_back(JAL_INSN(JAL_OP_ACQUIRE, 0, 0, 0, 0, 0));
        const size_t begin = code_.size();
        code_.insert(code_.end(), s.code.begin(), s.code.end());
        const size_t end = code_.size();
        for (size_t i = begin; i < end; i++)
            if (JAL_INSN_OPCODE(code_[i]) == JAL_OP_END)
                code_[i] = JAL_INSN(JAL_OP_JMP, 0, 0, 0, 0, static_cast<int32_t>(end - i));
        close_stage(enter, ordered);
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
            stage(lane[i], false);
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
};

}  // namespace

CodeObject link_stages(const std::string& name, std::span<const StageSection> sections,
                       uint32_t args_size)
{
    StageEmitter e;
    if (sections.empty()) StageEmitter::fail("no stages");
    bool ordered = false;  // the first stage follows nothing
    for (size_t k = 0; k < sections.size(); k++) {
        const StageSection& sec = sections[k];
        if (sec.lanes.empty() || std::any_of(sec.lanes.begin(), sec.lanes.end(),
                                             [](const StageLane& l) { return l.empty(); }))
            StageEmitter::fail(fmt::format("section {} has an empty lane", k));
        if (sec.lanes.size() == 1) {
            for (const Stage& s : sec.lanes.front()) {
                e.stage(s, ordered);
                ordered = true;
            }
            continue;
        }
        for (size_t l = 0; l < sec.lanes.size(); l++) e.lane(sec.lanes[l], ordered && l == 0);
        e.join(kEverySlice);
        ordered = false;
    }
    return e.finish(name, args_size);
}

}  // namespace jal::kernels
