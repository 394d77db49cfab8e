#include "tools/common/o200k_ranks.hpp"

#if JAL_HAVE_O200K_RANKS
extern "C" const char jal_o200k_ranks_begin[];
extern "C" const char jal_o200k_ranks_end[];
#endif

namespace jal::tools {

std::string_view o200k_ranks()
{
#if JAL_HAVE_O200K_RANKS
    return {jal_o200k_ranks_begin,
            static_cast<size_t>(jal_o200k_ranks_end - jal_o200k_ranks_begin)};
#else
    return {};
#endif
}

}  // namespace jal::tools
