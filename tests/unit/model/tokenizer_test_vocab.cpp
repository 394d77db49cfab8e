#include "tokenizer_test_vocab.hpp"

#include <algorithm>

#include "gguf_test_util.hpp"
#include "model/tokenizer/byte_unicode.hpp"

namespace jal::model::test {

namespace {

const std::vector<std::string> kSpecials = {"<|start|>",  "<|end|>",  "<|message|>",  "<|channel|>",
                                            "<|return|>", "<|call|>", "<|constrain|>"};

}  // namespace

const std::vector<std::string>& small_vocab_merged()
{
    static const std::vector<std::string> merged = {
        "he",   "ll", "hell", "hello", " w",  "or",     " wor",      " world",
        "bc",   "ab", "123",  "12",    "  ",  "\n\n",   "er",        "us",
        "user", "as", "ass",  "ist",   "ant", "assist", "assistant",
    };
    return merged;
}

GgufFile small_vocab_gguf(const std::string& model, const std::string& pre)
{
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(tokenizer::bytes_to_token_text(std::string(1, static_cast<char>(b))));
        types.push_back(1);
    }
    for (const std::string& m : small_vocab_merged()) {
        tokens.push_back(tokenizer::bytes_to_token_text(m));
        types.push_back(1);
    }
    for (const std::string& s : kSpecials) {
        tokens.push_back(s);
        types.push_back(3);
    }
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", model);
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_array_i32("tokenizer.ggml.token_type", types);
    return GgufFile::from_bytes(write_to_bytes(w), "small-vocab");
}

SmallVocab::SmallVocab() : gguf(small_vocab_gguf()), tokenizer(Tokenizer::from_gguf(gguf)) {}

int32_t SmallVocab::id(const std::string& token_bytes) const
{
    if (token_bytes.size() == 1) return static_cast<unsigned char>(token_bytes[0]);
    const auto& m = small_vocab_merged();
    const auto it = std::find(m.begin(), m.end(), token_bytes);
    return it == m.end() ? -1 : static_cast<int32_t>(256 + (it - m.begin()));
}

}  // namespace jal::model::test
