// The harmony chat format GPT-OSS was trained with: rendering a conversation into the
// prompt's token ids, and splitting the model's reply into its channels.
// docs/serving.md ("Chat format") has the layout.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/model/tokenizer.hpp>

namespace jal::model {

struct ChatMessage {
    std::string role;     // "system", "developer", "user", "assistant"
    std::string content;  // user text: never parsed for special tokens
    std::string channel;  // assistant messages: "analysis", "final", ...; empty: none
};

struct HarmonyOptions {
    std::string model_identity = "You are ChatGPT, a large language model trained by OpenAI.";
    std::string reasoning_effort = "medium";  // "low", "medium", "high"
    std::string knowledge_cutoff = "2024-06";
    std::string current_date;  // "YYYY-MM-DD"; empty: not stated
};

// <|start|>system<|message|>...<|end|> (built from the options) followed by each message,
// ending with "<|start|>assistant" so the model continues with the reply. A "system"
// message in `messages` becomes the developer message's instructions, as harmony asks.
JAL_API std::vector<int32_t> harmony_prompt(const Tokenizer& tokenizer,
                                            std::span<const ChatMessage> messages,
                                            const HarmonyOptions& options = {});

// Ids that end an assistant turn (<|return|>, <|call|>; <|end|> ends a message).
JAL_API std::vector<int32_t> harmony_stop_tokens(const Tokenizer& tokenizer);

// Splits generated ids into messages by channel as they arrive: push() returns the text
// added to the current message (after its header), channel() says which channel it is in.
class JAL_API HarmonyReader {
public:
    explicit HarmonyReader(const Tokenizer& tokenizer);
    struct Piece {
        std::string channel;  // channel of the message this text belongs to
        std::string text;     // new content text (complete UTF-8 characters only)
        bool message_end = false;
        bool turn_end = false;  // <|return|> or <|call|>: nothing more follows
    };
    Piece push(int32_t id);
    Piece finish();

private:
    const Tokenizer& tokenizer_;
    TextStream text_;
    std::string channel_;
    std::string header_;
    bool in_header_ = true;
};

}  // namespace jal::model
