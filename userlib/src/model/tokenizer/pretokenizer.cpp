#include "pretokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

#include <jal/error.hpp>

namespace jal::model::tokenizer {

namespace {

// tiktoken (Rust, fancy-regex over the regex crate) reads \s as Unicode White_Space.
// PCRE2's \s with PCRE2_UCP leaves out U+0085 (NEL), so the pattern spells the set out:
// White_Space = U+0009..U+000D, U+0085 and the separators \p{Z}.
#define JAL_WS "\\t-\\r\\x{85}\\p{Z}"
constexpr const char* kO200k =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}"
    "| ?[^" JAL_WS "\\p{L}\\p{N}]+[\\r\\n/]*"
    "|[" JAL_WS "]*[\\r\\n]+"
    "|[" JAL_WS "]+(?![^" JAL_WS "])"
    "|[" JAL_WS "]+";
#undef JAL_WS

}  // namespace

struct Pretokenizer::Impl {
    pcre2_code* code = nullptr;
    ~Impl() { pcre2_code_free(code); }
};

const char* Pretokenizer::o200k_pattern()
{
    return kO200k;
}

namespace {

std::string pattern_of(std::string_view pre_name)
{
    if (pre_name != "gpt-4o")
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("tokenizer.ggml.pre: '{}' is not implemented (only 'gpt-4o', "
                                "tiktoken's o200k)",
                                pre_name));
    return kO200k;
}

}  // namespace

Pretokenizer::Pretokenizer(std::string_view pre_name) : Pretokenizer(Pattern{pattern_of(pre_name)})
{}

Pretokenizer::Pretokenizer(const Pattern& pattern) : impl_(std::make_unique<Impl>())
{
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    impl_->code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.text.c_str()), PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
    if (!impl_->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        throw Error(JAL_STATUS_INTERNAL, fmt::format("pre-tokenizer pattern: {} at {}",
                                                     reinterpret_cast<char*>(msg), err_offset));
    }
    // Without JIT (an unsupported CPU) pcre2_match still works, only slower.
    pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);
}

Pretokenizer::~Pretokenizer() = default;

std::vector<std::string_view> Pretokenizer::split(std::string_view text) const
{
    std::vector<std::string_view> pieces;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t pos = 0;
    while (pos < text.size()) {
        // The text was validated once by the caller; no check per match.
        const int rc =
            pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        // Every character starts some alternative of the patterns used, so anything else
        // (no match, an empty one, a JIT stack limit) is a fault, never text to drop.
        if (rc < 0 || ov[0] != pos || ov[1] <= pos) {
            pcre2_match_data_free(md);
            throw Error(
                JAL_STATUS_INTERNAL,
                fmt::format("pre-tokenizer: no piece at byte {} (PCRE2 result {})", pos, rc));
        }
        pieces.push_back(text.substr(pos, ov[1] - pos));
        pos = ov[1];
    }
    pcre2_match_data_free(md);
    return pieces;
}

}  // namespace jal::model::tokenizer
