#include "text_prompt.hpp"

#include <cstdio>

#include <jal/model/gguf.hpp>
#include <jal/model/harmony.hpp>

namespace jal::run {

std::unique_ptr<model::Tokenizer> open_tokenizer(const std::string& path)
{
    // The tokenizer copies what it needs; the file's bytes are released on return.
    const model::GgufFile gguf = model::GgufFile::open(path);
    if (!model::Tokenizer::has_vocabulary(gguf)) return nullptr;
    return model::Tokenizer::from_gguf(gguf);
}

std::vector<int32_t> text_prompt_ids(const model::Tokenizer& tokenizer, const std::string& text,
                                     bool chat, const std::string& system)
{
    if (!chat) return tokenizer.encode(text);
    std::vector<model::ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system, {}});
    messages.push_back({"user", text, {}});
    return model::harmony_prompt(tokenizer, messages);
}

void TextPrinter::emit(const std::string& piece)
{
    text_ += piece;
    if (!print_) return;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
}

void TextPrinter::push(int32_t id)
{
    emit(stream_.push(id));
}

void TextPrinter::finish()
{
    emit(stream_.finish());
    if (print_) {
        std::fputc('\n', stdout);
        std::fflush(stdout);
    }
}

}  // namespace jal::run
