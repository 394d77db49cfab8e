#include "asm_text.hpp"

#include <charconv>
#include <cstdint>

#include <fmt/format.h>

namespace jal::isa::detail {

void fail_at(unsigned col, std::string message)
{
    throw AsmFailure{col, std::move(message)};
}

void fail_at(const Tok& t, std::string message)
{
    fail_at(t.col, std::move(message));
}

namespace {

bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

}  // namespace

Tok trim(Tok t)
{
    size_t b = 0, e = t.text.size();
    while (b < e && blank(t.text[b])) ++b;
    while (e > b && blank(t.text[e - 1])) --e;
    return {t.text.substr(b, e - b), t.col + static_cast<unsigned>(b)};
}

std::pair<Tok, Tok> split_word(Tok t)
{
    t = trim(t);
    size_t i = 0;
    while (i < t.text.size() && !blank(t.text[i])) ++i;
    Tok word{t.text.substr(0, i), t.col};
    Tok rest = trim({t.text.substr(i), t.col + static_cast<unsigned>(i)});
    return {word, rest};
}

std::vector<Tok> split_operands(Tok t)
{
    std::vector<Tok> out;
    t = trim(t);
    if (t.text.empty()) return out;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= t.text.size(); ++i) {
        const char c = i < t.text.size() ? t.text[i] : ',';
        if (c == '[' || c == '(') ++depth;
        if ((c == ']' || c == ')') && depth > 0) --depth;
        if (c != ',' || (depth > 0 && i < t.text.size())) continue;
        Tok op = trim({t.text.substr(start, i - start), t.col + static_cast<unsigned>(start)});
        if (op.text.empty()) fail_at(op, "empty operand");
        out.push_back(op);
        start = i + 1;
    }
    return out;
}

std::optional<int64_t> parse_int(std::string_view s)
{
    bool negative = false;
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    if (v > (uint64_t{1} << 63)) return std::nullopt;
    if (v == (uint64_t{1} << 63))
        return negative ? std::optional<int64_t>(INT64_MIN) : std::nullopt;
    return negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

int64_t expect_int(const Tok& t, int64_t lo, int64_t hi, std::string_view what)
{
    const std::optional<int64_t> v = parse_int(t.text);
    if (!v) fail_at(t, fmt::format("expected {} (a number), found '{}'", what, t.text));
    if (*v < lo || *v > hi)
        fail_at(t, fmt::format("{} {} is out of range {}..{}", what, *v, lo, hi));
    return *v;
}

}  // namespace jal::isa::detail
