#include "firmware/queues/user_queues.hpp"

#include "jal/hw/mgmt.h"
#include "jal/hw/queue.h"
#include "jal/hw/status.h"

namespace jal::fw::queues {

void UserQueues::init()
{
    q_.fill(Queue{});
    next_ = 0;
    for (std::uint32_t qid = 0; qid < JAL_MAX_USER_QUEUES; ++qid)
        cp::control(qid, JAL_CP_CTRL_DISABLE);
}

std::uint32_t UserQueues::create(const cp::QueueConfig& cfg, std::uint32_t& qid)
{
    for (std::uint32_t i = 0; i < JAL_MAX_USER_QUEUES; ++i) {
        const std::uint32_t id = (next_ + i) % JAL_MAX_USER_QUEUES;
        if (q_[id].ctx != 0) continue;
        q_[id] = Queue{static_cast<std::uint8_t>(cfg.ctx), static_cast<std::uint8_t>(cfg.fn),
                       cfg.size, 0, JAL_QUEUE_ACTIVE};
        next_ = (id + 1) % JAL_MAX_USER_QUEUES;
        cp::enable(id, cfg);
        qid = id;
        return JAL_STATUS_OK;
    }
    return JAL_STATUS_BUSY;
}

std::uint32_t UserQueues::check_owner(std::uint32_t fn, std::uint32_t qid) const
{
    if (qid >= JAL_MAX_USER_QUEUES || q_[qid].ctx == 0) return JAL_STATUS_INVALID_FIELD;
    return q_[qid].fn == fn ? JAL_STATUS_OK : JAL_STATUS_PERMISSION;
}

void UserQueues::destroy(std::uint32_t qid)
{
    if (qid >= JAL_MAX_USER_QUEUES || q_[qid].ctx == 0) return;
    cp::control(qid, JAL_CP_CTRL_DISABLE);
    q_[qid] = Queue{};
}

std::uint32_t UserQueues::destroy_context(std::uint32_t ctx)
{
    if (ctx == 0) return 0;
    std::uint32_t n = 0;
    for (std::uint32_t qid = 0; qid < JAL_MAX_USER_QUEUES; ++qid) {
        if (q_[qid].ctx != ctx) continue;
        destroy(qid);
        ++n;
    }
    return n;
}

bool UserQueues::status(std::uint32_t qid, jal_queue_status& st)
{
    st = jal_queue_status{};
    if (qid >= JAL_MAX_USER_QUEUES || q_[qid].ctx == 0) return false;
    cp::read_status(qid, st);
    st.queue_id = qid;
    st.context = q_[qid].ctx;
    st.size = q_[qid].size;
    Queue& q = q_[qid];
    // The engine's counter only grows until a reset, so a change means new failures.
    const bool news = st.errors != q.errors_seen ||
                      (st.state == JAL_QUEUE_ERROR && q.state_seen != JAL_QUEUE_ERROR);
    q.errors_seen = st.errors;
    q.state_seen = st.state;
    return news;
}

void UserQueues::reset(std::uint32_t qid)
{
    if (qid >= JAL_MAX_USER_QUEUES || q_[qid].ctx == 0) return;
    cp::control(qid, JAL_CP_CTRL_RESET);
    q_[qid].errors_seen = 0;
    q_[qid].state_seen = JAL_QUEUE_ACTIVE;
}

std::uint32_t UserQueues::live() const
{
    std::uint32_t n = 0;
    for (const Queue& q : q_) n += q.ctx != 0;
    return n;
}

}  // namespace jal::fw::queues
