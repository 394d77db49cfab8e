// jal-run's text side: the model's tokenizer (when its GGUF carries a vocabulary), a text
// prompt (plain or wrapped in the harmony chat format) and the generated ids printed as text
// while they come (docs/serving.md, "Tokenizer" and "Chat format").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <jal/model/tokenizer.hpp>

namespace jal::run {

// Used when the model has a vocabulary and neither --prompt nor --prompt-ids is given.
inline constexpr const char* kDefaultTextPrompt = "The Jalapeño chip has sixty-four slices, and";

// The tokenizer of the GGUF at `path`; nullptr when the file has no vocabulary.
std::unique_ptr<model::Tokenizer> open_tokenizer(const std::string& path);

// `text` as the prompt's ids: as it is (user text: special-token literals stay text), or
// with `chat` as a harmony conversation (an optional system message, then the user's
// message), ending where the assistant's reply starts.
std::vector<int32_t> text_prompt_ids(const model::Tokenizer& tokenizer, const std::string& text,
                                     bool chat, const std::string& system);

// Turns generated ids into text as they come, never splitting a UTF-8 character, and with
// `print` writes it to stdout at once; special tokens are their literal (so a chat reply
// shows its harmony structure).
class TextPrinter {
public:
    TextPrinter(const model::Tokenizer& tokenizer, bool print) : stream_(tokenizer), print_(print)
    {}
    void push(int32_t id);
    void finish();  // the rest, and a newline when printing

    const std::string& text() const { return text_; }  // all of it so far

private:
    void emit(const std::string& piece);

    model::TextStream stream_;
    bool print_;
    std::string text_;
};

}  // namespace jal::run
