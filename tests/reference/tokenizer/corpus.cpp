#include "corpus.hpp"

#include <cstdint>

namespace jal::test {

namespace {

// Text in many scripts and forms; each is also a building block of the mixes.
const char* const kFragments[] = {
    // English, contractions in every case
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's fine",
    "DON'T SHOUT, WE'RE HERE",
    "You'Re, I'M, He'S, we'VE, they'D",
    "rock'n'roll o'clock 'tis",
    "CamelCaseIdentifier and snake_case_name",
    "HTTPServerError XMLHttpRequest iPhone eBay",
    "e.g. i.e. etc. Mr. Smith's dog",
    "  leading spaces",
    "trailing spaces   ",
    // Latin with accents, composed and decomposed (NFD)
    "Café résumé naïve façade",
    "Cafe\u0301 re\u0301sume\u0301 nai\u0308ve",
    "Ångström Øre Æsir Œuvre ß straße STRASSE",
    "Tiếng Việt có dấu: người, được, những",
    "Zürich, Kraków, Đà Nẵng, Reykjavík",
    "a\u0300\u0301\u0302\u0303 combining pile-up",
    // Case changes inside words outside ASCII
    "ПриветМир МойДом",
    "ΑθήναΠόλη ΚαλημέραΚόσμε",
    "ÉCOLEécole ÀlaCarte ÄrgerÜber",
    "iPhoneÄrger straßeSTRASSE",
    "ǅemalǈubljana",
    "ŁódźKraków ÇaVa",
    // Other scripts
    "Привет, мир! Это тест. ЁЖИК ёжик",
    "Γειά σου Κόσμε! Αυτό είναι ένα τεστ. ΣΊΣΥΦΟΣ",
    "नमस्ते दुनिया, यह एक परीक्षण है।",
    "हिन्दी में क्षेत्र, द्वितीय, श्रृंखला",
    "สวัสดีครับ ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "เด็กๆ ไปโรงเรียน น้ำใจ",
    "مرحبا بالعالم، هذا اختبار.",
    "اَلْعَرَبِيَّةُ مع التشكيل",
    "שלום עולם, זהו מבחן.",
    "עִבְרִית עם ניקוד",
    "你好，世界。这是一个测试。",
    "漢字とひらがなとカタカナ、日本語の文章です。",
    "안녕하세요 세계, 이것은 테스트입니다.",
    "한국어 띄어쓰기없이쓴문장",
    "வணக்கம் உலகம்",
    "বাংলা ভাষা",
    "ქართული ენა",
    "Հայերեն լեզու",
    "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ",
    "ትግርኛ ኣማርኛ",
    "ꯃꯤꯇꯩ ꯂꯣꯟ",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐛𝐨𝐥𝐝 𝒮𝒸𝓇𝒾𝓅𝓉",
    "ǅemal ǈubljana ǋovak",
    // Emoji: skin tones, ZWJ sequences, flags, keycaps, variation selectors
    "👍 👍🏽 👍🏿",
    "👨‍👩‍👧‍👦 family",
    "🏳️‍🌈 🏴‍☠️",
    "🇫🇷🇩🇪🇯🇵🇺🇸",
    "❤️ ❤ ♥️",
    "1️⃣ #️⃣ *️⃣",
    "🧑🏻‍💻 coder",
    "😀😃😄😁😆",
    "👩🏾‍🤝‍👩🏼",
    // Code
    "int main(int argc, char** argv) {\n    return 0;\n}\n",
    "def f(x):\n\treturn x ** 2  # square\n",
    "const x = await fetch(`/api/${id}`);",
    "fn main() { let v: Vec<u8> = vec![1, 2, 3]; println!(\"{:?}\", v); }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "for f in *.txt; do echo \"$f\" | wc -l; done",
    "{\"key\": [1, 2.5, null, true]}",
    "<div class=\"a\">&nbsp;&lt;tag&gt;</div>",
    "x+=1;y-=2;z*=3;w/=4;",
    "a->b::c<<d>>e",
    "#include <vector>\n#define MAX(a,b) ((a)>(b)?(a):(b))",
    "// comment\n/* block */",
    "path/to/some/file.txt C:\\Windows\\System32",
    "https://example.com/a?b=c&d=e#f",
    // Numbers
    "0",
    "7",
    "42",
    "123",
    "1234",
    "12345",
    "123456",
    "1234567",
    "12345678901234567890",
    "3.14159",
    "-0.001",
    "1,234,567.89",
    "6.022e23",
    "1e-10",
    "0xDEADBEEF",
    "v1.2.3",
    "٠١٢٣٤٥٦٧٨٩",
    "१२३४",
    "１２３４５",
    "²³¹ ½ ¾ Ⅻ ⑤",
    "2024-06-30T12:34:56Z",
    // White space
    " ",
    "  ",
    "    ",
    "        ",
    "\t",
    "\t\t",
    "\n",
    "\n\n",
    "\n\n\n",
    "\r\n",
    "\r\n\r\n",
    "\r",
    " \n",
    "\n ",
    " \n \n ",
    "a  b   c    d",
    "a\tb\t\tc",
    "line1\nline2\r\nline3",
    "nbsp\u00a0here",
    "ideographic\u3000space",
    "line\u2028separator",
    "para\u2029sep",
    "nel\u0085char",
    "em\u2003space thin\u2009space",
    "zero\u200bwidth",
    "\u00a0\u00a0 \u3000",
    "tab\t\u00a0mix",
    " \t \n\t ",
    // Special-token literals in user text
    "<|start|>",
    "<|endoftext|>",
    "<|start|>user<|message|>hi<|end|>",
    "<|channel|>final<|message|>",
    "<|return|> <|call|>",
    "<|reserved_200100|>",
    "<|notatoken|>",
    "<|",
    "|>",
    "< |start| >",
    "text<|end|>more",
    // Punctuation runs
    "!!!???...",
    "—–-‐",
    "«quotes» “curly” ‘single’",
    "§¶†‡•",
    "...\n\n---\n\n***",
};

const char* const kSeparators[] = {"",     " ",      "  ",     "\n",  "\t", ". ",  ", ",  "\r\n",
                                   "\n\n", "\u00a0", "\u3000", " - ", "'",  "'s ", "'LL "};

// splitmix64: a generator whose sequence is fixed by definition, on every platform.
struct Rng {
    uint64_t s;
    uint64_t next()
    {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

}  // namespace

std::vector<std::string> tokenizer_corpus()
{
    constexpr size_t kFrag = std::size(kFragments);
    constexpr size_t kSep = std::size(kSeparators);
    std::vector<std::string> out(std::begin(kFragments), std::end(kFragments));
    Rng rng{20240630};
    while (out.size() < 2400) {
        std::string s;
        const size_t parts = 2 + rng.below(4);
        for (size_t p = 0; p < parts; ++p) {
            if (p) s += kSeparators[rng.below(kSep)];
            s += kFragments[rng.below(kFrag)];
        }
        out.push_back(std::move(s));
    }
    // Numbers of every length, alone and against letters.
    std::string digits;
    for (size_t n = 1; n <= 40; ++n) {
        digits += static_cast<char>('0' + rng.below(10));
        out.push_back(digits);
        out.push_back("x" + digits + "y");
    }
    // Runs of spaces before text and at the end, every length up to 24.
    for (size_t n = 1; n <= 24; ++n) {
        out.push_back(std::string(n, ' ') + "word");
        out.push_back("word" + std::string(n, ' '));
        out.push_back(std::string(n, ' ') + "\n" + std::string(n % 5, '\t') + "x");
    }
    return out;
}

}  // namespace jal::test
