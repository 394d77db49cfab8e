// The tokenizer on a small hand-made vocabulary: BPE by rank, the pre-tokenizer's pieces,
// special tokens, invalid UTF-8, decoding and TextStream; and the o200k vocabulary writer's
// merges.
#include <gtest/gtest.h>

#include <jal/error.hpp>

#include "model/tokenizer/o200k_vocab.hpp"
#include "model/tokenizer/pretokenizer.hpp"
#include "tokenizer_test_vocab.hpp"

namespace jal::model::test {
namespace {

using Ids = std::vector<int32_t>;

class TokenizerTest : public testing::Test {
protected:
    SmallVocab v;
    const Tokenizer& t() const { return *v.tokenizer; }
};

TEST_F(TokenizerTest, MergesTheLowestRankedPairFirst)
{
    EXPECT_EQ(t().vocab_size(), 256u + small_vocab_merged().size() + 7u);
    // A piece that is a token is that token.
    EXPECT_EQ(t().encode("hello"), (Ids{v.id("hello")}));
    // he (256) before ll (257), then hell; nothing joins "hell" and "x".
    EXPECT_EQ(t().encode("hellx"), (Ids{v.id("hell"), 'x'}));
    // bc is ranked before ab: a|bc, not ab|c.
    EXPECT_EQ(t().encode("abc"), (Ids{'a', v.id("bc")}));
    // 123 is ranked before 12.
    EXPECT_EQ(t().encode("1234"), (Ids{v.id("123"), '4'}));
    EXPECT_EQ(t().encode(" world"), (Ids{v.id(" world")}));
    EXPECT_EQ(t().encode("hello world"), (Ids{v.id("hello"), v.id(" world")}));
    EXPECT_TRUE(t().encode("").empty());
}

TEST_F(TokenizerTest, LongPiecesMergeLikeShortOnes)
{
    // One piece of 100,000 letters (BPE keeps its candidates in a heap, so this is fast).
    std::string text;
    for (int i = 0; i < 20000; ++i) text += "hello";
    const Ids ids = t().encode(text);
    EXPECT_EQ(ids, Ids(20000, v.id("hello")));
    EXPECT_EQ(t().encode(text + "l"), [&] {
        Ids e(20000, v.id("hello"));
        e.push_back('l');
        return e;
    }());
}

TEST_F(TokenizerTest, DecodesToTheExactBytes)
{
    for (const std::string s :
         {"hello world", "abc\n\n  x", "Grüße, 世界 👍🏽", "\t\r\n"}) {
        EXPECT_EQ(t().decode(t().encode(s)), s) << s;
    }
    EXPECT_EQ(t().token_bytes(v.id("hell")), "hell");
    EXPECT_THROW(t().token_bytes(-1), Error);
    EXPECT_THROW(t().token_bytes(static_cast<int32_t>(t().vocab_size())), Error);
}

TEST_F(TokenizerTest, SpecialLiteralsInUserTextAreText)
{
    const int32_t start = v.special("<|start|>");
    const int32_t end = v.special("<|end|>");
    EXPECT_TRUE(t().is_special(start));
    EXPECT_FALSE(t().is_special('a'));
    EXPECT_FALSE(t().special("<|nope|>"));
    for (int32_t id : t().encode("<|start|>hi<|end|>")) EXPECT_FALSE(t().is_special(id));
    EXPECT_EQ(t().decode(t().encode("<|start|>")), "<|start|>");
    const Ids trusted = t().encode_with_specials("<|start|>hi<|end|><|nope|>");
    ASSERT_GE(trusted.size(), 4u);
    EXPECT_EQ(trusted.front(), start);
    EXPECT_EQ(trusted[3], end);
    EXPECT_EQ(t().decode(trusted), "<|start|>hi<|end|><|nope|>");
}

TEST_F(TokenizerTest, InvalidUtf8BecomesReplacementCharacters)
{
    // Each maximal ill-formed subpart is one U+FFFD: a stray continuation byte, a cut-short
    // three-byte sequence, an overlong form.
    EXPECT_EQ(t().encode("a\x80z"), t().encode("a\xEF\xBF\xBDz"));
    EXPECT_EQ(t().encode("a\xE2\x82z"), t().encode("a\xEF\xBF\xBDz"));
    EXPECT_EQ(t().encode("\xC0\xAF"), t().encode("\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST_F(TokenizerTest, TextStreamNeverSplitsACharacter)
{
    TextStream s(t());
    EXPECT_EQ(s.push('h'), "h");
    EXPECT_EQ(s.push(0xC3), "");  // the first byte of é
    EXPECT_EQ(s.push(0xA9), "\xC3\xA9");
    EXPECT_EQ(s.push(0xF0), "");  // 👍 = F0 9F 91 8D
    EXPECT_EQ(s.push(0x9F), "");
    EXPECT_EQ(s.push(0x91), "");
    EXPECT_EQ(s.push(0x8D), "\xF0\x9F\x91\x8D");
    EXPECT_EQ(s.push(0xE2), "");
    EXPECT_EQ(s.finish(), "\xEF\xBF\xBD");    // an incomplete tail
    EXPECT_EQ(s.push(0x80), "\xEF\xBF\xBD");  // never a valid start: at once
    EXPECT_EQ(s.push(v.special("<|end|>")), "<|end|>");
    EXPECT_EQ(s.finish(), "");
}

TEST_F(TokenizerTest, RefusesFilesWithoutAUsableVocabulary)
{
    EXPECT_TRUE(Tokenizer::has_vocabulary(v.gguf));
    const GgufFile none = small_vocab_gguf("none");
    EXPECT_FALSE(Tokenizer::has_vocabulary(none));
    EXPECT_THROW(Tokenizer::from_gguf(none), Error);
    EXPECT_THROW(Tokenizer::from_gguf(small_vocab_gguf("llama")), Error);
    try {
        Tokenizer::from_gguf(small_vocab_gguf("gpt2", "llama3"));
        FAIL() << "an unknown pre-tokenizer was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.pre"), std::string::npos);
    }
}

std::vector<std::string> pieces(std::string_view text)
{
    static const tokenizer::Pretokenizer pre("gpt-4o");
    std::vector<std::string> out;
    for (std::string_view p : pre.split(text)) out.emplace_back(p);
    return out;
}

using Pieces = std::vector<std::string>;

TEST(Pretokenizer, SplitsAsTiktokensO200kPattern)
{
    EXPECT_EQ(pieces("Hello world"), (Pieces{"Hello", " world"}));
    // Contractions in any case stay with their word; a capitalised word starts a piece.
    EXPECT_EQ(pieces("they'RE I'm"), (Pieces{"they'RE", " I'm"}));
    EXPECT_EQ(pieces("HTTPServer"), (Pieces{"HTTPServer"}));
    EXPECT_EQ(pieces("camelCase"), (Pieces{"camel", "Case"}));
    // Numbers in groups of up to three digits.
    EXPECT_EQ(pieces("1234567"), (Pieces{"123", "456", "7"}));
    // White space: a run keeps its last space for the next word; newlines go together.
    EXPECT_EQ(pieces("a   b"), (Pieces{"a", "  ", " b"}));
    EXPECT_EQ(pieces("x\n\ny"), (Pieces{"x", "\n\n", "y"}));
    EXPECT_EQ(pieces("x  \n y"), (Pieces{"x", "  \n", " y"}));
    EXPECT_EQ(pieces("a+=b;"), (Pieces{"a", "+=", "b", ";"}));
    EXPECT_EQ(pieces("path/to\n"), (Pieces{"path", "/to", "\n"}));
}

TEST(Pretokenizer, UsesUnicodeLettersMarksAndWhiteSpace)
{
    // Combining marks belong to their word (Devanagari vowel signs, NFD accents).
    EXPECT_EQ(pieces("नमस्ते दुनिया"), (Pieces{"नमस्ते", " दुनिया"}));
    EXPECT_EQ(pieces("Cafe\u0301 ok"), (Pieces{"Cafe\u0301", " ok"}));
    // U+0085 (NEL), U+00A0 and U+3000 are white space (Unicode White_Space, as tiktoken's
    // \s): the run before a word gives its last character to the word.
    EXPECT_EQ(pieces("a\u0085\u0085b"), (Pieces{"a", "\u0085", "\u0085b"}));
    EXPECT_EQ(pieces("a\u3000\u3000b"), (Pieces{"a", "\u3000", "\u3000b"}));
    EXPECT_EQ(pieces("a\u00a0\u00a0"), (Pieces{"a", "\u00a0\u00a0"}));
    // U+200B (zero width space) is not white space.
    EXPECT_EQ(pieces("a \u200b"), (Pieces{"a", " \u200b"}));
}

TEST(O200kVocab, MergesAreEverySplitIntoTwoTokensByRank)
{
    // Ranks: a b c ab bc abc. "abc" splits as a|bc and ab|c, ordered by the left half's rank.
    const std::vector<std::string> tokens = {"a", "b", "c", "ab", "bc", "abc"};
    EXPECT_EQ(tokenizer::rebuild_merges(tokens),
              (std::vector<std::string>{"a b", "b c", "a bc", "ab c"}));
    // Bytes outside printable ASCII in GPT-2's byte-to-unicode form (space is U+0120).
    EXPECT_EQ(tokenizer::rebuild_merges({" ", "x", " x"}), (std::vector<std::string>{"\u0120 x"}));
}

TEST(O200kVocab, ParsesTiktokenRanksStrictly)
{
    EXPECT_THROW(tokenizer::parse_tiktoken_ranks("YQ== 0\nYg== 2\n"), Error);  // a gap
    EXPECT_THROW(tokenizer::parse_tiktoken_ranks("YQ==0\n"), Error);           // no space
    EXPECT_THROW(tokenizer::parse_tiktoken_ranks("Y*== 0\n"), Error);          // not base64
    // Well-formed but not o200k_base's size.
    EXPECT_THROW(tokenizer::parse_tiktoken_ranks("YQ== 0\nYg== 1\n"), Error);
    EXPECT_EQ(tokenizer::o200k_harmony_special(200006), "<|start|>");
    EXPECT_EQ(tokenizer::o200k_harmony_special(200018), "<|endofprompt|>");
    EXPECT_EQ(tokenizer::o200k_harmony_special(201087), "<|reserved_201087|>");
}

}  // namespace
}  // namespace jal::model::test
