#include <jal/error.hpp>

namespace jal {

Error::Error(jal_status status, const std::string& message)
    : std::runtime_error(message), status_(status)
{}

}  // namespace jal
