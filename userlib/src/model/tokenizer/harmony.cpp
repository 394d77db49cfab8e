// harmony_prompt and harmony_stop_tokens: a conversation in the harmony format, rendered
// as openai/harmony's renderer does for text messages (docs/serving.md, "Chat format").
#include <jal/model/harmony.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <jal/error.hpp>

namespace jal::model {

namespace {

int32_t special_id(const Tokenizer& t, std::string_view literal)
{
    const auto id = t.special(literal);
    if (!id)
        throw Error(
            JAL_STATUS_INVALID_FIELD,
            fmt::format("the vocabulary has no {} token (not a harmony vocabulary)", literal));
    return *id;
}

// The system message's text: harmony's SystemContent with the options, its channel
// configuration the one GPT-OSS uses (all three channels, required).
std::string system_text(const HarmonyOptions& o)
{
    std::vector<std::string> top;
    if (!o.model_identity.empty()) top.push_back(o.model_identity);
    if (!o.knowledge_cutoff.empty()) top.push_back("Knowledge cutoff: " + o.knowledge_cutoff);
    if (!o.current_date.empty()) top.push_back("Current date: " + o.current_date);
    std::vector<std::string> sections;
    if (!top.empty()) sections.push_back(fmt::format("{}", fmt::join(top, "\n")));
    if (!o.reasoning_effort.empty()) sections.push_back("Reasoning: " + o.reasoning_effort);
    sections.push_back(
        "# Valid channels: analysis, commentary, final. Channel must be included for every "
        "message.");
    return fmt::format("{}", fmt::join(sections, "\n\n"));
}

class Renderer {
public:
    explicit Renderer(const Tokenizer& t) : t_(t) {}
    // <|start|>{role}[<|channel|>{channel}]<|message|>{content}<|end|>; every text part
    // is encoded on its own (harmony renders each as ordinary text, never across a token).
    void message(std::string_view role, std::string_view channel, std::string_view content)
    {
        token("<|start|>");
        text(role);
        if (!channel.empty()) {
            token("<|channel|>");
            text(channel);
        }
        token("<|message|>");
        text(content);
        token("<|end|>");
    }
    void token(std::string_view literal) { out_.push_back(special_id(t_, literal)); }
    void text(std::string_view s)
    {
        const auto ids = t_.encode(s);
        out_.insert(out_.end(), ids.begin(), ids.end());
    }
    std::vector<int32_t> take() { return std::move(out_); }

private:
    const Tokenizer& t_;
    std::vector<int32_t> out_;
};

// harmony's auto_drop_analysis: when the last assistant message is a final answer, the
// analysis messages before the first final one (earlier turns' reasoning) are dropped.
std::vector<bool> dropped_analysis(std::span<const ChatMessage> messages)
{
    std::vector<bool> drop(messages.size(), false);
    bool last_assistant_final = false;
    for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
        if (it->role == "assistant") {
            last_assistant_final = it->channel == "final";
            break;
        }
    }
    size_t first_final = messages.size();
    for (size_t i = 0; i < messages.size(); ++i)
        if (messages[i].channel == "final") {
            first_final = i;
            break;
        }
    for (size_t i = 0; last_assistant_final && i < first_final; ++i)
        drop[i] = messages[i].channel == "analysis";
    return drop;
}

}  // namespace

std::vector<int32_t> harmony_prompt(const Tokenizer& tokenizer,
                                    std::span<const ChatMessage> messages,
                                    const HarmonyOptions& options)
{
    Renderer r(tokenizer);
    r.message("system", "", system_text(options));
    const std::vector<bool> drop = dropped_analysis(messages);
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (drop[i]) continue;
        if (m.role == "system" || m.role == "developer")
            r.message("developer", "", "# Instructions\n\n" + m.content);
        else if (m.role == "user")
            r.message("user", "", m.content);
        else if (m.role == "assistant")
            r.message("assistant", m.channel, m.content);
        else
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("message {}: role '{}' is not system, developer, user or "
                                    "assistant",
                                    i, m.role));
    }
    r.token("<|start|>");
    r.text("assistant");
    return r.take();
}

std::vector<int32_t> harmony_stop_tokens(const Tokenizer& tokenizer)
{
    return {special_id(tokenizer, "<|return|>"), special_id(tokenizer, "<|call|>")};
}

}  // namespace jal::model
