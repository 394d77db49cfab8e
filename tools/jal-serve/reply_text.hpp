// A reply's generated ids turned into what the client sees: the ids, the text (content and,
// for chat, reasoning) with the request's stop strings applied to the content.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stop_matcher.hpp"
#include "text_codec.hpp"

namespace jal::serve {

struct ReplyDelta {
    std::vector<int32_t> token_ids;
    std::string content;
    std::string reasoning;
    bool stopped = false;  // a stop string matched: the reply is complete
    bool empty() const { return token_ids.empty() && content.empty() && reasoning.empty(); }
};

class ReplyText {
public:
    ReplyText(std::unique_ptr<ReplyDecoder> decoder, std::vector<std::string> stops)
        : decoder_(std::move(decoder)), stop_(std::move(stops))
    {}
    ReplyDelta push(const std::vector<int32_t>& ids);
    // The rest: a character's bytes still waiting, and text held back for the stop strings.
    ReplyDelta finish();

private:
    void add(ReplyDelta& d, const ReplyDecoder::Piece& piece);

    std::unique_ptr<ReplyDecoder> decoder_;
    StopMatcher stop_;
    bool stopped_ = false;
};

}  // namespace jal::serve
