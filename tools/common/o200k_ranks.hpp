// The o200k_base ranks file (tiktoken's format) the tools carry inside them; see
// tools/common/CMakeLists.txt and docs/decisions.md.
#pragma once

#include <string_view>

namespace jal::tools {

// The file's text; empty when the build had no JAL_TIKTOKEN_REF.
std::string_view o200k_ranks();

}  // namespace jal::tools
