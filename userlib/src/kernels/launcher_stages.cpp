// Launcher::stage_batch: a batch's dispatches linked into staged programs (stages.hpp).
//
// The batch is read as units: a dispatch on the Launcher's queue, or a whole fork-join
// region. Units between two cuts form a group; a group of one dispatch stays as it is, a
// larger one becomes one dispatch of a linked program over the union of its slices, whose
// argument buffer is the group's argument buffers as add() packed them (they are
// contiguous). A group also ends where the next unit's options differ (timing-only,
// budget) or its code would pass the code-object limit; a unit too large on its own runs
// unlinked, as added.
#include <jal/kernels/stages.hpp>

#include "launcher_batch.hpp"

#include <fmt/format.h>

#include <bit>

namespace jal::kernels {
namespace {

using Item = detail::LauncherBatch::Item;
using Kind = detail::LauncherBatch::Kind;

constexpr size_t kMaxWords = (JAL_CODE_MAX_BYTES - 4096) / 8;
constexpr size_t kLaneWords = 5, kJoinWords = 5;
// Linked programs kept; past this many the cache starts again (a batch never runs while
// it is rebuilt, so no program in use is freed).
constexpr size_t kMaxStagedPrograms = 256;

// Bit i of the result: the i-th slice (in ascending order) of `of` is in `mask`.
uint64_t dispatch_bits(uint64_t mask, uint64_t of)
{
    uint64_t out = 0;
    for (unsigned i = 0; of; of &= of - 1, i++)
        if (mask >> std::countr_zero(of) & 1) out |= uint64_t{1} << i;
    return out;
}

struct Group {
    std::vector<Item> items;  // as added, fork and join included
    size_t dispatches = 0, words = 0;
    std::string label;  // the cut's
};

class Stager {
public:
    Stager(const std::vector<Item>& items, uint64_t usable) : items_(items), usable_(usable) {}

    // Calls `emit(group)` for every group in order.
    template <class Emit>
    void run(Emit&& emit)
    {
        Group g;
        for (size_t i = 0; i < items_.size();) {
            if (items_[i].kind == Kind::cut) {
                g.label = items_[i].label;
                emit(std::move(g));
                g = Group{};
                i++;
                continue;
            }
            const size_t end = unit_end(i);
            const size_t words = unit_words(i, end);
            if (!g.items.empty() && (g.words + words > kMaxWords || !compatible(g, items_[i]))) {
                emit(std::move(g));
                g = Group{};
            }
            if (words > kMaxWords) {  // alone over the limit: as added, never linked
                Group big;
                big.items.assign(items_.begin() + static_cast<long>(i),
                                 items_.begin() + static_cast<long>(end));
                emit(std::move(big));
            } else {
                g.items.insert(g.items.end(), items_.begin() + static_cast<long>(i),
                               items_.begin() + static_cast<long>(end));
                g.words += words;
                for (size_t k = i; k < end; k++) g.dispatches += items_[k].kind == Kind::dispatch;
            }
            i = end;
        }
        if (!g.items.empty()) emit(std::move(g));
    }

    uint64_t mask_of(const Item& it) const
    {
        return it.options.slice_mask ? it.options.slice_mask : usable_;
    }

private:
    // A fork-join region is one unit, and so is a kernel with the ones after it that take
    // their inputs from it as messages (they must share its dispatch).
    size_t unit_end(size_t i) const
    {
        size_t end = i + 1;
        if (items_[i].kind == Kind::fork) {
            while (end < items_.size() && items_[end].kind != Kind::join) end++;
            end = std::min(end + 1, items_.size());
        }
        while (end < items_.size() && items_[end].kind == Kind::dispatch &&
               items_[end].program->after_messages())
            end++;
        return end;
    }
    size_t unit_words(size_t i, size_t end) const
    {
        size_t w = kJoinWords;
        for (size_t k = i; k < end; k++)
            if (items_[k].kind == Kind::dispatch) {
                const Program& p = *items_[k].program;
                w += p.code().size() + kStageOverheadWords + kLaneWords;
                if (p.slice_table_arg() >= 0)
                    w += table_read_words(static_cast<uint32_t>(items_[k].args_size));
            }
        return w;
    }
    static bool compatible(const Group& g, const Item& next)
    {
        for (const Item& it : g.items)
            if (it.kind == Kind::dispatch)
                return next.kind != Kind::dispatch ||
                       (it.options.timing_only == next.options.timing_only &&
                        it.options.budget_kinsn == next.options.budget_kinsn);
        return true;
    }

    const std::vector<Item>& items_;
    uint64_t usable_;
};

}  // namespace

const Program& Launcher::staged_program(const std::vector<uint64_t>& key,
                                        const std::function<CodeObject()>& link)
{
    auto it = staged_.find(key);
    if (it != staged_.end()) return *it->second;
    if (staged_.size() >= kMaxStagedPrograms) staged_.clear();
    auto p = std::make_unique<Program>(dev_, ctx_, queue_, link(),
                                       MemoryPlace{JAL_PLACE_INTERLEAVED, usable_mask_});
    return *staged_.emplace(key, std::move(p)).first->second;
}

// long-function: one pass that lays out sections, lanes and the cache key together, so the
// key cannot disagree with the program it names.
void Launcher::stage_batch()
{
    Batch& b = *batch_;
    std::vector<Item> out;
    Stager stager(b.items, usable_mask_);
    stager.run([&](Group&& g) {
        if (g.dispatches <= 1) {
            for (Item& it : g.items)
                if (it.kind != Kind::cut) out.push_back(std::move(it));
            return;
        }
        const Item* first = nullptr;
        const Item* last = nullptr;
        uint64_t slices = 0;
        for (const Item& it : g.items)
            if (it.kind == Kind::dispatch) {
                if (!first) first = &it;
                last = &it;
                slices |= stager.mask_of(it);
            }
        // Sections: dispatches on the queue one after another; a fork-join region's lanes.
        std::vector<StageSection> sections;
        std::vector<uint64_t> key = {slices, first->options.timing_only};
        bool in_region = false, new_section = true;
        for (const Item& it : g.items) {
            if (it.kind == Kind::fork || it.kind == Kind::join) {
                in_region = it.kind == Kind::fork;
                if (in_region) sections.emplace_back();
                new_section = true;
                key.push_back(in_region ? ~uint64_t{0} : ~uint64_t{1});
                continue;
            }
            if (!in_region && new_section) sections.push_back({{StageLane{}}});
            new_section = false;
            StageSection& sec = sections.back();
            const size_t lane = in_region ? static_cast<size_t>(it.options.lane + 1) : 0;
            if (sec.lanes.size() <= lane) sec.lanes.resize(lane + 1);
            Stage st;
            st.code = it.program->code();
            st.l1_bytes = it.program->l1_bytes();
            st.slices = dispatch_bits(stager.mask_of(it), slices);
            st.args_offset = static_cast<uint32_t>(it.args_offset - first->args_offset);
            st.args_size = static_cast<uint32_t>(it.args_size);
            st.slice_table_arg = it.program->slice_table_arg();
            st.after_messages = it.program->after_messages();
            st.dispatch_senders = it.program->dispatch_senders();
            st.readahead_slot = it.program->readahead_slot();
            sec.lanes[lane].push_back(st);
            key.insert(key.end(), {it.program->address(), st.slices, st.args_offset, lane});
        }
        for (StageSection& sec : sections)  // lanes with no dispatch in this region
            std::erase_if(sec.lanes, [](const StageLane& l) { return l.empty(); });
        std::erase_if(sections, [](const StageSection& s) { return s.lanes.empty(); });
        const size_t args_size = last->args_offset + last->args_size - first->args_offset;
        std::string label =
            g.label.empty() ? fmt::format("{} … {}", first->label, last->label) : g.label;
        Item staged;
        staged.program = &staged_program(key, [&] {
            return link_stages(fmt::format("staged {}", g.dispatches), sections,
                               static_cast<uint32_t>(args_size));
        });
        staged.options = first->options;
        staged.options.slice_mask = slices;
        staged.options.lane = -1;
        staged.label = std::move(label);
        staged.args_offset = first->args_offset;
        staged.args_size = args_size;
        out.push_back(std::move(staged));
    });
    b.items = std::move(out);
}

}  // namespace jal::kernels
