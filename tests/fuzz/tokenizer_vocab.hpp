// The vocabulary fuzz-tokenizer encodes with: the 256 single bytes, merged tokens (ASCII
// words, multi-byte UTF-8 characters and pieces of them, whitespace runs) and the harmony
// special tokens, as a GGUF file in memory. Small, so a run spends its time in the
// pre-tokenizer and BPE rather than in setting up o200k's 200k tokens.
#pragma once

#include <jal/model/gguf.hpp>

namespace jal::fuzz {

jal::model::GgufFile tokenizer_vocab_gguf();

}  // namespace jal::fuzz
