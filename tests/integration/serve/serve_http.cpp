#include "serve_http.hpp"

#include <chrono>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include <fixture/run_command.hpp>

namespace jal::test {

// curl -s, the status and headers captured too.
HttpReply curl(const std::string& url, const std::vector<std::string>& extra)
{
    std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "-D", "/dev/stderr", "-N", "-w",
                                     "\n%{http_code}"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(url);
    const CommandResult r = run_command(argv, {}, std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    HttpReply reply;
    const size_t nl = r.out.rfind('\n');
    reply.body = r.out.substr(0, nl);
    reply.status = static_cast<unsigned>(std::atoi(r.out.c_str() + nl + 1));
    reply.headers = r.err;
    return reply;
}

HttpReply post(const std::string& url, const std::string& body)
{
    return curl(url, {"-H", "Content-Type: application/json", "--data-binary", body});
}

// The value of an unlabelled sample in Prometheus text, or -1.
double metric(const std::string& text, const std::string& name)
{
    std::smatch m;
    if (!std::regex_search(text, m, std::regex("(^|\n)" + name + " ([-0-9.e+]+)\n"))) return -1;
    return std::stod(m[2]);
}

// Polls `done` with a growing interval, up to a minute.
bool wait_for(const std::function<bool()>& done)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto interval = std::chrono::milliseconds(1);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(interval);
        interval = std::min(interval * 2, std::chrono::milliseconds(100));
    }
    return true;
}

Events parse_events(const std::string& body)
{
    Events e;
    std::istringstream in(body);
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        if (line.rfind("data: ", 0) != 0 || e.done) e.well_formed = false;
        if (line == "data: [DONE]")
            e.done = true;
        else if (e.well_formed)
            e.chunks.push_back(nlohmann::json::parse(line.substr(6)));
    }
    return e;
}

}  // namespace jal::test
