// Starts a private jal-emu for a benchmark (unless JAL_EMU_DIR names a running one) and
// stops it again.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace jal::bench {

class EmuLauncher {
public:
    // Uses $JAL_EMU_DIR if set; otherwise starts the jal-emu next to this program in a
    // temporary directory with `args` and waits for its socket. Throws std::runtime_error.
    explicit EmuLauncher(const std::vector<std::string>& args);
    ~EmuLauncher();
    EmuLauncher(const EmuLauncher&) = delete;
    EmuLauncher& operator=(const EmuLauncher&) = delete;

    const std::string& socket_dir() const { return socket_dir_; }
    bool started() const { return pid_ > 0; }
    std::string
    description() const;  // "jal-emu --fw native (started by jal-bench)" / "$JAL_EMU_DIR=..."

private:
    std::string socket_dir_;
    std::string temp_dir_;
    std::vector<std::string> args_;
    pid_t pid_ = -1;
};

}  // namespace jal::bench
