#include "special_tokens.hpp"

#include <algorithm>

namespace jal::model::tokenizer {

void SpecialTokens::add(std::string literal, int32_t id)
{
    if (literal.empty() || !ids_.emplace(literal, id).second) return;
    auto& bucket = by_first_[static_cast<unsigned char>(literal[0])];
    bucket.push_back(std::move(literal));
    std::stable_sort(bucket.begin(), bucket.end(), [](const std::string& a, const std::string& b) {
        return a.size() > b.size();
    });
}

std::optional<int32_t> SpecialTokens::find(std::string_view literal) const
{
    const auto it = ids_.find(std::string(literal));
    if (it == ids_.end()) return std::nullopt;
    return it->second;
}

SpecialTokens::Match SpecialTokens::next(std::string_view text, size_t from) const
{
    for (size_t pos = from; pos < text.size(); ++pos) {
        for (const std::string& lit : by_first_[static_cast<unsigned char>(text[pos])]) {
            if (text.substr(pos, lit.size()) == lit) return {pos, lit.size(), ids_.at(lit)};
        }
    }
    return {};
}

}  // namespace jal::model::tokenizer
