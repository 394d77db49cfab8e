// An open /dev/jalN: ioctls with the driver's size/flags/reserved convention, and errno
// turned into the jal_status the direct transport would have reported.
#pragma once

#include <cstdint>
#include <string>

#include <jal/hw/status.h>

#include "../../util/unique_fd.hpp"

namespace jal::kmd {

// The status a device-side failure of the same kind carries (EPERM: PERMISSION, ...).
jal_status status_from_errno(int err);

class KmdFile {
public:
    // Throws jal::Error (NO_DEVICE when the node is missing).
    explicit KmdFile(const std::string& path);

    // Runs `cmd` with `arg` (its size field filled in here). Returns 0 or -errno.
    template <typename T>
    int ioctl(unsigned long cmd, T& arg) const
    {
        arg.size = sizeof(T);
        return raw_ioctl(cmd, &arg);
    }
    // Same, throwing jal::Error "<what>: <strerror>" on failure.
    template <typename T>
    void ioctl_or_throw(unsigned long cmd, T& arg, const char* what) const
    {
        if (int ret = ioctl(cmd, arg); ret < 0) throw_errno(what, -ret);
    }

    int fd() const { return fd_.get(); }
    const std::string& path() const { return path_; }

    [[noreturn]] void throw_errno(const char* what, int err) const;

private:
    int raw_ioctl(unsigned long cmd, void* arg) const;

    util::UniqueFd fd_;
    std::string path_;
};

}  // namespace jal::kmd
