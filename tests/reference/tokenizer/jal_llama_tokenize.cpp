// jal-llama-tokenize MODEL.gguf < strings.json > ids.json: llama.cpp's tokenizer (the
// reference libllama) on each string of a JSON array, as user text: no BOS, special-token
// literals not parsed (llama_tokenize's add_special = parse_special = false).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llama.h"

namespace {

void quiet_log(ggml_log_level level, const char* text, void*)
{
    if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

std::vector<llama_token> tokenize(const llama_vocab* vocab, const std::string& s)
{
    std::vector<llama_token> ids(s.size() + 8);
    int n = llama_tokenize(vocab, s.data(), static_cast<int32_t>(s.size()), ids.data(),
                           static_cast<int32_t>(ids.size()), false, false);
    if (n < 0) {
        ids.resize(-n);
        n = llama_tokenize(vocab, s.data(), static_cast<int32_t>(s.size()), ids.data(),
                           static_cast<int32_t>(ids.size()), false, false);
    }
    ids.resize(n < 0 ? 0 : n);
    return ids;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: jal-llama-tokenize MODEL.gguf < strings.json\n");
        return 2;
    }
    llama_log_set(quiet_log, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;  // the tokenizer only: no weights, no backend
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        std::fprintf(stderr, "jal-llama-tokenize: %s: llama.cpp cannot load it\n", argv[1]);
        return 1;
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const nlohmann::json in = nlohmann::json::parse(std::cin);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : in) out.push_back(tokenize(vocab, s.get<std::string>()));
    std::cout << out.dump() << '\n';
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
