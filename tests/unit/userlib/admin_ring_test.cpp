// AdminRing: slot accounting and the phase bit, driven by hand-written completions.
#include <gtest/gtest.h>

#include <vector>

#include <jal/error.hpp>

#include "admin/admin_ring.hpp"

namespace {

using jal::admin::AdminRing;

struct Rings {
    explicit Rings(uint16_t n) : sq(n), cq(n), ring(sq.data(), cq.data(), n) {}
    // What the device does: an entry at `slot` with `phase`, flags last.
    void post(uint16_t slot, uint16_t cid, uint16_t phase, uint16_t sq_head)
    {
        cq[slot] = jal_admin_cqe{};
        cq[slot].cid = cid;
        cq[slot].sq_head = sq_head;
        cq[slot].result = 1000u + cid;
        cq[slot].flags = phase;
    }
    std::vector<jal_admin_sqe> sq;
    std::vector<jal_admin_cqe> cq;
    AdminRing ring;
};

TEST(AdminRing, EmptyCompletionQueueYieldsNothing)
{
    Rings r(4);
    EXPECT_FALSE(r.ring.pop());
    EXPECT_EQ(r.ring.expected_phase(), 1);
}

TEST(AdminRing, PushWritesEntryAtTailAndAdvances)
{
    Rings r(4);
    jal_admin_sqe sqe{};
    sqe.opcode = JAL_ADMIN_IDENTIFY;
    sqe.cid = 7;
    EXPECT_EQ(r.ring.push(sqe), 1);
    EXPECT_EQ(r.sq[0].opcode, JAL_ADMIN_IDENTIFY);
    EXPECT_EQ(r.sq[0].cid, 7);
    EXPECT_EQ(r.ring.in_flight(), 1u);
}

TEST(AdminRing, OneSlotStaysFree)
{
    Rings r(4);
    jal_admin_sqe sqe{};
    r.ring.push(sqe);
    r.ring.push(sqe);
    r.ring.push(sqe);
    EXPECT_TRUE(r.ring.full());
    try {
        r.ring.push(sqe);
        FAIL() << "push into a full ring";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_BUSY);
    }
    r.post(0, 0, 1, 1);
    ASSERT_TRUE(r.ring.pop());
    EXPECT_FALSE(r.ring.full());
}

TEST(AdminRing, PhaseFlipsOnEveryWrap)
{
    Rings r(3);
    jal_admin_sqe sqe{};
    uint16_t phase = 1, slot = 0;
    for (uint16_t cid = 0; cid < 20; cid++) {
        sqe.cid = cid;
        r.ring.push(sqe);
        // Until the device writes the slot, the stale entry from the previous pass (the
        // other phase) must not be taken for a completion.
        EXPECT_FALSE(r.ring.pop()) << "cid " << cid;
        r.post(slot, cid, phase, r.ring.sq_tail());
        auto cqe = r.ring.pop();
        ASSERT_TRUE(cqe) << "cid " << cid;
        EXPECT_EQ(cqe->cid, cid);
        EXPECT_EQ(cqe->result, 1000u + cid);
        if (++slot == 3) {
            slot = 0;
            phase ^= 1;
        }
        EXPECT_EQ(r.ring.cq_head(), slot);
        EXPECT_EQ(r.ring.expected_phase(), phase);
    }
}

TEST(AdminRing, RejectsSizesOutsideTheDeviceLimits)
{
    std::vector<jal_admin_sqe> sq(1);
    std::vector<jal_admin_cqe> cq(1);
    EXPECT_THROW(AdminRing(sq.data(), cq.data(), 1), jal::Error);
    EXPECT_THROW(AdminRing(sq.data(), cq.data(), 4097), jal::Error);
}

}  // namespace
