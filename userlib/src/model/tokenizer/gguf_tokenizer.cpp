// Tokenizer::from_gguf: the byte-level BPE vocabulary of a GGUF file (tokenizer.ggml.*).
#include <fmt/format.h>

#include <jal/error.hpp>
#include <jal/model/gguf.hpp>
#include <jal/model/tokenizer.hpp>

#include "bpe.hpp"
#include "byte_unicode.hpp"
#include "pretokenizer.hpp"
#include "special_tokens.hpp"
#include "utf8.hpp"

namespace jal::model {

namespace {

using namespace tokenizer;

// llama.cpp's token types (llama_token_type): control tokens are the special ones.
constexpr int64_t kTypeControl = 3;
constexpr int64_t kTypeUnused = 5;

class ByteLevelBpe final : public Tokenizer {
public:
    explicit ByteLevelBpe(const GgufFile& gguf);

    uint32_t vocab_size() const override { return static_cast<uint32_t>(bytes_.size()); }
    std::vector<int32_t> encode(std::string_view text) const override;
    std::vector<int32_t> encode_with_specials(std::string_view text) const override;
    std::string token_bytes(int32_t id) const override;
    std::string decode(std::span<const int32_t> ids) const override;
    std::optional<int32_t> special(std::string_view literal) const override
    {
        return specials_.find(literal);
    }
    bool is_special(int32_t id) const override
    {
        return id >= 0 && static_cast<size_t>(id) < special_.size() && special_[id];
    }

private:
    void encode_plain(std::string_view text, std::vector<int32_t>& out) const;

    std::vector<std::string> bytes_;  // by id; a special token: its literal
    std::vector<bool> special_;
    SpecialTokens specials_;
    Pretokenizer pre_;
    std::unique_ptr<BpeRanks> ranks_;  // after bytes_ is final (it points into it)
};

ByteLevelBpe::ByteLevelBpe(const GgufFile& gguf) : pre_(gguf.get_string("tokenizer.ggml.pre"))
{
    const auto tokens = gguf.get_string_array("tokenizer.ggml.tokens");
    std::vector<int64_t> types(tokens.size(), 1);
    if (gguf.find_kv("tokenizer.ggml.token_type")) {
        types = gguf.get_int_array("tokenizer.ggml.token_type");
        if (types.size() != tokens.size())
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("tokenizer.ggml.token_type: {} entries for {} tokens",
                                    types.size(), tokens.size()));
    }
    bytes_.resize(tokens.size());
    special_.assign(tokens.size(), false);
    for (size_t id = 0; id < tokens.size(); ++id) {
        if (types[id] == kTypeControl || types[id] == kTypeUnused) {
            // Control tokens are stored as their literal, not byte-mapped; unused ones
            // never come out of BPE and decode as their text.
            special_[id] = types[id] == kTypeControl;
            bytes_[id] = std::string(tokens[id]);
            if (special_[id]) specials_.add(bytes_[id], static_cast<int32_t>(id));
            continue;
        }
        auto b = token_text_to_bytes(tokens[id]);
        if (!b)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("tokenizer.ggml.tokens[{}]: '{}' is not in GPT-2's "
                                    "byte-to-unicode form",
                                    id, tokens[id]));
        bytes_[id] = std::move(*b);
    }
    std::vector<bool> excluded(tokens.size());
    for (size_t id = 0; id < tokens.size(); ++id)
        excluded[id] = types[id] == kTypeControl || types[id] == kTypeUnused;
    ranks_ = std::make_unique<BpeRanks>(bytes_, excluded);
}

void ByteLevelBpe::encode_plain(std::string_view text, std::vector<int32_t>& out) const
{
    for (std::string_view piece : pre_.split(text)) ranks_->encode(piece, out);
}

std::vector<int32_t> ByteLevelBpe::encode(std::string_view text) const
{
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 1);
    if (is_valid_utf8(text)) {
        encode_plain(text, out);
    } else {
        // tiktoken encodes str (always valid); bytes that are not UTF-8 become U+FFFD,
        // as decoding with errors="replace" would (docs/serving.md, "Tokenizer").
        encode_plain(repair_utf8(text), out);
    }
    return out;
}

std::vector<int32_t> ByteLevelBpe::encode_with_specials(std::string_view text) const
{
    std::vector<int32_t> out;
    size_t pos = 0;
    while (pos < text.size()) {
        const SpecialTokens::Match m = specials_.next(text, pos);
        const size_t end = m.pos == std::string_view::npos ? text.size() : m.pos;
        if (end > pos) {
            const auto plain = encode(text.substr(pos, end - pos));
            out.insert(out.end(), plain.begin(), plain.end());
        }
        if (m.pos == std::string_view::npos) break;
        out.push_back(m.id);
        pos = m.pos + m.length;
    }
    return out;
}

std::string ByteLevelBpe::token_bytes(int32_t id) const
{
    if (id < 0 || static_cast<size_t>(id) >= bytes_.size())
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("token {} is not below the vocabulary size {}", id, bytes_.size()));
    return bytes_[id];
}

std::string ByteLevelBpe::decode(std::span<const int32_t> ids) const
{
    std::string out;
    for (int32_t id : ids) out += token_bytes(id);
    return out;
}

}  // namespace

bool Tokenizer::has_vocabulary(const GgufFile& gguf)
{
    const auto model = gguf.find_string("tokenizer.ggml.model");
    return model && *model != "none" && gguf.find_kv("tokenizer.ggml.tokens");
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf)
{
    const auto model = gguf.find_string("tokenizer.ggml.model");
    if (!model || *model == "none")
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "tokenizer.ggml.model: the file has no vocabulary (token ids only)");
    if (*model != "gpt2")
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("tokenizer.ggml.model: '{}' is not implemented (only 'gpt2', "
                                "byte-level BPE)",
                                *model));
    return std::make_unique<ByteLevelBpe>(gguf);
}

}  // namespace jal::model
