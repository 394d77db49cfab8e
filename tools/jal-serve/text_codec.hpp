// The server's one door to text: prompts to token ids, generated ids back to text, and the
// chat format. Everything else in jal-serve works on token ids, so a model without a
// vocabulary (the synthetic test models: tokenizer.ggml.model = "none") is served in ids
// and only this component knows about tokenizers (docs/serving.md, "Server").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jal::serve {

struct ChatTurn {
    std::string role;  // "system", "developer", "user", "assistant"
    std::string content;
};

// Generated ids to text, a piece at a time, never splitting a UTF-8 character.
class ReplyDecoder {
public:
    struct Piece {
        std::string content;    // completion text, or a chat reply's "final" channel
        std::string reasoning;  // a chat reply's other channels ("analysis")
    };
    virtual ~ReplyDecoder() = default;
    virtual Piece push(int32_t id) = 0;
    virtual Piece finish() = 0;
};

class TextCodec {
public:
    virtual ~TextCodec() = default;
    // False: the model has no vocabulary; prompts must be token ids and replies are ids.
    virtual bool has_vocabulary() const = 0;
    // User text (special-token literals stay text).
    virtual std::vector<int32_t> encode(std::string_view text) const = 0;
    // Ids that end a plain completion (end of text) unless the request ignores them.
    virtual std::vector<int32_t> end_of_text_ids() const = 0;
    virtual std::unique_ptr<ReplyDecoder> completion_decoder() const = 0;
    // The chat format's prompt for a conversation, ending where the assistant's reply starts.
    virtual std::vector<int32_t> chat_prompt(std::span<const ChatTurn> turns) const = 0;
    virtual std::vector<int32_t> chat_stop_ids() const = 0;
    virtual std::unique_ptr<ReplyDecoder> chat_decoder() const = 0;
};

// The codec without a vocabulary: decoders give empty text, nothing else may be called.
std::unique_ptr<TextCodec> make_id_only_codec();

// The codec for the model file: its tokenizer and the harmony chat format when the file
// has a vocabulary, else the id-only codec.
std::unique_ptr<TextCodec> open_text_codec(const std::string& gguf_path);

}  // namespace jal::serve
