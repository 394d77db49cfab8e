// Who may be trusted at either end of a chip's socket (docs/security.md, "Socket directory
// and peers"). Header-only: jal-emu and libjal's direct backend both call it.
//
// The socket directory must belong to the caller or to root and be writable by nobody
// else (the rules of XDG_RUNTIME_DIR): otherwise another user could have created it, put
// a fake emulator's socket in it and received the memory a client shares. The process at
// the other end of a connection must run as the caller's uid or as root, or as a uid the
// emulator was told to allow (jal-emu --allow-uid).
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace jal::emu {

// "" when `dir` is fit to hold chip sockets, else why not (for an error message).
inline std::string socket_dir_problem(const std::string& dir)
{
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0)
        return "socket directory " + dir + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) return "socket directory " + dir + " is not a directory";
    const uid_t me = ::geteuid();
    if (st.st_uid != me && st.st_uid != 0)
        return "socket directory " + dir + " belongs to uid " + std::to_string(st.st_uid) +
               ", not to uid " + std::to_string(me) + " or root";
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return "socket directory " + dir +
               " is writable by other users (it must not be: chmod go-w, or remove it and let "
               "jal-emu create it with mode 0700)";
    return {};
}

// The uid of the process at the other end of a connected Unix socket; false if unknown.
inline bool socket_peer_uid(int fd, uid_t& uid)
{
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred)
        return false;
    uid = cred.uid;
    return true;
}

// The default rule for a peer: the same uid as this process, or root.
inline bool trusted_peer_uid(uid_t uid)
{
    return uid == ::geteuid() || uid == 0;
}

}  // namespace jal::emu
