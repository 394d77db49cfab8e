#include "reply_text.hpp"

namespace jal::serve {

void ReplyText::add(ReplyDelta& d, const ReplyDecoder::Piece& piece)
{
    if (stopped_) return;
    d.reasoning += piece.reasoning;
    StopMatcher::Result r = stop_.push(piece.content);
    d.content += r.text;
    if (r.stopped) stopped_ = d.stopped = true;
}

ReplyDelta ReplyText::push(const std::vector<int32_t>& ids)
{
    ReplyDelta d;
    for (int32_t id : ids) {
        if (stopped_) break;
        d.token_ids.push_back(id);
        add(d, decoder_->push(id));
    }
    return d;
}

ReplyDelta ReplyText::finish()
{
    ReplyDelta d;
    add(d, decoder_->finish());
    if (!stopped_) d.content += stop_.flush();
    return d;
}

}  // namespace jal::serve
