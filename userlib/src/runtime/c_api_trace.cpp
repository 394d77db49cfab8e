// jal/trace.h: starting and stopping libjal's host-side trace from a program.
#include <jal/trace.h>

#include "c_api_support.hpp"

using namespace jal::runtime::capi;

extern "C" {

jal_status_t jal_trace_start(const char* path)
{
    REQUIRE(path && *path, "path is NULL or empty");
    return call([&] { jal::runtime::detail::HostTrace::instance().start(path); });
}

jal_status_t jal_trace_stop(void)
{
    jal::runtime::detail::HostTrace::instance().stop();
    return JAL_STATUS_OK;
}

}  // extern "C"
