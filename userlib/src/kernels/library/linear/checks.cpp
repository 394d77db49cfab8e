// Configuration checks shared by the linear generators (checks.hpp).
#include "checks.hpp"

#include <algorithm>

#include <jal/error.hpp>

namespace jal::kernels::linear::detail {

void require(bool ok, const std::string& kernel, const char* why)
{
    if (!ok) throw Error(JAL_STATUS_INVALID_FIELD, kernel + ": " + why);
}

uint32_t block_rows(const std::string& kernel, uint64_t per_row, uint32_t rows)
{
    require(per_row <= (3u << 20), kernel, "a row does not fit in L1");
    return static_cast<uint32_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(rows, (2u << 20) / per_row)));
}

}  // namespace jal::kernels::linear::detail
