// The pre-tokenizer: splits text into the pieces BPE runs on, with a regular expression
// (PCRE2, JIT-compiled, UTF and Unicode properties). "gpt-4o" is tiktoken's o200k pattern.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jal::model::tokenizer {

class Pretokenizer {
public:
    // The pattern of a tokenizer.ggml.pre name; throws INVALID_FIELD for unknown names.
    explicit Pretokenizer(std::string_view pre_name);
    // Any PCRE2 pattern (UTF, Unicode properties); the reference tests use llama.cpp's.
    struct Pattern {
        std::string text;
    };
    explicit Pretokenizer(const Pattern& pattern);
    ~Pretokenizer();
    Pretokenizer(const Pretokenizer&) = delete;
    Pretokenizer& operator=(const Pretokenizer&) = delete;

    // The pieces of `text`, which must be valid UTF-8, in order; they cover all of it.
    std::vector<std::string_view> split(std::string_view text) const;

    // tiktoken's o200k_base pattern, with \s spelled as the Unicode White_Space set.
    static const char* o200k_pattern();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jal::model::tokenizer
