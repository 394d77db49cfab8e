#include "o200k_vocab.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include <jal/error.hpp>
#include <jal/model/gguf.hpp>

#include "byte_unicode.hpp"

namespace jal::model::tokenizer {

namespace {

[[noreturn]] void bad_ranks(size_t line, std::string_view why)
{
    throw Error(JAL_STATUS_INVALID_FIELD, fmt::format("tiktoken ranks, line {}: {}", line, why));
}

bool base64_decode(std::string_view in, std::string& out)
{
    static const auto table = [] {
        std::array<int8_t, 256> t{};
        t.fill(-1);
        const std::string_view abc =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (size_t i = 0; i < abc.size(); ++i) t[static_cast<unsigned char>(abc[i])] = i;
        return t;
    }();
    out.clear();
    uint32_t acc = 0;
    int bits = 0;
    for (char c : in) {
        if (c == '=') break;
        const int8_t v = table[static_cast<unsigned char>(c)];
        if (v < 0) return false;
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xff));
        }
    }
    return !out.empty();
}

}  // namespace

std::vector<std::string> parse_tiktoken_ranks(std::string_view file)
{
    std::vector<std::string> tokens;
    size_t line_no = 0;
    while (!file.empty()) {
        const size_t nl = file.find('\n');
        std::string_view line = file.substr(0, nl);
        file.remove_prefix(nl == std::string_view::npos ? file.size() : nl + 1);
        ++line_no;
        if (line.empty()) continue;
        const size_t sp = line.find(' ');
        if (sp == std::string_view::npos) bad_ranks(line_no, "expected '<base64> <rank>'");
        size_t rank = 0;
        const std::string_view r = line.substr(sp + 1);
        if (std::from_chars(r.data(), r.data() + r.size(), rank).ec != std::errc{})
            bad_ranks(line_no, "the rank is not a number");
        if (rank != tokens.size())
            bad_ranks(line_no, fmt::format("rank {}, expected {}", rank, tokens.size()));
        tokens.emplace_back();
        if (!base64_decode(line.substr(0, sp), tokens.back()))
            bad_ranks(line_no, "the token is not base64");
    }
    if (tokens.size() != static_cast<size_t>(kO200kFirstSpecial))
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("tiktoken ranks: {} tokens, expected o200k_base's {}",
                                tokens.size(), kO200kFirstSpecial));
    return tokens;
}

std::string o200k_harmony_special(int32_t id)
{
    // openai/harmony's o200k_harmony (the same as gpt-oss's tokenizer_config.json).
    static const std::unordered_map<int32_t, std::string_view> named = {
        {199998, "<|startoftext|>"}, {199999, "<|endoftext|>"}, {200002, "<|return|>"},
        {200003, "<|constrain|>"},   {200005, "<|channel|>"},   {200006, "<|start|>"},
        {200007, "<|end|>"},         {200008, "<|message|>"},   {200012, "<|call|>"},
        {200018, "<|endofprompt|>"},
    };
    const auto it = named.find(id);
    return it != named.end() ? std::string(it->second) : fmt::format("<|reserved_{}|>", id);
}

std::vector<std::string> rebuild_merges(const std::vector<std::string>& token_bytes)
{
    std::unordered_map<std::string_view, int32_t> rank;
    rank.reserve(token_bytes.size());
    for (size_t i = 0; i < token_bytes.size(); ++i)
        rank.emplace(token_bytes[i], static_cast<int32_t>(i));
    std::vector<std::string> merges;
    merges.reserve(token_bytes.size() * 9 / 4);
    std::vector<std::pair<int32_t, int32_t>> local;
    for (const std::string& t : token_bytes) {
        local.clear();
        const std::string_view v = t;
        for (size_t i = 1; i < v.size(); ++i) {
            const auto l = rank.find(v.substr(0, i));
            const auto r = rank.find(v.substr(i));
            if (l != rank.end() && r != rank.end()) local.emplace_back(l->second, r->second);
        }
        std::sort(local.begin(), local.end());
        for (const auto& [l, r] : local)
            merges.push_back(bytes_to_token_text(token_bytes[l]) + " " +
                             bytes_to_token_text(token_bytes[r]));
    }
    return merges;
}

void write_o200k_vocab(GgufWriter& w, std::string_view ranks_file)
{
    const std::vector<std::string> bytes = parse_tiktoken_ranks(ranks_file);
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    tokens.reserve(kO200kHarmonyVocab);
    types.reserve(kO200kHarmonyVocab);
    for (const std::string& b : bytes) {
        tokens.push_back(bytes_to_token_text(b));
        types.push_back(1);  // NORMAL
    }
    for (int32_t id = kO200kFirstSpecial; id < static_cast<int32_t>(kO200kHarmonyVocab); ++id) {
        tokens.push_back(o200k_harmony_special(id));
        types.push_back(3);  // CONTROL: every harmony special token is "special" in HF's file
    }
    // The keys in the order gguf-py's converter writes them (_set_vocab_gpt2, SpecialVocab).
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "gpt-4o");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_array_i32("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", rebuild_merges(bytes));
    // gpt-oss's special_tokens_map.json: bos <|startoftext|>, eos <|return|>, pad <|endoftext|>.
    w.set_u32("tokenizer.ggml.bos_token_id", 199998);
    w.set_u32("tokenizer.ggml.eos_token_id", 200002);
    w.set_u32("tokenizer.ggml.padding_token_id", 199999);
}

}  // namespace jal::model::tokenizer
