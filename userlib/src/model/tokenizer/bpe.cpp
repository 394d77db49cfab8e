#include "bpe.hpp"

#include <functional>
#include <queue>

#include <fmt/format.h>

#include <jal/error.hpp>

namespace jal::model::tokenizer {

BpeRanks::BpeRanks(const std::vector<std::string>& token_bytes, const std::vector<bool>& excluded)
{
    ids_.reserve(token_bytes.size());
    for (size_t id = 0; id < token_bytes.size(); ++id) {
        if (excluded[id] || token_bytes[id].empty()) continue;
        // Two ids with the same bytes: the lower one is the rank BPE uses.
        ids_.emplace(token_bytes[id], static_cast<int32_t>(id));
    }
}

int32_t BpeRanks::find(std::string_view bytes) const
{
    const auto it = ids_.find(bytes);
    return it == ids_.end() ? -1 : it->second;
}

namespace {

// A candidate merge: parts starting at `left` and `right` (ending at `end`) join into the
// token of rank `rank`. The heap yields the lowest rank, the leftmost of equals: the pair
// tiktoken's linear scan picks. Entries go stale when a neighbour merges; they are checked
// when popped, which keeps a long piece (a run of 100k letters) O(n log n).
struct Candidate {
    int32_t rank;
    uint32_t left, right, end;
    bool operator>(const Candidate& o) const
    {
        return rank != o.rank ? rank > o.rank : left > o.left;
    }
};

}  // namespace

void BpeRanks::encode(std::string_view piece, std::vector<int32_t>& out) const
{
    if (const int32_t whole = find(piece); whole >= 0) {
        out.push_back(whole);
        return;
    }
    const auto n = static_cast<uint32_t>(piece.size());
    // Parts as a linked list of start offsets: next[i] is where the part at i ends.
    std::vector<uint32_t> next(n), prev(n);
    std::vector<bool> alive(n, true);
    for (uint32_t i = 0; i < n; ++i) next[i] = i + 1, prev[i] = i - 1;
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    auto consider = [&](uint32_t left) {
        const uint32_t right = next[left];
        if (right >= n) return;
        const int32_t r = find(piece.substr(left, next[right] - left));
        if (r >= 0) heap.push({r, left, right, next[right]});
    };
    for (uint32_t i = 0; i + 1 < n; ++i) consider(i);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        if (!alive[c.left] || !alive[c.right] || next[c.left] != c.right || next[c.right] != c.end)
            continue;  // a neighbour merged since
        alive[c.right] = false;
        next[c.left] = c.end;
        if (c.end < n) prev[c.end] = c.left;
        if (c.left > 0) consider(prev[c.left]);
        consider(c.left);
    }
    for (uint32_t i = 0; i < n; i = next[i]) {
        const int32_t id = find(piece.substr(i, next[i] - i));
        if (id < 0)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("tokenizer.ggml.tokens: no token for byte 0x{:02x}",
                                    static_cast<unsigned char>(piece[i])));
        out.push_back(id);
    }
}

}  // namespace jal::model::tokenizer
