#include "emu_launcher.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <jal/emu_dir.hpp>

namespace jal::run {

namespace fs = std::filesystem;

namespace {

std::string self_dir()
{
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : exe.parent_path().string();
}

}  // namespace

EmuLauncher::EmuLauncher(const std::string& emu_dir, const std::vector<std::string>& args)
    : args_(args)
{
    if (!emu_dir.empty()) {
        socket_dir_ = emu_dir;
        return;
    }
    if (const char* dir = std::getenv("JAL_EMU_DIR"); dir && *dir) {
        socket_dir_ = dir;
        return;
    }
    // A chip already served in the default place (jal-emu started by hand, scripts/demo.sh).
    if (fs::exists(jal::emu_socket_path(jal::default_emu_dir(), 0))) {
        socket_dir_ = jal::default_emu_dir();
        return;
    }
    std::string pattern = (fs::temp_directory_path() / "jal-run-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
        throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    temp_dir_ = pattern;
    socket_dir_ = temp_dir_ + "/sockets";
    std::string emu = self_dir() + "/jal-emu";
    std::vector<std::string> argv = {emu, "--socket-dir", socket_dir_, "--log",
                                     temp_dir_ + "/emu.log"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {
        int fd = ::open((temp_dir_ + "/output.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
        }
        ::execv(cargv[0], cargv.data());
        std::fprintf(stderr, "exec %s: %s\n", cargv[0], std::strerror(errno));
        ::_exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(jal::emu_socket_path(socket_dir_, 0))) {
        int status;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("jal-emu (" + emu + ") exited during start-up; see " +
                                     temp_dir_ + "/output.txt");
        }
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("jal-emu did not create its socket within 30 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

EmuLauncher::~EmuLauncher()
{
    if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
        int status;
        for (int i = 0; i < 1000 && ::waitpid(pid_, &status, WNOHANG) == 0; i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (::waitpid(pid_, &status, WNOHANG) == 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
        }
    }
    if (!temp_dir_.empty()) {
        std::error_code ec;
        fs::remove_all(temp_dir_, ec);
    }
}

std::string EmuLauncher::description() const
{
    if (pid_ <= 0) return "JAL_EMU_DIR=" + socket_dir_;
    std::string s = "jal-emu";
    for (auto& a : args_) s += " " + a;
    return s + " (started by jal-run)";
}

}  // namespace jal::run
