#include <jal/isa/version.hpp>

#include <jal/hw/isa.h>

#define JAL_STR2(x) #x
#define JAL_STR(x) JAL_STR2(x)

namespace jal::isa {
const char* version_string()
{
    return JAL_STR(JAL_ISA_VERSION_MAJOR) "." JAL_STR(JAL_ISA_VERSION_MINOR);
}
}  // namespace jal::isa
