// fuzz-tokenizer: the byte-level BPE tokenizer (userlib/src/model/tokenizer) on arbitrary
// bytes, with the vocabulary of tokenizer_vocab.hpp.
//
// Checks, for the input as text:
//  * every id is below the vocabulary size, and encode() (user text) never yields a
//    special token, whatever literals the text holds;
//  * valid UTF-8 (by this file's own decoder, not the library's) round-trips exactly:
//    decode(encode(text)) == text, and the same with encode_with_specials;
//  * invalid UTF-8 decodes to valid UTF-8 that encodes to the same ids again;
//  * streaming the ids through TextStream gives valid UTF-8 every step and, for valid
//    text, the text itself.
// And for the input read as token ids (2 bytes each): decode and TextStream take every id
// below the vocabulary size and refuse the others with jal::Error.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <jal/error.hpp>
#include <jal/model/tokenizer.hpp>

#include "fuzz_check.hpp"
#include "tokenizer_vocab.hpp"

namespace {

using jal::model::TextStream;
using jal::model::Tokenizer;

// Strict UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s)
{
    size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        size_t n;
        uint32_t cp, min;
        if (b < 0x80) {
            ++i;
            continue;
        } else if ((b & 0xe0) == 0xc0) {
            n = 1, cp = b & 0x1f, min = 0x80;
        } else if ((b & 0xf0) == 0xe0) {
            n = 2, cp = b & 0x0f, min = 0x800;
        } else if ((b & 0xf8) == 0xf0) {
            n = 3, cp = b & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (i + n >= s.size()) return false;  // cut short
        for (size_t k = 1; k <= n; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xc0) != 0x80) return false;
            cp = cp << 6 | (c & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += n + 1;
    }
    return true;
}

const Tokenizer& tokenizer()
{
    static const jal::model::GgufFile gguf = jal::fuzz::tokenizer_vocab_gguf();
    static const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(gguf);
    return *tok;
}

std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids)
{
    TextStream ts(tok);
    std::string out;
    for (int32_t id : ids) {
        const std::string piece = ts.push(id);
        FUZZ_CHECK(valid_utf8(piece));
        out += piece;
    }
    const std::string tail = ts.finish();
    FUZZ_CHECK(valid_utf8(tail));
    return out + tail;
}

void check_text(const Tokenizer& tok, std::string_view text)
{
    const std::vector<int32_t> ids = tok.encode(text);
    for (int32_t id : ids) {
        FUZZ_CHECK(id >= 0 && static_cast<uint32_t>(id) < tok.vocab_size());
        FUZZ_CHECK(!tok.is_special(id));
    }
    const std::string back = tok.decode(ids);
    if (valid_utf8(text)) {
        FUZZ_CHECK(back == text);
        FUZZ_CHECK(stream(tok, ids) == text);
        FUZZ_CHECK(tok.decode(tok.encode_with_specials(text)) == text);
    } else {
        FUZZ_CHECK(valid_utf8(back));
        FUZZ_CHECK(tok.encode(back) == ids);
        (void)stream(tok, ids);
    }
}

void check_ids(const Tokenizer& tok, const uint8_t* data, size_t size)
{
    const uint32_t limit = tok.vocab_size() + 8;  // a few past the end
    std::vector<int32_t> ids;
    bool out_of_range = false;
    for (size_t i = 0; i + 1 < size; i += 2) {
        const int32_t id = static_cast<int32_t>((data[i] | data[i + 1] << 8) % limit) - 4;
        out_of_range |= id < 0 || static_cast<uint32_t>(id) >= tok.vocab_size();
        ids.push_back(id);
    }
    try {
        const std::string text = tok.decode(ids);
        FUZZ_CHECK(!out_of_range);
        if (valid_utf8(text)) FUZZ_CHECK(stream(tok, ids) == text);
    } catch (const jal::Error&) {
        FUZZ_CHECK(out_of_range);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const Tokenizer& tok = tokenizer();
    check_text(tok, {reinterpret_cast<const char*>(data), size});
    check_ids(tok, data, size);
    return 0;
}
