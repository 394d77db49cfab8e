// How a jal-run output is held to llama.cpp's (jal-llama-ref) on the same prompt ids, shared
// by the one-chip comparison (model_reference_test.cpp) and the model split over chips
// (split_reference_test.cpp): both print JSON with "tokens", "top_ids" and "top_logprobs"
// (the top 5 a step). A position is decided when llama.cpp's top-1/top-2 log-probability
// margin exceeds kMargin plus what its own builds disagree by there (`spread`, 0 with F32
// dense matrices).
#pragma once

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixture/run_command.hpp"

namespace jal::test::llama_compare {

using nlohmann::json;

constexpr double kMargin = 0.05;  // llama.cpp's top-1/top-2 gap that makes a position decided
constexpr double kLogprobTol = 0.05;

inline std::string ids_csv(const std::vector<int>& ids)
{
    std::string s;
    for (size_t i = 0; i < ids.size(); i++) s += (i ? "," : "") + std::to_string(ids[i]);
    return s;
}

inline json run_json(const std::vector<std::string>& argv)
{
    jal::test::CommandResult r = jal::test::run_command(argv, {}, std::chrono::minutes(10));
    if (r.exit_code != 0)
        throw std::runtime_error(argv[0] + " failed (" + std::to_string(r.exit_code) +
                                 "): " + r.err);
    return json::parse(r.out);
}

inline bool decided(const json& llama, const std::vector<double>& spread, size_t p)
{
    const auto& lp = llama["top_logprobs"][p];
    return lp[0].get<double>() - lp[1].get<double>() > kMargin + spread[p];
}

struct Figures {
    int decided = 0, near_ties = 0, top1_agree = 0;
    double worst_lp = 0;
    int worst_at = -1;
};

inline Figures compare(const json& llama, const json& jal, const std::vector<double>& spread)
{
    Figures f;
    const auto &lids = llama["top_ids"], &llps = llama["top_logprobs"];
    const auto &jids = jal["top_ids"], &jlps = jal["top_logprobs"];
    for (size_t p = 0; p < lids.size(); p++) {
        (decided(llama, spread, p) ? f.decided : f.near_ties)++;
        if (lids[p][0] == jids[p][0]) f.top1_agree++;
        for (size_t k = 0; k < lids[p].size(); k++) {
            const double d = std::fabs(llps[p][k].get<double>() - jlps[p][k].get<double>());
            if (d > f.worst_lp) f.worst_lp = d, f.worst_at = static_cast<int>(p);
        }
    }
    return f;
}

// Free running: our greedy ids should equal llama.cpp's before its first undecided position,
// and there (a near-tie) ours should be one of its top two.
struct FreeRun {
    int same = 0;       // ids equal to llama.cpp's
    int first_tie = 0;  // llama.cpp's first undecided position
    bool ok = false;
};

inline FreeRun free_running(const json& llama, const std::vector<double>& spread,
                            const std::vector<int>& ours)
{
    const std::vector<int> greedy = llama["tokens"].get<std::vector<int>>();
    const int steps = static_cast<int>(greedy.size());
    FreeRun f;
    f.first_tie = steps;
    for (int p = 0; p < steps; p++)
        if (!decided(llama, spread, p)) {
            f.first_tie = p;
            break;
        }
    while (f.same < steps && f.same < static_cast<int>(ours.size()) &&
           ours[f.same] == greedy[f.same])
        f.same++;
    f.ok = f.same > f.first_tie || f.same == steps;
    if (f.same == f.first_tie && f.same < steps) {
        const auto& top = llama["top_ids"][f.same];
        f.ok = ours[f.same] == top[0] || ours[f.same] == top[1];
    }
    return f;
}

}  // namespace jal::test::llama_compare
