#include "serve_process.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "tools/common/emu_process.hpp"

namespace jal::test {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string slurp(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

ServeProcess::ServeProcess(const std::string& program, const std::vector<std::string>& args)
{
    char pattern[] = "/tmp/jal-serve-test-XXXXXX";
    int fd = ::mkstemp(pattern);
    if (fd < 0) throw std::runtime_error(std::string("mkstemp: ") + std::strerror(errno));
    output_path_ = pattern;
    std::vector<std::string> all = {program};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--port", "0"});
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test
        if (::getppid() != parent) ::_exit(127);
        ::dup2(fd, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ::close(fd);
    // Wait for the startup line, polling with a growing interval.
    const std::regex line("listening on http://[^:]+:([0-9]+)");
    const auto deadline = Clock::now() + 60s;
    auto interval = 1ms;
    for (;;) {
        std::smatch m;
        const std::string out = slurp(output_path_);
        if (std::regex_search(out, m, line)) {
            port_ = static_cast<unsigned>(std::stoul(m[1]));
            return;
        }
        int status;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("jal-serve exited during start-up (" +
                                     jal::tools::describe_wait_status(status) + "):\n" + out);
        }
        if (Clock::now() > deadline)
            throw std::runtime_error("jal-serve did not start listening within 60 s:\n" + out);
        std::this_thread::sleep_for(interval);
        interval = std::min(interval * 2, 50ms);
    }
}

ServeProcess::~ServeProcess()
{
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    std::remove(output_path_.c_str());
}

std::string ServeProcess::output() const
{
    return slurp(output_path_);
}

std::string ServeProcess::stop(int signal, int timeout_s)
{
    if (pid_ <= 0) return "not running";
    if (signal) ::kill(pid_, signal);
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    auto interval = 1ms;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) != pid_) {
        if (Clock::now() > deadline) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
            pid_ = -1;
            return "did not exit within " + std::to_string(timeout_s) + " s (killed)";
        }
        std::this_thread::sleep_for(interval);
        interval = std::min(interval * 2, 50ms);
    }
    pid_ = -1;
    return jal::tools::describe_wait_status(status);
}

RawConnection::RawConnection(unsigned port)
{
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
}

RawConnection::~RawConnection()
{
    close();
}

void RawConnection::close()
{
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void RawConnection::post(const std::string& path, const std::string& body)
{
    const std::string req = "POST " + path +
                            " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                            "Content-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
        throw std::runtime_error(std::string("send: ") + std::strerror(errno));
}

bool RawConnection::read_some(int timeout_ms)
{
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    received_.append(buf, static_cast<size_t>(n));
    return true;
}

bool RawConnection::read_until(const std::string& text)
{
    const auto deadline = Clock::now() + 60s;
    while (received_.find(text) == std::string::npos) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left <= 0ms || !read_some(static_cast<int>(left.count()))) return false;
    }
    return true;
}

}  // namespace jal::test
