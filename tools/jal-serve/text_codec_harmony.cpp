// The text codec over the library's tokenizer and harmony chat format
// (jal/model/tokenizer.hpp, jal/model/harmony.hpp).
#include <memory>

#include <jal/model/gguf.hpp>
#include <jal/model/harmony.hpp>
#include <jal/model/tokenizer.hpp>

#include "text_codec.hpp"

namespace jal::serve {

namespace {

using jal::model::Tokenizer;

class PlainDecoder : public ReplyDecoder {
public:
    explicit PlainDecoder(const Tokenizer& tokenizer) : stream_(tokenizer) {}
    Piece push(int32_t id) override { return {stream_.push(id), {}}; }
    Piece finish() override { return {stream_.finish(), {}}; }

private:
    jal::model::TextStream stream_;
};

// The reply's "final" channel is the content; every other channel ("analysis",
// "commentary") is reasoning.
class HarmonyDecoder : public ReplyDecoder {
public:
    explicit HarmonyDecoder(const Tokenizer& tokenizer) : reader_(tokenizer) {}
    Piece push(int32_t id) override { return split(reader_.push(id)); }
    Piece finish() override { return split(reader_.finish()); }

private:
    static Piece split(const jal::model::HarmonyReader::Piece& p)
    {
        if (p.channel == "final") return {p.text, {}};
        return {{}, p.text};
    }
    jal::model::HarmonyReader reader_;
};

class HarmonyCodec : public TextCodec {
public:
    explicit HarmonyCodec(std::unique_ptr<Tokenizer> tokenizer) : tokenizer_(std::move(tokenizer))
    {}
    bool has_vocabulary() const override { return true; }
    std::vector<int32_t> encode(std::string_view text) const override
    {
        return tokenizer_->encode(text);
    }
    std::vector<int32_t> end_of_text_ids() const override
    {
        std::vector<int32_t> ids;
        for (const char* literal : {"<|endoftext|>", "<|return|>"})
            if (auto id = tokenizer_->special(literal)) ids.push_back(*id);
        return ids;
    }
    std::unique_ptr<ReplyDecoder> completion_decoder() const override
    {
        return std::make_unique<PlainDecoder>(*tokenizer_);
    }
    std::vector<int32_t> chat_prompt(std::span<const ChatTurn> turns) const override
    {
        std::vector<jal::model::ChatMessage> messages;
        for (const ChatTurn& t : turns) messages.push_back({t.role, t.content, {}});
        return jal::model::harmony_prompt(*tokenizer_, messages);
    }
    std::vector<int32_t> chat_stop_ids() const override
    {
        return jal::model::harmony_stop_tokens(*tokenizer_);
    }
    std::unique_ptr<ReplyDecoder> chat_decoder() const override
    {
        return std::make_unique<HarmonyDecoder>(*tokenizer_);
    }

private:
    std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace

std::unique_ptr<TextCodec> open_harmony_codec(const std::string& gguf_path)
{
    // The tokenizer owns copies of what it needs; the file's bytes go when this returns.
    const jal::model::GgufFile gguf = jal::model::GgufFile::open(gguf_path);
    if (!Tokenizer::has_vocabulary(gguf)) return nullptr;
    return std::make_unique<HarmonyCodec>(Tokenizer::from_gguf(gguf));
}

}  // namespace jal::serve
