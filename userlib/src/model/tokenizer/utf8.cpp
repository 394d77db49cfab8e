#include "utf8.hpp"

namespace jal::model::tokenizer {

void append_utf8(std::string& out, uint32_t cp)
{
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
        out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
}

namespace {

// The sequence length a lead byte announces and the range its second byte must fall in
// (Unicode Table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
struct Lead {
    int length;  // 0: not a lead byte
    unsigned char lo, hi;
};

Lead lead_of(unsigned char b)
{
    if (b < 0x80) return {1, 0, 0};
    if (b >= 0xc2 && b <= 0xdf) return {2, 0x80, 0xbf};
    if (b == 0xe0) return {3, 0xa0, 0xbf};
    if (b == 0xed) return {3, 0x80, 0x9f};
    if (b >= 0xe1 && b <= 0xef) return {3, 0x80, 0xbf};
    if (b == 0xf0) return {4, 0x90, 0xbf};
    if (b >= 0xf1 && b <= 0xf3) return {4, 0x80, 0xbf};
    if (b == 0xf4) return {4, 0x80, 0x8f};
    return {0, 0, 0};
}

// Bytes of a well-formed prefix of the sequence at `pos` (== length: complete).
int valid_prefix(std::string_view s, size_t pos, const Lead& lead)
{
    int n = 1;
    while (n < lead.length && pos + n < s.size()) {
        const auto c = static_cast<unsigned char>(s[pos + n]);
        const bool ok = n == 1 ? (c >= lead.lo && c <= lead.hi) : (c >= 0x80 && c <= 0xbf);
        if (!ok) break;
        ++n;
    }
    return n;
}

}  // namespace

std::optional<uint32_t> next_code_point(std::string_view s, size_t& pos)
{
    const auto b = static_cast<unsigned char>(s[pos]);
    const Lead lead = lead_of(b);
    if (lead.length == 0) {
        ++pos;
        return std::nullopt;
    }
    const int n = valid_prefix(s, pos, lead);
    if (n < lead.length) {
        pos += n;
        return std::nullopt;
    }
    uint32_t cp = lead.length == 1 ? b : b & (0x7f >> lead.length);
    for (int i = 1; i < lead.length; ++i)
        cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3f);
    pos += lead.length;
    return cp;
}

std::string repair_utf8(std::string_view s)
{
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    while (pos < s.size()) {
        const size_t start = pos;
        if (next_code_point(s, pos))
            out.append(s.substr(start, pos - start));
        else
            append_utf8(out, 0xfffd);
    }
    return out;
}

bool is_valid_utf8(std::string_view s)
{
    size_t pos = 0;
    while (pos < s.size())
        if (!next_code_point(s, pos)) return false;
    return true;
}

size_t complete_prefix(std::string_view s)
{
    // Only the last three bytes can belong to a cut-short character.
    const size_t from = s.size() > 3 ? s.size() - 3 : 0;
    for (size_t start = from; start < s.size(); ++start) {
        const Lead lead = lead_of(static_cast<unsigned char>(s[start]));
        if (lead.length <= 1) continue;
        const size_t left = s.size() - start;
        if (left < static_cast<size_t>(lead.length) &&
            valid_prefix(s, start, lead) == static_cast<int>(left))
            return start;
    }
    return s.size();
}

}  // namespace jal::model::tokenizer
