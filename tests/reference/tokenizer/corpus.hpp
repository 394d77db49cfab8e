// The tokenizer reference corpus: a few thousand strings, always the same, that mix many
// scripts, emoji sequences, code, numbers, white space of every kind and special-token
// literals (docs/serving.md, "Tokenizer").
#pragma once

#include <string>
#include <vector>

namespace jal::test {

// The fragments on their own, then deterministic mixes of them (at least 2,000 in all).
std::vector<std::string> tokenizer_corpus();

}  // namespace jal::test
