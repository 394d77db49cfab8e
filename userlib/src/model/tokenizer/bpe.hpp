// Byte-level BPE as tiktoken does it: a piece that is a token is that token; otherwise its
// bytes merge pairwise, always the adjacent pair whose concatenation has the lowest rank
// (the leftmost of equals), until no adjacent pair concatenates to a token. A token's rank
// is its id, as in o200k (tiktoken's ranks are the ids).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jal::model::tokenizer {

class BpeRanks {
public:
    // `token_bytes[id]` for every id; ids in `excluded` (special tokens) never come out of
    // BPE. The strings must outlive this object and not move (views point into them).
    BpeRanks(const std::vector<std::string>& token_bytes, const std::vector<bool>& excluded);

    // Appends the ids of `piece` to `out`. Throws INVALID_FIELD when some byte has no
    // token (a vocabulary without all 256 single bytes).
    void encode(std::string_view piece, std::vector<int32_t>& out) const;
    // The id of exactly these bytes, or -1.
    int32_t find(std::string_view bytes) const;

private:
    std::unordered_map<std::string_view, int32_t> ids_;
};

}  // namespace jal::model::tokenizer
