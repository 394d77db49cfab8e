#include "tokenizer_vocab.hpp"

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "model/tokenizer/byte_unicode.hpp"

namespace jal::fuzz {

namespace {

// In rank order: a merge's halves must come before it.
const char* const kMerged[] = {
    "he",
    "ll",
    "hell",
    "hello",
    " w",
    "or",
    " wor",
    " world",
    "in",
    "ing",
    " t",
    "th",
    " th",
    " the",
    "12",
    "123",
    "  ",
    "    ",
    "\n\n",
    "\xc3\xa9",
    "caf",
    "caf\xc3\xa9",
    "\xe6\x97",
    "\xe6\x97\xa5",
    "\xe6\x9c\xac",
    "\xe6\x97\xa5\xe6\x9c\xac",
    "\xf0\x9f",
    "\xf0\x9f\x98",
    "\xf0\x9f\x98\x80",
    "'s",
    "'t",
    " (",
    ");",
};
const char* const kSpecials[] = {"<|start|>",  "<|end|>",  "<|message|>",  "<|channel|>",
                                 "<|return|>", "<|call|>", "<|constrain|>"};
constexpr int32_t kTypeNormal = 1, kTypeControl = 3, kTypeUnused = 5;

}  // namespace

jal::model::GgufFile tokenizer_vocab_gguf()
{
    using jal::model::tokenizer::bytes_to_token_text;
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(bytes_to_token_text(std::string(1, static_cast<char>(b))));
        types.push_back(kTypeNormal);
    }
    for (const char* m : kMerged) {
        tokens.push_back(bytes_to_token_text(m));
        types.push_back(kTypeNormal);
    }
    for (const char* s : kSpecials) {
        tokens.push_back(s);
        types.push_back(kTypeControl);
    }
    tokens.push_back("<|reserved_unused|>");
    types.push_back(kTypeUnused);

    jal::model::GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "gpt-4o");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_array_i32("tokenizer.ggml.token_type", types);
    std::ostringstream out;
    w.begin(out);
    w.finish();
    const std::string s = out.str();
    std::vector<std::byte> bytes(s.size());
    std::memcpy(bytes.data(), s.data(), s.size());
    return jal::model::GgufFile::from_bytes(std::move(bytes), "fuzz-vocab");
}

}  // namespace jal::fuzz
