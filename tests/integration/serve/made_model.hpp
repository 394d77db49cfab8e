// A model file for the jal-serve tests: what jal-mkmodel writes, given its options, in a
// directory of the test's own under the temp directory (`name`-<pid>), removed with it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>

namespace jal::test {

struct MadeModel {
    // Runs `jal-mkmodel options... -q <dir>/<file>`; the test checks `mkmodel` (its exit code
    // and stderr) before it uses `path`.
    MadeModel(const std::string& name, const std::string& file, std::vector<std::string> options)
        : dir(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid())))
    {
        std::filesystem::create_directories(dir);
        path = (dir / file).string();
        options.insert(options.begin(), bin_path("jal-mkmodel"));
        options.insert(options.end(), {"-q", path});
        mkmodel = run_command(options, {});
    }
    ~MadeModel() { std::filesystem::remove_all(dir); }
    MadeModel(const MadeModel&) = delete;
    MadeModel& operator=(const MadeModel&) = delete;

    std::filesystem::path dir;
    std::string path;
    CommandResult mkmodel;
};

}  // namespace jal::test
