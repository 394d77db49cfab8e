#include "bpe.hpp"

#include <limits>

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

void BpeRanks::encode(std::string_view piece, std::vector<int32_t>& out) const
{
    if (const int32_t whole = find(piece); whole >= 0) {
        out.push_back(whole);
        return;
    }
    constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
    // bounds[i]..bounds[i+1] is part i; rank[i]: the rank of parts i and i+1 joined.
    std::vector<size_t> bounds(piece.size() + 1);
    for (size_t i = 0; i <= piece.size(); ++i) bounds[i] = i;
    auto pair_rank = [&](size_t i) {
        if (i + 2 >= bounds.size()) return kNone;
        const int32_t r = find(piece.substr(bounds[i], bounds[i + 2] - bounds[i]));
        return r < 0 ? kNone : r;
    };
    std::vector<int32_t> rank(piece.size());
    for (size_t i = 0; i < rank.size(); ++i) rank[i] = pair_rank(i);
    for (;;) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < rank.size(); ++i)
            if (rank[i] < rank[best]) best = i;
        if (rank.size() < 2 || rank[best] == kNone) break;
        bounds.erase(bounds.begin() + static_cast<std::ptrdiff_t>(best) + 1);
        rank.erase(rank.begin() + static_cast<std::ptrdiff_t>(best) + 1);
        rank[best] = pair_rank(best);
        if (best > 0) rank[best - 1] = pair_rank(best - 1);
    }
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
        const int32_t id = find(piece.substr(bounds[i], bounds[i + 1] - bounds[i]));
        if (id < 0)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("tokenizer.ggml.tokens: no token for byte 0x{:02x}",
                                    static_cast<unsigned char>(piece[bounds[i]])));
        out.push_back(id);
    }
}

}  // namespace jal::model::tokenizer
