// TextStream: token ids to text without splitting a UTF-8 character.
#include <jal/model/tokenizer.hpp>

#include "utf8.hpp"

namespace jal::model {

std::string TextStream::push(int32_t id)
{
    pending_ += tokenizer_.token_bytes(id);
    const size_t n = tokenizer::complete_prefix(pending_);
    std::string out = tokenizer::repair_utf8(std::string_view(pending_).substr(0, n));
    pending_.erase(0, n);
    return out;
}

std::string TextStream::finish()
{
    std::string out = tokenizer::repair_utf8(pending_);
    pending_.clear();
    return out;
}

}  // namespace jal::model
