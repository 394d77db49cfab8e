// A jal-emu child process in a private temporary directory: started, waited for until its
// sockets accept connections, and stopped again. Shared by jal-run, jal-bench and the
// integration-test fixture (tests/integration/tools/fixture/emu_process.hpp).
//
//   jal::tools::EmuProcessOptions o;
//   o.program = jal::tools::sibling_program("jal-emu");
//   o.args = {"--fw", "native"};
//   jal::tools::EmuProcess emu(o);
//   jal::runtime::Device dev(0, emu.socket_dir());
//
// Layout of the directory (work_dir(), removed by the destructor):
//   sockets/     the --socket-dir given to jal-emu (socket_dir())
//   emu.log      its --log
//   output.txt   its stdout and stderr
// The child gets PR_SET_PDEATHSIG(SIGTERM): it is stopped when the thread that started it
// exits, even if that thread's process is killed.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace jal::tools {

struct EmuProcessOptions {
    std::string program;                  // path of jal-emu
    std::vector<std::string> args;        // after --socket-dir DIR --log FILE (e.g. --chips 2)
    unsigned chips = 1;                   // start-up waits for jal0.sock .. jal<chips-1>.sock
    std::string temp_prefix = "jal-emu";  // the directory is $TMPDIR/<temp_prefix>-XXXXXX
    std::chrono::milliseconds start_timeout{30000};
};

class EmuProcess {
public:
    // Creates the directory, starts the program and waits until every chip's socket accepts
    // a connection. Throws std::runtime_error (with the emulator's output) if it exits or
    // does not get there within start_timeout; the child is stopped and the directory
    // removed before the exception leaves.
    explicit EmuProcess(const EmuProcessOptions& options);
    // stop(), then removes the directory.
    ~EmuProcess();
    EmuProcess(const EmuProcess&) = delete;
    EmuProcess& operator=(const EmuProcess&) = delete;

    const std::string& socket_dir() const { return socket_dir_; }
    const std::string& work_dir() const { return work_dir_; }
    pid_t pid() const { return pid_; }
    // The emulator's stdout, stderr and log so far.
    std::string output() const;

    // True while the process has not exited (reaps it when it has).
    bool running();
    // SIGTERM, then waits up to `grace` (then SIGKILL). Returns "" for a clean exit with
    // status 0, else how it ended ("killed by signal 11 (...)", "exit status 1", ...,
    // "... (before it was asked to stop)"). Later calls return the same.
    std::string stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

private:
    void spawn(const EmuProcessOptions& options);
    void wait_until_serving(const EmuProcessOptions& options);
    // Waits up to `timeout` for the child to exit; true if it has.
    bool wait_exit(std::chrono::milliseconds timeout);
    void reaped(int wait_status);

    std::string work_dir_;
    std::string socket_dir_;
    pid_t pid_ = -1;
    int pidfd_ = -1;  // readable once the child has exited; -1 where unsupported
    std::optional<std::string> exit_description_;
    bool stop_requested_ = false;
};

// The emulator a tool talks to: `emu_dir` if not empty, else $JAL_EMU_DIR if set, else (if
// `use_running_default`) none when chip `device` is on this machine's PCI bus (/dev/jalN:
// libjal then drives it through jal.ko) or the default socket directory when a chip is
// served there; otherwise a private jal-emu (the one next to the running program) started
// with `args` and stopped again by the destructor. Throws std::runtime_error.
class EmuLauncher {
public:
    EmuLauncher(const std::string& tool, const std::string& emu_dir, bool use_running_default,
                const std::vector<std::string>& args, unsigned device = 0);

    const std::string& socket_dir() const { return socket_dir_; }
    bool started() const { return process_ != nullptr; }
    // "jal-emu --fw native (started by <tool>)" / "JAL_EMU_DIR=<dir>" / "jal.ko (/dev/jal0)"
    std::string description() const;

private:
    std::string tool_;
    std::vector<std::string> args_;
    std::string socket_dir_;
    std::string device_node_;  // the chip on the PCI bus, when that is what is driven
    std::unique_ptr<EmuProcess> process_;
};

// True once a SOCK_SEQPACKET connection to the Unix socket at `path` succeeds.
bool socket_accepts(const std::string& path);

// The program `name` in the directory of the running executable (/proc/self/exe).
std::string sibling_program(const std::string& name);

// "exit status 1", "killed by signal 9 (Killed)", or "" for exit status 0.
std::string describe_wait_status(int wait_status);

// A TCP port on loopback that nothing listens on right now: the address of a jal-emu in a
// domain of processes on this host (the fabric benchmark's and the tests' domains).
int free_loopback_port();

}  // namespace jal::tools
