#include "emu/cp/command_processor.hpp"

#include "emu/chip/host_interface.hpp"
#include "emu/chip/mmu.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/queue.h"
#include "jal/hw/status.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <bit>
#include <cerrno>

namespace jal::emu {

namespace {
constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_CP;
}
std::uint32_t lo(std::uint64_t v)
{
    return static_cast<std::uint32_t>(v);
}
std::uint32_t hi(std::uint64_t v)
{
    return static_cast<std::uint32_t>(v >> 32);
}
void set_lo(std::uint64_t& r, std::uint32_t v)
{
    r = (r & ~0xffffffffull) | v;
}
void set_hi(std::uint64_t& r, std::uint32_t v)
{
    r = (r & 0xffffffffull) | (std::uint64_t{v} << 32);
}

// Reads the kick eventfd until told to stop; every kick wakes the function's engines.
void waiter_main(int kickfd, int stopfd, FunctionWake* wake)
{
    pollfd fds[2] = {{kickfd, POLLIN, 0}, {stopfd, POLLIN, 0}};
    for (;;) {
        const int n = poll(fds, 2, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || fds[1].revents) return;
        if (fds[0].revents & POLLIN) {
            std::uint64_t v;
            [[maybe_unused]] ssize_t r = ::read(kickfd, &v, sizeof v);
            wake->wake();
        }
    }
}
}  // namespace

CommandProcessor::CommandProcessor(HostInterface& host, HbmMemory& hbm, Mmu& mmu, Slices* slices,
                                   PowerModel* power, const ChipTrace* trace)
    : host_(host), dispatch_(hbm, mmu, slices, power, trace)
{
    const QueueEngine::Env env{host, hbm, mmu, signals_, &dispatch_, trace, &windows_};
    for (std::uint32_t q = 0; q < JAL_MAX_USER_QUEUES; ++q)
        engines_[q] = std::make_unique<QueueEngine>(q, env);
}

CommandProcessor::~CommandProcessor()
{
    std::lock_guard lock(ctl_);
    for (auto& e : engines_) e->stop();
    for (std::uint32_t fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn) stop_waiter(fn);
}

std::uint32_t CommandProcessor::fw_read(std::uint32_t off)
{
    if (off == reg(JAL_CP_QSEL)) return qsel_;
    if (off == reg(JAL_CP_WIN_STATUS)) return win_.status;
    if (qsel_ >= JAL_MAX_USER_QUEUES) return 0;
    const QueueConfig& c = staged_[qsel_];
    const QueueEngine& e = *engines_[qsel_];
    switch (off) {
    case reg(JAL_CP_Q_CTX):
        return c.ctx;
    case reg(JAL_CP_Q_FUNC):
        return c.fn;
    case reg(JAL_CP_Q_RING_LO):
        return lo(c.ring);
    case reg(JAL_CP_Q_RING_HI):
        return hi(c.ring);
    case reg(JAL_CP_Q_SIZE):
        return c.size;
    case reg(JAL_CP_Q_RPTR_LO):
        return lo(c.rptr);
    case reg(JAL_CP_Q_RPTR_HI):
        return hi(c.rptr);
    case reg(JAL_CP_Q_VECTOR):
        return c.vector;
    case reg(JAL_CP_Q_SPACE):
        return c.space;
    case reg(JAL_CP_Q_STATE):
        return e.state();
    case reg(JAL_CP_Q_LAST_ERROR):
        return e.last_error();
    case reg(JAL_CP_Q_ERRORS):
        return e.errors();
    case reg(JAL_CP_Q_READ_LO): {
        const std::uint64_t v = e.read_index();
        hi_latch_ = hi(v);
        return lo(v);
    }
    case reg(JAL_CP_Q_WRITE_LO): {
        const std::uint64_t v = e.last_doorbell();
        hi_latch_ = hi(v);
        return lo(v);
    }
    case reg(JAL_CP_Q_ERR_INDEX_LO): {
        const std::uint64_t v = e.error_index();
        hi_latch_ = hi(v);
        return lo(v);
    }
    case reg(JAL_CP_Q_READ_HI):
    case reg(JAL_CP_Q_WRITE_HI):
    case reg(JAL_CP_Q_ERR_INDEX_HI):
        return hi_latch_;
    default:
        return 0;
    }
}

void CommandProcessor::fw_write(std::uint32_t off, std::uint32_t v)
{
    switch (off) {
    case reg(JAL_CP_QSEL):
        qsel_ = v;
        return;
    case reg(JAL_CP_WIN_FUNC):
        win_.fn = v;
        return;
    case reg(JAL_CP_WIN_SPACE):
        win_.space = v;
        return;
    case reg(JAL_CP_WIN_BASE_LO):
        set_lo(win_.base, v);
        return;
    case reg(JAL_CP_WIN_BASE_HI):
        set_hi(win_.base, v);
        return;
    case reg(JAL_CP_WIN_SIZE_LO):
        set_lo(win_.size, v);
        return;
    case reg(JAL_CP_WIN_SIZE_HI):
        set_hi(win_.size, v);
        return;
    case reg(JAL_CP_WIN_CMD):
        window_command(v);
        return;
    default:
        break;
    }
    if (qsel_ >= JAL_MAX_USER_QUEUES) return;
    QueueConfig& c = staged_[qsel_];
    switch (off) {
    case reg(JAL_CP_Q_CTX):
        c.ctx = v;
        break;
    case reg(JAL_CP_Q_FUNC):
        c.fn = v;
        break;
    case reg(JAL_CP_Q_RING_LO):
        set_lo(c.ring, v);
        break;
    case reg(JAL_CP_Q_RING_HI):
        set_hi(c.ring, v);
        break;
    case reg(JAL_CP_Q_SIZE):
        c.size = v;
        break;
    case reg(JAL_CP_Q_RPTR_LO):
        set_lo(c.rptr, v);
        break;
    case reg(JAL_CP_Q_RPTR_HI):
        set_hi(c.rptr, v);
        break;
    case reg(JAL_CP_Q_VECTOR):
        c.vector = v;
        break;
    case reg(JAL_CP_Q_SPACE):
        c.space = v;
        break;
    case reg(JAL_CP_Q_CTRL):
        control(qsel_, v);
        break;
    default:
        break;
    }
}

void CommandProcessor::window_command(std::uint32_t cmd)
{
    switch (cmd) {
    case JAL_WINDOW_ADD:
        win_.status = win_.fn < JAL_MGMT_MAX_FUNCS
                          ? windows_.add(win_.fn, win_.space, win_.base, win_.size)
                          : std::uint32_t{JAL_STATUS_INVALID_FIELD};
        break;
    case JAL_WINDOW_REMOVE:
        win_.status = windows_.remove(win_.fn, win_.space, win_.base, win_.size);
        break;
    case JAL_WINDOW_CLEAR:
        windows_.clear_space(win_.fn, win_.space);
        win_.status = JAL_STATUS_OK;
        break;
    case JAL_CP_WIN_CLEAR_FUNC:
        windows_.clear_function(win_.fn);
        win_.status = JAL_STATUS_OK;
        break;
    default:
        win_.status = JAL_STATUS_INVALID_FIELD;
        break;
    }
}

void CommandProcessor::control(std::uint32_t qid, std::uint32_t cmd)
{
    std::lock_guard lock(ctl_);
    QueueEngine& e = *engines_[qid];
    switch (cmd) {
    case JAL_CP_CTRL_ENABLE:
        enable(qid, true);
        break;
    case JAL_CP_CTRL_DISABLE:
        e.stop();
        break;
    case JAL_CP_CTRL_RESET:
        if (e.state() == JAL_QUEUE_DISABLED) break;  // nothing to reset
        e.stop();
        e.drop_unexecuted();
        enable(qid, false);
        break;
    default:
        break;
    }
}

// Starts queue qid from its registers (fresh) or from the configuration it ran with.
void CommandProcessor::enable(std::uint32_t qid, bool fresh)
{
    QueueEngine& e = *engines_[qid];
    const QueueConfig c = fresh ? staged_[qid] : e.config();
    e.stop();
    const bool ok = Mmu::valid_ctx(c.ctx) && c.fn < JAL_MGMT_MAX_FUNCS &&
                    std::has_single_bit(c.size) && c.size >= JAL_QUEUE_SIZE_MIN &&
                    c.size <= JAL_QUEUE_SIZE_MAX && c.ring % JAL_PACKET_SIZE == 0 &&
                    c.rptr % 8 == 0 && c.vector < JAL_MSIX_VECTORS;
    if (!ok) {
        log(LogLevel::warn,
            "queue {}: enable with an invalid configuration (ctx {}, fn {}, size {}, ring {:#x})",
            qid, c.ctx, c.fn, c.size, c.ring);
        e.fail_config(c, JAL_STATUS_INVALID_FIELD);
        return;
    }
    auto db = host_.doorbells(static_cast<int>(c.fn));
    if (!db) {
        e.fail_config(c, JAL_STATUS_NO_DEVICE);
        return;
    }
    ensure_waiter(c.fn, db);
    e.start(c, std::move(db), wake_[c.fn], fresh);
}

void CommandProcessor::ensure_waiter(std::uint32_t fn, const std::shared_ptr<Doorbells>& db)
{
    Waiter& w = waiters_[fn];
    if (w.db == db && w.thread.joinable()) return;
    stop_waiter(fn);
    w.stopfd = eventfd(0, EFD_CLOEXEC);
    if (w.stopfd < 0) {
        log(LogLevel::error, "fn{}: cannot create the doorbell waiter's eventfd", fn);
        return;
    }
    w.db = db;
    w.thread = std::thread(waiter_main, db->kickfd(), w.stopfd, &wake_[fn]);
}

void CommandProcessor::stop_waiter(std::uint32_t fn)
{
    Waiter& w = waiters_[fn];
    if (w.thread.joinable()) {
        const std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(w.stopfd, &one, sizeof one);
        w.thread.join();
    }
    if (w.stopfd >= 0) close(w.stopfd);
    w.stopfd = -1;
    w.db.reset();
}

void CommandProcessor::function_detached(int fn)
{
    if (fn < 0 || fn >= JAL_MGMT_MAX_FUNCS) return;
    std::lock_guard lock(ctl_);
    for (auto& e : engines_)
        if (e->state() != JAL_QUEUE_DISABLED && e->config().fn == static_cast<std::uint32_t>(fn))
            e->stop();
    stop_waiter(static_cast<std::uint32_t>(fn));
}

void CommandProcessor::reset()
{
    std::lock_guard lock(ctl_);
    for (auto& e : engines_) e->stop();
    staged_.fill({});
    qsel_ = hi_latch_ = 0;
    windows_.clear();
    win_ = {};
}

}  // namespace jal::emu
