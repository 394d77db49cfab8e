// Why llama.cpp's tokenizer may encode a string differently from tiktoken (and us). Each
// cause is a change to tiktoken's pre-tokenization that llama.cpp makes; a difference is
// explained when tiktoken's BPE over the pieces of the smallest set of those changes gives
// exactly llama.cpp's ids (docs/serving.md, "Tokenizer"):
//   "harmony literals": <|start|>, <|channel|>, <|message|>, <|constrain|> and <|end|>
//       become their special tokens even in plain text (llama.cpp marks them user-defined
//       for gpt-oss);
//   "combining marks": its pattern leaves \p{M} out of the letter runs, so vowel signs and
//       accents (Devanagari, Thai, NFD text) split words.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <jal/model/tokenizer.hpp>

namespace jal::test {

class LlamaDifferences {
public:
    explicit LlamaDifferences(const model::Tokenizer& tokenizer);
    ~LlamaDifferences();
    // The causes (joined by " + ") that reproduce llama.cpp's `llama_ids` for `text`, or
    // nullopt when none does.
    std::optional<std::string> cause(const std::string& text,
                                     const std::vector<int32_t>& llama_ids) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jal::test
