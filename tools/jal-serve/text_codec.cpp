#include "text_codec.hpp"

#include <stdexcept>

namespace jal::serve {

// text_codec_harmony.cpp: nullptr when the file has no vocabulary.
std::unique_ptr<TextCodec> open_harmony_codec(const std::string& gguf_path);

namespace {

class EmptyDecoder : public ReplyDecoder {
public:
    Piece push(int32_t) override { return {}; }
    Piece finish() override { return {}; }
};

// The request planner refuses text before it gets here (generation_plan.cpp), so these
// are programming errors.
class IdOnlyCodec : public TextCodec {
public:
    bool has_vocabulary() const override { return false; }
    std::vector<int32_t> encode(std::string_view) const override { refuse(); }
    std::vector<int32_t> end_of_text_ids() const override { return {}; }
    std::unique_ptr<ReplyDecoder> completion_decoder() const override
    {
        return std::make_unique<EmptyDecoder>();
    }
    std::vector<int32_t> chat_prompt(std::span<const ChatTurn>) const override { refuse(); }
    std::vector<int32_t> chat_stop_ids() const override { return {}; }
    std::unique_ptr<ReplyDecoder> chat_decoder() const override
    {
        return std::make_unique<EmptyDecoder>();
    }

private:
    [[noreturn]] static void refuse()
    {
        throw std::logic_error("jal-serve: text used with a model that has no vocabulary");
    }
};

}  // namespace

std::unique_ptr<TextCodec> make_id_only_codec()
{
    return std::make_unique<IdOnlyCodec>();
}

std::unique_ptr<TextCodec> open_text_codec(const std::string& gguf_path)
{
    if (auto codec = open_harmony_codec(gguf_path)) return codec;
    return make_id_only_codec();
}

}  // namespace jal::serve
