// GPT-OSS's vocabulary (o200k_harmony: tiktoken's o200k_base and the harmony special
// tokens) written into a GGUF file as llama.cpp's converter writes it for GPT-OSS.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jal::model {
class GgufWriter;
}  // namespace jal::model

namespace jal::model::tokenizer {

inline constexpr uint32_t kO200kHarmonyVocab = 201088;
inline constexpr int32_t kO200kFirstSpecial = 199998;

// The bytes of each token of a tiktoken ranks file ("<base64> <rank>" lines), by rank.
// Throws INVALID_FIELD on a malformed line or a gap in the ranks.
std::vector<std::string> parse_tiktoken_ranks(std::string_view file);
// The literal of harmony special token `id` (kO200kFirstSpecial..kO200kHarmonyVocab-1).
std::string o200k_harmony_special(int32_t id);
// The merges of HF's tiktoken conversion (the tokenizer.json llama.cpp's converter reads):
// for each token in rank order, every split into two tokens, ordered by the ranks of the
// halves; "left right" in GPT-2's byte-to-unicode form.
std::vector<std::string> rebuild_merges(const std::vector<std::string>& token_bytes);
// tokenizer.ggml.* for o200k_harmony from the text of tiktoken's o200k_base ranks file.
void write_o200k_vocab(GgufWriter& w, std::string_view ranks_file);

}  // namespace jal::model::tokenizer
