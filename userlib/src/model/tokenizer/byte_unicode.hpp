// GPT-2's byte-to-unicode map: byte-level BPE vocabularies (tokenizer.ggml.tokens of a
// "gpt2" model) spell each byte as a printable code point, so a token's string is UTF-8
// text even when its bytes are not.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jal::model::tokenizer {

// The token string of `bytes` (each byte as its code point, UTF-8 encoded).
std::string bytes_to_token_text(std::string_view bytes);
// The bytes a token string spells; nullopt when it holds a code point outside the map.
std::optional<std::string> token_text_to_bytes(std::string_view text);

}  // namespace jal::model::tokenizer
