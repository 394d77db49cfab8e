// CLI11 checks shared by the tools.
#pragma once

#include <cmath>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace jal::tools {

// Refuses NaN and infinity. CLI11's Range, NonNegativeNumber and PositiveNumber let NaN
// through (every comparison with NaN is false), so put this check before them.
inline const CLI::Validator kFinite(
    [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str()) return {};  // not a number at all: CLI11 reports that
        return std::isfinite(v) ? std::string{} : "not a finite number: " + text;
    },
    "FINITE");

}  // namespace jal::tools
