// The special (control) tokens of a vocabulary: their literals, and finding them in
// trusted text.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jal::model::tokenizer {

class SpecialTokens {
public:
    void add(std::string literal, int32_t id);
    std::optional<int32_t> find(std::string_view literal) const;

    struct Match {
        size_t pos = std::string_view::npos;  // npos: none
        size_t length = 0;
        int32_t id = -1;
    };
    // The first literal in `text` at or after `from` (the longest one at that position).
    Match next(std::string_view text, size_t from) const;

private:
    std::unordered_map<std::string, int32_t> ids_;
    // Literals by first byte, longest first, so a scan tries few at each position.
    std::array<std::vector<std::string>, 256> by_first_;
};

}  // namespace jal::model::tokenizer
