// Text to token ids and back, from the vocabulary a GGUF file carries (byte-level BPE as
// llama.cpp stores it: tokenizer.ggml.model = "gpt2", tokens, merges, token types), with
// the pre-tokenizer of the file's tokenizer.ggml.pre ("gpt-4o": tiktoken's o200k pattern).
// docs/serving.md ("Tokenizer") says how it is built and how exact it is.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <jal/api.h>

namespace jal::model {

class GgufFile;

class JAL_API Tokenizer {
public:
    // Throws jal::Error (JAL_STATUS_INVALID_FIELD, naming the key) when the file has no
    // usable vocabulary (tokenizer.ggml.model "none", or a model or pre-tokenizer this
    // library does not implement).
    static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& gguf);
    // Whether from_gguf would find a vocabulary at all (a "none" model has none). Throws
    // jal::Error INVALID_FIELD when tokenizer.ggml.model is there but not a string.
    static bool has_vocabulary(const GgufFile& gguf);

    virtual ~Tokenizer() = default;

    virtual uint32_t vocab_size() const = 0;
    // User text: special-token literals such as "<|start|>" are ordinary text here, so
    // text from users can never inject control tokens.
    virtual std::vector<int32_t> encode(std::string_view text) const = 0;
    // Trusted text (templates, tests): special-token literals become their ids.
    virtual std::vector<int32_t> encode_with_specials(std::string_view text) const = 0;
    // The bytes of a token (a special token: its literal). Throws on an id out of range.
    virtual std::string token_bytes(int32_t id) const = 0;
    // The bytes of a sequence; may end inside a UTF-8 character (see TextStream).
    virtual std::string decode(std::span<const int32_t> ids) const = 0;
    // "<|start|>" -> 200006; nullopt when the vocabulary has no such special token.
    virtual std::optional<int32_t> special(std::string_view literal) const = 0;
    virtual bool is_special(int32_t id) const = 0;
};

// Turns a stream of token ids into text a piece at a time without ever splitting a UTF-8
// character: bytes of an incomplete character wait for the next token. finish() flushes
// what is left (an incomplete tail becomes U+FFFD).
class JAL_API TextStream {
public:
    explicit TextStream(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
    std::string push(int32_t id);
    std::string finish();

private:
    const Tokenizer& tokenizer_;
    std::string pending_;
};

}  // namespace jal::model
