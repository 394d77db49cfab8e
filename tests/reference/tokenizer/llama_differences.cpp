#include "llama_differences.hpp"

#include <array>

#include "model/tokenizer/bpe.hpp"
#include "model/tokenizer/pretokenizer.hpp"

namespace jal::test {

namespace {

using model::tokenizer::BpeRanks;
using model::tokenizer::Pretokenizer;

// tiktoken's o200k pattern without \p{M} in the letter runs, as in llama.cpp's rewrite of
// it for "gpt-4o" (src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_GPT4O). That rewrite also
// spells case as [^a-z] / [^A-Z], which reads as if only ASCII letters had case, but its
// regex engine gives tiktoken's pieces for mixed-case words in other scripts (the corpus
// has them), so that is not a cause.
const char* const kNoMarks =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}]*[\\p{Ll}\\p{Lm}\\p{Lo}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}]+[\\p{Ll}\\p{Lm}\\p{Lo}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// llama-vocab.cpp marks these user-defined for gpt-oss: <|end|> because <|return|> and
// <|call|> end the turn instead, the others so that they are always rendered.
const char* const kAlwaysParsed[] = {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>",
                                     "<|end|>"};

enum Cause : unsigned { kLiterals = 1, kMarks = 2 };

}  // namespace

struct LlamaDifferences::Impl {
    const model::Tokenizer& tokenizer;
    std::vector<std::string> bytes;
    std::unique_ptr<BpeRanks> ranks;
    // tiktoken's pattern, and the same without \p{M} in the letter runs.
    std::array<std::unique_ptr<Pretokenizer>, 2> patterns;

    explicit Impl(const model::Tokenizer& t) : tokenizer(t)
    {
        std::vector<bool> special(t.vocab_size());
        for (uint32_t id = 0; id < t.vocab_size(); ++id) {
            bytes.push_back(t.token_bytes(static_cast<int32_t>(id)));
            special[id] = t.is_special(static_cast<int32_t>(id));
        }
        ranks = std::make_unique<BpeRanks>(bytes, special);
        patterns[0] = std::make_unique<Pretokenizer>("gpt-4o");
        patterns[1] = std::make_unique<Pretokenizer>(Pretokenizer::Pattern{kNoMarks});
    }

    void encode_plain(std::string_view text, unsigned causes, std::vector<int32_t>& out) const
    {
        const auto& pre = *patterns[causes & kMarks ? 1 : 0];
        for (std::string_view piece : pre.split(text)) ranks->encode(piece, out);
    }

    // Tokenization with the changes in `causes`.
    std::vector<int32_t> simulate(std::string_view text, unsigned causes) const
    {
        std::vector<int32_t> out;
        size_t pos = 0;
        while (causes & kLiterals) {
            size_t at = std::string_view::npos, len = 0;
            for (const char* lit : kAlwaysParsed) {
                const size_t p = text.find(lit, pos);
                if (p < at) at = p, len = std::string_view(lit).size();
            }
            if (at == std::string_view::npos) break;
            encode_plain(text.substr(pos, at - pos), causes, out);
            out.push_back(*tokenizer.special(text.substr(at, len)));
            pos = at + len;
        }
        encode_plain(text.substr(pos), causes, out);
        return out;
    }
};

LlamaDifferences::LlamaDifferences(const model::Tokenizer& tokenizer)
    : impl_(std::make_unique<Impl>(tokenizer))
{}

LlamaDifferences::~LlamaDifferences() = default;

std::optional<std::string> LlamaDifferences::cause(const std::string& text,
                                                   const std::vector<int32_t>& llama_ids) const
{
    // The smallest sets first, so each difference is charged to as few causes as possible.
    for (unsigned causes : {1u, 2u, 3u}) {  // literals, marks, both
        if (impl_->simulate(text, causes) != llama_ids) continue;
        std::string name;
        if (causes & kLiterals) name += "harmony literals";
        if (causes & kMarks) name += std::string(name.empty() ? "" : " + ") + "combining marks";
        return name;
    }
    return std::nullopt;
}

}  // namespace jal::test
