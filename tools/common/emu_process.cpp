#include "emu_process.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <jal/emu/socket_dir.hpp>

namespace jal::tools {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::string read_file(const fs::path& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
    (void)pid;
    return -1;
#endif
}

// In the child between fork and exec (async-signal-safe calls only): dies with the parent
// thread, writes its output to `output`, runs argv.
[[noreturn]] void exec_child(pid_t parent, const char* output, char* const* argv)
{
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    int fd = ::open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
    }
    ::execv(argv[0], argv);
    std::fprintf(stderr, "exec %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
}

}  // namespace

bool socket_accepts(const std::string& path)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return false;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    return ok;
}

std::string sibling_program(const std::string& name)
{
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return (ec ? fs::path(".") : exe.parent_path()).append(name).string();
}

std::string describe_wait_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status) == 0 ? "" : "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
               ::strsignal(WTERMSIG(status)) + ")";
    return "ended with wait status " + std::to_string(status);
}

EmuProcess::EmuProcess(const EmuProcessOptions& options)
{
    std::string pattern = (fs::temp_directory_path() / (options.temp_prefix + "-XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
        throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    work_dir_ = pattern;
    socket_dir_ = work_dir_ + "/sockets";
    try {
        spawn(options);
        wait_until_serving(options);
    } catch (...) {
        stop();
        if (pidfd_ >= 0) ::close(pidfd_);
        std::error_code ec;
        fs::remove_all(work_dir_, ec);
        throw;
    }
}

EmuProcess::~EmuProcess()
{
    stop();
    if (pidfd_ >= 0) ::close(pidfd_);
    std::error_code ec;
    fs::remove_all(work_dir_, ec);
}

void EmuProcess::spawn(const EmuProcessOptions& options)
{
    std::vector<std::string> args = {options.program, "--socket-dir", socket_dir_, "--log",
                                     work_dir_ + "/emu.log"};
    args.insert(args.end(), options.args.begin(), options.args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string output = work_dir_ + "/output.txt";

    pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) exec_child(parent, output.c_str(), argv.data());
    pidfd_ = open_pidfd(pid_);
}

void EmuProcess::wait_until_serving(const EmuProcessOptions& options)
{
    // The socket file appears at bind(), before listen(): only a connection that succeeds
    // says the emulator serves the chip. Between attempts, wait (with a growing interval)
    // for the child to exit.
    const auto deadline = Clock::now() + options.start_timeout;
    auto interval = 1ms;
    for (unsigned chip = 0; chip < options.chips;) {
        if (socket_accepts(jal::emu_socket_path(socket_dir_, chip))) {
            chip++;
            continue;
        }
        if (wait_exit(interval))
            throw std::runtime_error(
                options.program + " exited during start-up (" +
                (exit_description_->empty() ? "exit status 0" : *exit_description_) + "):\n" +
                output());
        if (Clock::now() > deadline)
            throw std::runtime_error(options.program + " did not accept connections on " +
                                     jal::emu_socket_path(socket_dir_, chip) + " within " +
                                     std::to_string(options.start_timeout.count()) + " ms:\n" +
                                     output());
        interval = std::min(interval * 2, 50ms);
    }
}

std::string EmuProcess::output() const
{
    fs::path base = work_dir_;
    return read_file(base / "output.txt") + read_file(base / "emu.log");
}

void EmuProcess::reaped(int wait_status)
{
    exit_description_ = describe_wait_status(wait_status);
}

bool EmuProcess::running()
{
    if (pid_ <= 0 || exit_description_) return false;
    int status;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) return true;
    if (r == pid_)
        reaped(status);
    else
        exit_description_ = "lost track of the process";
    return false;
}

bool EmuProcess::wait_exit(std::chrono::milliseconds timeout)
{
    const auto deadline = Clock::now() + timeout;
    while (running()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left <= 0ms) return false;
        if (pidfd_ >= 0) {
            pollfd p{pidfd_, POLLIN, 0};
            ::poll(&p, 1, static_cast<int>(left.count()));  // readable once it has exited
        } else {
            std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(left, 5ms));
        }
    }
    return true;
}

std::string EmuProcess::stop(std::chrono::milliseconds grace)
{
    if (pid_ <= 0) return "not started";
    if (stop_requested_) return *exit_description_;
    stop_requested_ = true;
    if (!running()) {
        *exit_description_ += exit_description_->empty() ? "exit status 0" : "";
        *exit_description_ += " (before it was asked to stop)";
        return *exit_description_;
    }
    ::kill(pid_, SIGTERM);
    if (!wait_exit(grace)) {
        ::kill(pid_, SIGKILL);
        int status;
        ::waitpid(pid_, &status, 0);
        exit_description_ =
            "did not exit within " + std::to_string(grace.count()) + " ms of SIGTERM (killed)";
    }
    return *exit_description_;
}

EmuLauncher::EmuLauncher(const std::string& tool, const std::string& emu_dir,
                         bool use_running_default, const std::vector<std::string>& args,
                         unsigned device)
    : tool_(tool), args_(args)
{
    if (!emu_dir.empty()) {
        socket_dir_ = emu_dir;
        return;
    }
    if (const char* dir = std::getenv("JAL_EMU_DIR"); dir && *dir) {
        socket_dir_ = dir;
        return;
    }
    // A chip on this machine's PCI bus (jal.ko): libjal opens it before any socket
    // (docs/userlib.md), so there is no emulator to start.
    const std::string node = "/dev/jal" + std::to_string(device);
    if (use_running_default && fs::is_character_file(node)) {
        device_node_ = node;
        socket_dir_ = jal::default_emu_dir();
        return;
    }
    // A chip already served in the default place (jal-emu started by hand, scripts/demo.sh).
    if (use_running_default && fs::exists(jal::emu_socket_path(jal::default_emu_dir(), 0))) {
        socket_dir_ = jal::default_emu_dir();
        return;
    }
    EmuProcessOptions options;
    options.program = sibling_program("jal-emu");
    options.args = args;
    options.temp_prefix = tool;
    process_ = std::make_unique<EmuProcess>(options);
    socket_dir_ = process_->socket_dir();
}

std::string EmuLauncher::description() const
{
    if (!device_node_.empty()) return "jal.ko (" + device_node_ + ")";
    if (!process_) return "JAL_EMU_DIR=" + socket_dir_;
    std::string s = "jal-emu";
    for (auto& a : args_) s += " " + a;
    return s + " (started by " + tool_ + ")";
}

int free_loopback_port()
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("free_loopback_port: socket failed");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    close(fd);
    if (!ok) throw std::runtime_error("free_loopback_port: no port on 127.0.0.1");
    return ntohs(a.sin_port);
}

}  // namespace jal::tools
