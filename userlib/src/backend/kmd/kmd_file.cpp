#include "kmd_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>

#include <jal/error.hpp>

namespace jal::kmd {

jal_status status_from_errno(int err)
{
    switch (err) {
    case EPERM:
    case EACCES:
        return JAL_STATUS_PERMISSION;
    case EINVAL:
        return JAL_STATUS_INVALID_FIELD;
    case E2BIG:
        return JAL_STATUS_INVALID_LENGTH;
    case EFAULT:
        return JAL_STATUS_DMA_FAULT;
    case ENOMEM:
        return JAL_STATUS_NO_MEMORY;
    case ETIMEDOUT:
        return JAL_STATUS_TIMEOUT;
    case ENODEV:
    case ENOENT:
    case ENXIO:
        return JAL_STATUS_NO_DEVICE;
    case EBUSY:
        return JAL_STATUS_BUSY;
    case EPROTO:
        return JAL_STATUS_VERSION_MISMATCH;
    default:
        return JAL_STATUS_IO_ERROR;
    }
}

KmdFile::KmdFile(const std::string& path) : path_(path)
{
    fd_.reset(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd_) {
        int err = errno;
        throw Error(status_from_errno(err), "cannot open " + path + ": " + std::strerror(err));
    }
}

int KmdFile::raw_ioctl(unsigned long cmd, void* arg) const
{
    int ret;
    do {
        ret = ::ioctl(fd_.get(), cmd, arg);
    } while (ret < 0 && errno == EINTR);
    return ret < 0 ? -errno : 0;
}

void KmdFile::throw_errno(const char* what, int err) const
{
    throw Error(status_from_errno(err), path_ + ": " + what + ": " + std::strerror(err));
}

}  // namespace jal::kmd
