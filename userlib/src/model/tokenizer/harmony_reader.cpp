// HarmonyReader: the model's reply split into messages by channel as its tokens arrive.
#include <jal/model/harmony.hpp>

namespace jal::model {

namespace {

// The channel named in a message header's text: what follows <|channel|> up to white
// space or the next '<' (harmony's header parser).
std::string channel_of(std::string_view header)
{
    constexpr std::string_view kMarker = "<|channel|>";
    const size_t at = header.find(kMarker);
    if (at == std::string_view::npos) return {};
    std::string_view rest = header.substr(at + kMarker.size());
    const size_t end = rest.find_first_of(" \t\r\n<");
    return std::string(rest.substr(0, end));
}

}  // namespace

HarmonyReader::HarmonyReader(const Tokenizer& tokenizer) : tokenizer_(tokenizer), text_(tokenizer)
{}

HarmonyReader::Piece HarmonyReader::push(int32_t id)
{
    Piece piece;
    if (tokenizer_.is_special(id)) {
        const std::string literal = tokenizer_.token_bytes(id);
        if (literal == "<|start|>") {
            in_header_ = true;
            header_.clear();
            channel_.clear();
        } else if (in_header_ && literal == "<|message|>") {
            in_header_ = false;
            channel_ = channel_of(header_);
        } else if (literal == "<|end|>" || literal == "<|return|>" || literal == "<|call|>") {
            piece.text = text_.finish();
            piece.message_end = true;
            piece.turn_end = literal != "<|end|>";
            in_header_ = true;
            header_.clear();
        } else if (in_header_) {
            header_ += literal;  // <|channel|>, <|constrain|>: parts of the header
        }
        // Any other control token inside a message's content carries no text.
    } else if (in_header_) {
        header_ += tokenizer_.token_bytes(id);
    } else {
        piece.text = text_.push(id);
    }
    piece.channel = channel_;
    return piece;
}

HarmonyReader::Piece HarmonyReader::finish()
{
    Piece piece;
    piece.channel = channel_;
    piece.text = text_.finish();
    return piece;
}

}  // namespace jal::model
