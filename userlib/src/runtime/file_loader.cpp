#include "file_loader.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jal/error.hpp>

#include "../util/unique_fd.hpp"

namespace jal::runtime::detail {

namespace {

std::string errno_text(int err)
{
    return std::strerror(err);
}

// Opens with O_DIRECT when asked and the filesystem takes it (tmpfs refuses it at open,
// some filesystems only at the first read, so one aligned read is tried).
util::UniqueFd open_for_load(const std::string& path, bool try_direct, std::byte* probe,
                             size_t probe_len, bool& direct)
{
    direct = false;
    if (try_direct) {
        util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT));
        if (fd) {
            ssize_t n = ::pread(fd.get(), probe, probe_len, 0);
            if (n >= 0) {
                direct = true;
                return fd;
            }
            if (errno != EINVAL)
                throw Error(JAL_STATUS_IO_ERROR, "read " + path + ": " + errno_text(errno));
        } else if (errno != EINVAL) {
            throw Error(errno == ENOENT ? JAL_STATUS_NO_DEVICE : JAL_STATUS_IO_ERROR,
                        "open " + path + ": " + errno_text(errno));
        }
    }
    util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error(JAL_STATUS_IO_ERROR, "open " + path + ": " + errno_text(errno));
    return fd;
}

class Ring {
public:
    explicit Ring(unsigned entries)
    {
        int rc = io_uring_queue_init(entries, &ring_, 0);
        if (rc < 0) throw Error(JAL_STATUS_IO_ERROR, "io_uring_queue_init: " + errno_text(-rc));
    }
    ~Ring() { io_uring_queue_exit(&ring_); }
    io_uring* get() { return &ring_; }

private:
    io_uring ring_;
};

}  // namespace

LoadResult load_file(UserQueue& queue, const std::string& path, uint64_t dst_va, uint64_t capacity,
                     const LoadOptions& options)
{
    const size_t chunk =
        std::max<size_t>(options.chunk_bytes ? options.chunk_bytes : (4u << 20), 4096) &
        ~size_t{4095};
    const unsigned depth = std::clamp(options.depth ? options.depth : 4u, 1u, 64u);
    DeviceCore& dev = queue.context().device();
    auto device = queue.context().device_ptr();

    HostBuffer bounce(device, chunk * depth);
    LoadResult result;
    util::UniqueFd fd = open_for_load(path, options.try_direct, bounce.data(), 4096, result.direct);
    struct stat st;
    if (::fstat(fd.get(), &st) < 0)
        throw Error(JAL_STATUS_IO_ERROR, "stat " + path + ": " + errno_text(errno));
    const uint64_t total = static_cast<uint64_t>(st.st_size);
    if (total > capacity)
        throw Error(JAL_STATUS_INVALID_LENGTH,
                    path + " has " + std::to_string(total) + " bytes, more than the " +
                        std::to_string(capacity) + " bytes of device memory given");

    enum class State { idle, reading, copying };
    struct Slot {
        State state = State::idle;
        uint64_t offset = 0;  // file offset of the chunk
        size_t length = 0;    // bytes wanted
        size_t got = 0;       // bytes read so far
        std::unique_ptr<Signal> done;
        uint64_t copy_seq = 0;
    };
    std::vector<Slot> slots(depth);
    for (auto& s : slots) s.done = std::make_unique<Signal>(device, 0, true);

    Ring ring(depth);
    uint64_t next_offset = 0, landed = 0, copy_seq = 0;
    bool cancelled = false;
    unsigned reading = 0, copying = 0;

    auto submit_read = [&](size_t i) {
        Slot& s = slots[i];
        io_uring_sqe* sqe = io_uring_get_sqe(ring.get());
        // Direct I/O wants whole blocks: read the full chunk, the file end makes it short.
        size_t want = result.direct ? chunk - s.got : s.length - s.got;
        io_uring_prep_read(sqe, fd.get(), bounce.data() + i * chunk + s.got,
                           static_cast<unsigned>(want), s.offset + s.got);
        io_uring_sqe_set_data64(sqe, i);
    };
    auto start_copy = [&](size_t i) {
        Slot& s = slots[i];
        s.state = State::copying;
        s.copy_seq = copy_seq++;
        s.done->store(1);
        queue.copy(JAL_COPY_H2D, dst_va + s.offset, bounce.bus_addr() + i * chunk, s.length,
                   s.done.get());
        copying++;
    };
    auto finish_copy = [&](size_t i) {
        Slot& s = slots[i];
        auto seen = s.done->load();
        if (seen.status != JAL_STATUS_OK)
            throw Error(seen.status, "copying " + path + " bytes " + std::to_string(s.offset) +
                                         ".." + std::to_string(s.offset + s.length) +
                                         " to the device failed: " + jal_status_name(seen.status));
        s.state = State::idle;
        copying--;
        landed += s.length;
        if (options.progress && !options.progress(landed, total)) cancelled = true;
    };

    while (landed < total || reading || copying) {
        // Start reads into idle buffers.
        unsigned started = 0;
        for (size_t i = 0; i < depth && !cancelled; i++) {
            if (slots[i].state != State::idle || next_offset >= total) continue;
            Slot& s = slots[i];
            s.state = State::reading;
            s.offset = next_offset;
            s.length = static_cast<size_t>(std::min<uint64_t>(chunk, total - next_offset));
            s.got = 0;
            next_offset += s.length;
            submit_read(i);
            reading++;
            started++;
        }
        if (started) io_uring_submit(ring.get());

        // Retire copies that are done (in queue order, so check the oldest first).
        auto oldest_copy = [&] {
            size_t oldest = depth;
            for (size_t i = 0; i < depth; i++)
                if (slots[i].state == State::copying &&
                    (oldest == depth || slots[i].copy_seq < slots[oldest].copy_seq))
                    oldest = i;
            return oldest;
        };
        bool progressed = false;
        for (size_t oldest;
             (oldest = oldest_copy()) != depth && slots[oldest].done->load().value == 0;) {
            finish_copy(oldest);
            progressed = true;
        }
        if (progressed) continue;

        if (reading) {
            // Sleep in the ring; with copies in flight too, wake every 50 us to retire them
            // (a read finishing wakes us at once). No spinning: the device needs the CPU.
            io_uring_cqe* cqe;
            __kernel_timespec ts{0, 50'000};
            int rc = copying ? io_uring_wait_cqe_timeout(ring.get(), &cqe, &ts)
                             : io_uring_wait_cqe(ring.get(), &cqe);
            if (rc == -ETIME || rc == -EINTR) continue;
            if (rc < 0) throw Error(JAL_STATUS_IO_ERROR, "io_uring wait: " + errno_text(-rc));
            size_t i = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
            int res = cqe->res;
            io_uring_cqe_seen(ring.get(), cqe);
            Slot& s = slots[i];
            if (res < 0)
                throw Error(JAL_STATUS_IO_ERROR, "read " + path + " at " +
                                                     std::to_string(s.offset + s.got) + ": " +
                                                     errno_text(-res));
            if (res == 0 && s.got < s.length)
                throw Error(JAL_STATUS_IO_ERROR, path + " shrank while it was loaded");
            s.got += static_cast<size_t>(res);
            reading--;
            if (s.got < s.length) {  // short read: ask for the rest
                submit_read(i);
                io_uring_submit(ring.get());
                reading++;
                continue;
            }
            start_copy(i);
            continue;
        }
        if (copying) {
            WaitOptions w;
            w.mode = WaitMode::hybrid;
            w.timeout = std::chrono::seconds(60);
            if (!slots[oldest_copy()].done->wait(w).satisfied)
                throw Error(JAL_STATUS_TIMEOUT,
                            "a copy of " + path + " to the device did not complete in 60 s");
            continue;
        }
        if (cancelled) break;
    }
    (void)dev;
    if (cancelled)
        throw Error(JAL_STATUS_ABORTED,
                    "loading " + path + " cancelled after " + std::to_string(landed) + " bytes");
    result.bytes = landed;
    return result;
}

}  // namespace jal::runtime::detail
