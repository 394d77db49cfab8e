// The command processor's user-queue engines (jal/hw/mgmt.h, JAL_MGMT_CP), one per queue
// id: select with QSEL, describe the queue, then CTRL. The firmware never reads rings or
// packets; the engine follows the queue's doorbell on its own.
#pragma once

#include <cstdint>

#include "firmware/hal/hal.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/mgmt.h"

namespace jal::fw::queues::cp {

struct QueueConfig {
    std::uint32_t ctx = 0;
    std::uint32_t fn = 0;
    std::uint64_t ring = 0;
    std::uint32_t size = 0;
    std::uint64_t rptr = 0;
    std::uint32_t vector = 0;
    std::uint32_t space = 0;  // the context's host space (1.11; 0: the whole function)
};

inline void select(std::uint32_t qid)
{
    hal::write32(JAL_CP_QSEL, qid);
}

inline void enable(std::uint32_t qid, const QueueConfig& q)
{
    select(qid);
    hal::write32(JAL_CP_Q_CTX, q.ctx);
    hal::write32(JAL_CP_Q_FUNC, q.fn);
    hal::write32(JAL_CP_Q_RING_LO, static_cast<std::uint32_t>(q.ring));
    hal::write32(JAL_CP_Q_RING_HI, static_cast<std::uint32_t>(q.ring >> 32));
    hal::write32(JAL_CP_Q_SIZE, q.size);
    hal::write32(JAL_CP_Q_RPTR_LO, static_cast<std::uint32_t>(q.rptr));
    hal::write32(JAL_CP_Q_RPTR_HI, static_cast<std::uint32_t>(q.rptr >> 32));
    hal::write32(JAL_CP_Q_VECTOR, q.vector);
    hal::write32(JAL_CP_Q_SPACE, q.space);
    hal::write32(JAL_CP_Q_CTRL, JAL_CP_CTRL_ENABLE);
}

// A host-window command (jal_window_op or JAL_CP_WIN_CLEAR_FUNC); returns its jal_status.
inline std::uint32_t window(std::uint32_t cmd, std::uint32_t fn, std::uint32_t space,
                            std::uint64_t base, std::uint64_t size)
{
    hal::write32(JAL_CP_WIN_FUNC, fn);
    hal::write32(JAL_CP_WIN_SPACE, space);
    hal::write32(JAL_CP_WIN_BASE_LO, static_cast<std::uint32_t>(base));
    hal::write32(JAL_CP_WIN_BASE_HI, static_cast<std::uint32_t>(base >> 32));
    hal::write32(JAL_CP_WIN_SIZE_LO, static_cast<std::uint32_t>(size));
    hal::write32(JAL_CP_WIN_SIZE_HI, static_cast<std::uint32_t>(size >> 32));
    hal::write32(JAL_CP_WIN_CMD, cmd);
    return hal::read32(JAL_CP_WIN_STATUS);
}

inline void control(std::uint32_t qid, std::uint32_t ctrl)
{
    select(qid);
    hal::write32(JAL_CP_Q_CTRL, ctrl);
}

// Reads a LO/HI pair whose LO read latches HI.
inline std::uint64_t read64(std::uint32_t lo_reg, std::uint32_t hi_reg)
{
    const std::uint32_t lo = hal::read32(lo_reg);
    const std::uint32_t hi = hal::read32(hi_reg);
    return std::uint64_t{hi} << 32 | lo;
}

// Fills the engine's dynamic state (state, indices, errors) into st; the caller fills the
// queue id, context and size from its own record.
inline void read_status(std::uint32_t qid, jal_queue_status& st)
{
    select(qid);
    st.state = hal::read32(JAL_CP_Q_STATE);
    st.last_error = hal::read32(JAL_CP_Q_LAST_ERROR);
    st.errors = hal::read32(JAL_CP_Q_ERRORS);
    st.read_index = read64(JAL_CP_Q_READ_LO, JAL_CP_Q_READ_HI);
    st.write_index = read64(JAL_CP_Q_WRITE_LO, JAL_CP_Q_WRITE_HI);
    st.last_error_index = read64(JAL_CP_Q_ERR_INDEX_LO, JAL_CP_Q_ERR_INDEX_HI);
}

}  // namespace jal::fw::queues::cp
