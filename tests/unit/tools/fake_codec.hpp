// A text codec for tests: one id per byte (id = byte value), so text and ids map plainly;
// its chat replies switch channel on the ids 1 ("analysis") and 2 ("final").
#pragma once

#include "text_codec.hpp"

namespace jal::serve::test {

class ByteDecoder : public ReplyDecoder {
public:
    explicit ByteDecoder(bool chat) : chat_(chat) {}
    Piece push(int32_t id) override
    {
        if (chat_ && (id == 1 || id == 2)) {
            final_ = id == 2;
            return {};
        }
        const std::string c(1, static_cast<char>(id));
        return chat_ && !final_ ? Piece{{}, c} : Piece{c, {}};
    }
    Piece finish() override { return {}; }

private:
    bool chat_;
    bool final_ = false;
};

class ByteCodec : public TextCodec {
public:
    bool has_vocabulary() const override { return true; }
    std::vector<int32_t> encode(std::string_view text) const override
    {
        return {text.begin(), text.end()};
    }
    std::vector<int32_t> end_of_text_ids() const override { return {0}; }
    std::unique_ptr<ReplyDecoder> completion_decoder() const override
    {
        return std::make_unique<ByteDecoder>(false);
    }
    // Each turn: its role's first letter, then its content.
    std::vector<int32_t> chat_prompt(std::span<const ChatTurn> turns) const override
    {
        std::vector<int32_t> ids;
        for (const ChatTurn& t : turns) {
            ids.push_back(t.role[0]);
            ids.insert(ids.end(), t.content.begin(), t.content.end());
        }
        return ids;
    }
    std::vector<int32_t> chat_stop_ids() const override { return {3}; }
    std::unique_ptr<ReplyDecoder> chat_decoder() const override
    {
        return std::make_unique<ByteDecoder>(true);
    }
};

}  // namespace jal::serve::test
