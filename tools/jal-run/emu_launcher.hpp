// Finds a running jal-emu for jal-run, or starts a private one (and stops it again).
// (A copy of jal-bench's, which finds only $JAL_EMU_DIR.)
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace jal::run {

class EmuLauncher {
public:
    // Uses emu_dir if not empty, else $JAL_EMU_DIR if set, else the default socket directory
    // if a chip is served there; otherwise starts the jal-emu next to this program in a
    // temporary directory with `args` and waits for its socket. Throws std::runtime_error.
    EmuLauncher(const std::string& emu_dir, const std::vector<std::string>& args);
    ~EmuLauncher();
    EmuLauncher(const EmuLauncher&) = delete;
    EmuLauncher& operator=(const EmuLauncher&) = delete;

    const std::string& socket_dir() const { return socket_dir_; }
    bool started() const { return pid_ > 0; }
    std::string
    description() const;  // "jal-emu --fw native (started by jal-run)" / "$JAL_EMU_DIR=..."

private:
    std::string socket_dir_;
    std::string temp_dir_;
    std::vector<std::string> args_;
    pid_t pid_ = -1;
};

}  // namespace jal::run
