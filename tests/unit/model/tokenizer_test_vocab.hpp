// A small byte-level BPE vocabulary in a GGUF file, built in memory: the 256 single bytes
// (id = byte value), a few merged tokens whose ids are their ranks, and the harmony special
// tokens. Enough to check BPE, the specials, streaming and the harmony format by hand.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <jal/model/gguf.hpp>
#include <jal/model/tokenizer.hpp>

namespace jal::model::test {

// The merged tokens after the 256 bytes, in rank order (id 256 is the first).
const std::vector<std::string>& small_vocab_merged();
// The GGUF file; `model` and `pre` override tokenizer.ggml.model / .pre.
GgufFile small_vocab_gguf(const std::string& model = "gpt2", const std::string& pre = "gpt-4o");

struct SmallVocab {
    GgufFile gguf;
    std::unique_ptr<Tokenizer> tokenizer;
    SmallVocab();
    int32_t id(const std::string& token_bytes) const;  // merged or single-byte token
    int32_t special(const std::string& literal) const { return *tokenizer->special(literal); }
};

}  // namespace jal::model::test
