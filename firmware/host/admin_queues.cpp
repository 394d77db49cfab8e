#include "firmware/host/admin_queues.hpp"

#include <cstring>

#include "firmware/hal/hal.hpp"
#include "firmware/host/admin_progress.hpp"
#include "firmware/host/event_codes.hpp"
#include "jal/hw/pci.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"

namespace jal::fw::host {

namespace {
std::uint32_t fn_reg(std::uint32_t fn, std::uint32_t off)
{
    return JAL_HOSTIF_FN(fn, off);
}
std::uint64_t read64(std::uint32_t fn, std::uint32_t lo_off, std::uint32_t hi_off)
{
    const std::uint32_t lo = hal::read32(fn_reg(fn, lo_off));
    const std::uint32_t hi = hal::read32(fn_reg(fn, hi_off));
    return std::uint64_t{hi} << 32 | lo;
}
bool size_ok(std::uint32_t n)
{
    return n >= JAL_ADMIN_QSIZE_MIN && n <= JAL_ADMIN_QSIZE_MAX;
}
}  // namespace

void AdminQueues::set_present(std::uint32_t present_mask)
{
    present_mask &= (1u << JAL_MGMT_MAX_FUNCS) - 1;
    for (std::uint32_t fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn)
        if (!((present_mask >> fn) & 1)) queues_[fn] = Queue{};
    // A newly attached function is looked at even if its news bit was already consumed.
    pending_ = (pending_ | (present_mask & ~present_)) & present_mask;
    present_ = present_mask;
}

void AdminQueues::set_error(std::uint32_t fn, Queue& q, std::uint32_t status)
{
    q.state = State::kError;
    hal::write32(fn_reg(fn, JAL_FN_ADMIN_STATUS), JAL_ADMIN_STATUS_ERROR | status << 16);
    journal_.event(JAL_SRC_ADMIN, JAL_SEV_WARN, kEvAdminQueueError, "admin queue error",
                   {fn, status});
}

AdminQueues::Enabled AdminQueues::enable(std::uint32_t fn, Queue& q)
{
    q.sq_base = read64(fn, JAL_FN_SQ_BASE_LO, JAL_FN_SQ_BASE_HI);
    q.cq_base = read64(fn, JAL_FN_CQ_BASE_LO, JAL_FN_CQ_BASE_HI);
    const std::uint32_t qsize = hal::read32(fn_reg(fn, JAL_FN_QSIZE));
    // The host may have rewritten CTRL since the generation was read (a seqlock's check):
    // a queue enabled under the old generation would be restarted from slot 0 at the next
    // wake, after the host had already consumed completions, and the rings would never meet
    // again. Published READY only for registers read whole.
    if (hal::read32(fn_reg(fn, JAL_FN_GENERATION)) != q.generation) {
        q = Queue{};
        return Enabled::kRaced;
    }
    q.sq_size = qsize & 0xffff;
    q.cq_size = qsize >> 16;
    q.sq_head = q.cq_tail = 0;
    q.phase = 1;
    if (q.sq_base == 0 || q.sq_base % 64 || q.cq_base == 0 || q.cq_base % 16 ||
        !size_ok(q.sq_size) || !size_ok(q.cq_size)) {
        set_error(fn, q, JAL_STATUS_INVALID_FIELD);
        return Enabled::kRefused;
    }
    q.state = State::kReady;
    hal::write32(fn_reg(fn, JAL_FN_ADMIN_STATUS), JAL_ADMIN_STATUS_READY);
    journal_.event(JAL_SRC_ADMIN, JAL_SEV_DEBUG, kEvAdminQueueEnabled, "admin queue enabled",
                   {fn, q.sq_size, q.cq_size});
    return Enabled::kYes;
}

std::uint32_t AdminQueues::post(std::uint32_t fn, Queue& q, const jal_admin_sqe& sqe,
                                const Completion& c)
{
    jal_admin_cqe cqe{};
    cqe.result = c.result;
    cqe.status = c.status;
    cqe.sq_head = static_cast<std::uint16_t>(q.sq_head);
    cqe.cid = sqe.cid;
    cqe.flags = static_cast<std::uint16_t>(q.phase & JAL_ADMIN_CQE_PHASE);
    // The phase bit tells the host the entry is valid, so it goes out last, in its own copy.
    const std::uint64_t at = q.cq_base + std::uint64_t{q.cq_tail} * sizeof cqe;
    constexpr std::uint32_t kBody = offsetof(jal_admin_cqe, flags);
    std::uint32_t status = hal::dma(fn, at, &cqe, kBody, true);
    if (status == JAL_STATUS_OK)
        status = hal::dma(fn, at + kBody, &cqe.flags, sizeof cqe.flags, true);
    if (status != JAL_STATUS_OK) return status;
    if (++q.cq_tail == q.cq_size) {
        q.cq_tail = 0;
        q.phase ^= 1;
    }
    hal::write32(JAL_HOSTIF_MSI, fn << 16 | JAL_MSIX_VECTOR_ADMIN);
    ++completed_;
    return JAL_STATUS_OK;
}

bool AdminQueues::service_one(std::uint32_t fn, AfterAction& after)
{
    Queue& q = queues_[fn];
    const std::uint32_t generation = hal::read32(fn_reg(fn, JAL_FN_GENERATION));
    if (!q.have_generation || generation != q.generation) {
        q = Queue{};
        q.have_generation = true;
        q.generation = generation;
    }
    const std::uint32_t ctrl = hal::read32(fn_reg(fn, JAL_FN_CTRL));
    if (!(ctrl & JAL_ADMIN_CTRL_ENABLE)) {
        q.state = State::kIdle;
        if (hal::read32(fn_reg(fn, JAL_FN_ADMIN_STATUS)) != 0)
            hal::write32(fn_reg(fn, JAL_FN_ADMIN_STATUS), 0);
        return false;
    }
    if (q.state == State::kIdle) {
        const Enabled enabled = enable(fn, q);
        if (enabled == Enabled::kRaced) return true;  // look again at the next wake
        if (enabled == Enabled::kRefused) return false;
    }
    if (q.state != State::kReady) return false;

    for (std::uint32_t n = 0; n < kMaxCommandsPerWake; ++n) {
        const std::uint32_t tail = hal::read32(fn_reg(fn, JAL_FN_SQ_TAIL));
        if (tail >= q.sq_size) {
            set_error(fn, q, JAL_STATUS_INVALID_FIELD);
            return false;
        }
        if (q.sq_head == tail) return false;  // nothing more to do
        const std::uint32_t cq_head = hal::read32(fn_reg(fn, JAL_FN_CQ_HEAD));
        if (cq_head >= q.cq_size) {
            set_error(fn, q, JAL_STATUS_INVALID_FIELD);
            return false;
        }
        // Never overrun the completion ring: wait for the host to consume entries.
        if ((q.cq_tail + 1) % q.cq_size == cq_head) return true;

        jal_admin_sqe sqe;
        const std::uint32_t fetch = hal::dma(fn, q.sq_base + std::uint64_t{q.sq_head} * sizeof sqe,
                                             &sqe, sizeof sqe, false);
        if (fetch == JAL_STATUS_NO_DEVICE) {  // detached under us: drop quietly
            q = Queue{};
            return false;
        }
        if (fetch != JAL_STATUS_OK) {
            set_error(fn, q, JAL_STATUS_DMA_FAULT);
            return false;
        }
        q.sq_head = (q.sq_head + 1) % q.sq_size;
        report_admin_progress();
        const Completion c = commands_.execute(fn, sqe);
        if (c.status != JAL_STATUS_OK)
            journal_.event(JAL_SRC_ADMIN, JAL_SEV_WARN, kEvAdminCommandError,
                           "admin command failed", {fn, sqe.opcode, c.status, sqe.cid});
        // The host gave up on the command and disabled the queue while it ran (a timeout):
        // its rings may be gone, and an error posted now would fail the queue it enables next.
        if (hal::read32(fn_reg(fn, JAL_FN_GENERATION)) != q.generation) {
            after = c.after;
            return true;  // the next wake starts the queue the host enabled since
        }
        const std::uint32_t posted = post(fn, q, sqe, c);
        if (posted == JAL_STATUS_NO_DEVICE) {  // the function went away: drop quietly
            q = Queue{};
            return false;
        }
        if (posted != JAL_STATUS_OK) {  // CQ not mapped (or unmapped by a detach in progress)
            set_error(fn, q, JAL_STATUS_DMA_FAULT);
            return false;
        }
        if (c.after != AfterAction::kNone) {
            after = c.after;
            return true;
        }
    }
    return true;  // bound reached; continue at the next wake
}

AfterAction AdminQueues::service()
{
    std::uint32_t still = 0;
    AfterAction after = AfterAction::kNone;
    for (std::uint32_t fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn) {
        if (!((pending_ >> fn) & 1)) continue;
        if (!((present_ >> fn) & 1)) continue;
        if (service_one(fn, after)) still |= 1u << fn;
        if (after != AfterAction::kNone) {
            // Functions not reached yet keep their news.
            still |= pending_ & ~((2u << fn) - 1);
            break;
        }
    }
    pending_ = still;
    return after;
}

}  // namespace jal::fw::host
