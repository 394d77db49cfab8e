// The domain file of the fabric tests' two-process domains: process a holds chip 0 and
// process b chip 1, each on a free loopback port of libfabric's tcp provider, cabled by
// `links` (the topology file's "links" array, docs/fabric.md). Shared by the fabric and
// collectives integration tests.
#pragma once

#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <tools/common/emu_process.hpp>

namespace jal::test {

// Scale-up port 0 of chip 0 to port 0 of chip 1, and port 1 to port 1.
inline constexpr const char* kTwoScaleUpLinks =
    R"([{"kind": "scale-up", "a": [0, 0], "b": [1, 0]},
        {"kind": "scale-up", "a": [0, 1], "b": [1, 1]}])";

// Writes the file (named after `tag`, the test process and a port, so parallel tests never
// share one) and returns its path.
inline std::string write_two_process_domain(const std::string& tag, const std::string& links)
{
    const std::string path = ::testing::TempDir() + tag + "-" + std::to_string(getpid()) + "-" +
                             std::to_string(jal::tools::free_loopback_port()) + ".json";
    std::ofstream(path) << R"({"provider": "tcp", "processes": [
        {"name": "a", "address": "127.0.0.1:)"
                        << jal::tools::free_loopback_port() << R"(", "chips": [0]},
        {"name": "b", "address": "127.0.0.1:)"
                        << jal::tools::free_loopback_port() << R"(", "chips": [1]}],
      "links": )" << links
                        << "}";
    return path;
}

}  // namespace jal::test
