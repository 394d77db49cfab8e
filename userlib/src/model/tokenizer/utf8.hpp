// The little UTF-8 the tokenizer needs: decoding one code point strictly, repairing
// invalid input, and finding where a byte string stops being complete characters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jal::model::tokenizer {

void append_utf8(std::string& out, uint32_t cp);
// The code point at `pos` (advancing it past it), or nullopt when the bytes there are not
// a well-formed UTF-8 sequence; then `pos` moves past the longest prefix that could have
// started one (at least one byte), as the Unicode standard's "maximal subpart" rule says.
std::optional<uint32_t> next_code_point(std::string_view s, size_t& pos);
// `s` with every ill-formed sequence (maximal subpart) replaced by U+FFFD.
std::string repair_utf8(std::string_view s);
bool is_valid_utf8(std::string_view s);
// Length of the longest prefix of `s` that does not end inside an incomplete character
// (a well-formed sequence cut short at the end); ill-formed bytes count as complete.
size_t complete_prefix(std::string_view s);

}  // namespace jal::model::tokenizer
