// SPDX-License-Identifier: GPL-2.0-only
/*
 * The driver's admin queue: an NVMe-style SQ/CQ pair in coherent DMA memory, one command
 * at a time (callers hold jdev->lock), completion by the admin MSI-X vector with a
 * periodic recheck so a lost interrupt costs time, not the command.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/jiffies.h>

#include "jal_drv.h"

#define JAL_ADMIN_RECHECK_MS 100

int jal_admin_init(struct jal_device *jdev)
{
	struct device *dev = &jdev->pdev->dev;
	struct jal_admin *a = &jdev->admin;

	a->sq = dma_alloc_coherent(dev, sizeof(*a->sq) * JAL_ADMIN_ENTRIES,
				   &a->sq_dma, GFP_KERNEL);
	if (!a->sq)
		goto err;
	a->cq = dma_alloc_coherent(dev, sizeof(*a->cq) * JAL_ADMIN_ENTRIES,
				   &a->cq_dma, GFP_KERNEL);
	if (!a->cq)
		goto err_free_sq;
	a->data = dma_alloc_coherent(dev, JAL_ADMIN_DATA_MAX, &a->data_dma,
				     GFP_KERNEL);
	if (!a->data)
		goto err_free_cq;
	return 0;

err_free_cq:
	dma_free_coherent(dev, sizeof(*a->cq) * JAL_ADMIN_ENTRIES, a->cq,
			  a->cq_dma);
err_free_sq:
	dma_free_coherent(dev, sizeof(*a->sq) * JAL_ADMIN_ENTRIES, a->sq,
			  a->sq_dma);
err:
	return -ENOMEM;
}

void jal_admin_fini(struct jal_device *jdev)
{
	struct device *dev = &jdev->pdev->dev;
	struct jal_admin *a = &jdev->admin;

	dma_free_coherent(dev, JAL_ADMIN_DATA_MAX, a->data, a->data_dma);
	dma_free_coherent(dev, sizeof(*a->cq) * JAL_ADMIN_ENTRIES, a->cq,
			  a->cq_dma);
	dma_free_coherent(dev, sizeof(*a->sq) * JAL_ADMIN_ENTRIES, a->sq,
			  a->sq_dma);
}

/*
 * A deadline that counts time without firmware progress: freeing most of HBM keeps the
 * firmware busy on one command for longer than any fixed budget on a loaded host, and it
 * moves JAL_REG_ADMIN_PROGRESS as it goes (device interface 1.10).
 */
struct jal_admin_deadline {
	unsigned long start;
	unsigned long at;
	u32 progress;
};

static void jal_admin_deadline_start(struct jal_device *jdev,
				     struct jal_admin_deadline *d)
{
	d->start = jiffies;
	d->at = d->start + msecs_to_jiffies(JAL_ADMIN_TIMEOUT_MS);
	d->progress = jal_rd(jdev, JAL_REG_ADMIN_PROGRESS);
}

static bool jal_admin_deadline_passed(struct jal_device *jdev,
				      struct jal_admin_deadline *d)
{
	u32 now;

	if (!time_after(jiffies, d->at))
		return false;
	now = jal_rd(jdev, JAL_REG_ADMIN_PROGRESS);
	if (now == d->progress ||
	    time_after(jiffies,
		       d->start + msecs_to_jiffies(JAL_ADMIN_MAX_WAIT_MS)))
		return true;
	d->progress = now;
	d->at = jiffies + msecs_to_jiffies(JAL_ADMIN_TIMEOUT_MS);
	return false;
}

static int jal_admin_poll_status(struct jal_device *jdev, u32 mask, u32 want,
				 u32 *status)
{
	struct jal_admin_deadline deadline;

	jal_admin_deadline_start(jdev, &deadline);
	for (;;) {
		*status = jal_rd(jdev, JAL_REG_ADMIN_STATUS);
		if (*status == U32_MAX)
			return -ENODEV;
		if ((*status & mask) == want ||
		    (*status & JAL_ADMIN_STATUS_ERROR))
			return 0;
		if (jal_admin_deadline_passed(jdev, &deadline))
			return -ETIMEDOUT;
		usleep_range(1000, 2000);
	}
}

void jal_admin_disable(struct jal_device *jdev)
{
	jal_wr(jdev, JAL_REG_ADMIN_CTRL, 0);
	jdev->admin.enabled = false;
}

/* docs/device-interface.md §5.2, step by step. */
int jal_admin_enable(struct jal_device *jdev)
{
	struct device *dev = &jdev->pdev->dev;
	struct jal_admin *a = &jdev->admin;
	u32 status;
	int ret;

	/* The generation this queue is set up under (read before, so a reset during the set-up
	 * shows as a change later) */
	jdev->reset_generation = jal_rd(jdev, JAL_REG_RESET_GENERATION);
	jal_wr(jdev, JAL_REG_ADMIN_CTRL, 0);
	ret = jal_admin_poll_status(jdev, JAL_ADMIN_STATUS_READY, 0, &status);
	if (ret) {
		dev_err(dev, "Failed to stop the admin queue: %d\n", ret);
		return ret;
	}
	jal_wr(jdev, JAL_REG_ADMIN_SQ_TAIL, 0);
	jal_wr(jdev, JAL_REG_ADMIN_CQ_HEAD, 0);
	memset(a->cq, 0, sizeof(*a->cq) * JAL_ADMIN_ENTRIES);
	a->sq_tail = 0;
	a->cq_head = 0;
	a->phase =
		JAL_ADMIN_CQE_PHASE; /* the device writes phase 1 on its first pass */
	jal_wr(jdev, JAL_REG_ADMIN_SQ_BASE_LO, lower_32_bits(a->sq_dma));
	jal_wr(jdev, JAL_REG_ADMIN_SQ_BASE_HI, upper_32_bits(a->sq_dma));
	jal_wr(jdev, JAL_REG_ADMIN_CQ_BASE_LO, lower_32_bits(a->cq_dma));
	jal_wr(jdev, JAL_REG_ADMIN_CQ_BASE_HI, upper_32_bits(a->cq_dma));
	jal_wr(jdev, JAL_REG_ADMIN_QSIZE,
	       JAL_ADMIN_ENTRIES | (JAL_ADMIN_ENTRIES << 16));
	jal_wr(jdev, JAL_REG_INTR_MASK, 0);
	jal_wr(jdev, JAL_REG_ADMIN_CTRL, JAL_ADMIN_CTRL_ENABLE);

	ret = jal_admin_poll_status(jdev, JAL_ADMIN_STATUS_READY,
				    JAL_ADMIN_STATUS_READY, &status);
	if (!ret && (status & JAL_ADMIN_STATUS_ERROR))
		ret = -EIO;
	if (ret) {
		dev_err(dev,
			"Failed to enable the admin queue: %d (ADMIN_STATUS 0x%x, %s)\n",
			ret, status, jal_status_name(status >> 16));
		return ret;
	}
	a->enabled = true;
	return 0;
}

static bool jal_admin_cqe_ready(struct jal_device *jdev)
{
	struct jal_admin *a = &jdev->admin;

	return (READ_ONCE(a->cq[a->cq_head].flags) & JAL_ADMIN_CQE_PHASE) ==
	       a->phase;
}

/* Takes the next completion; false when there is none yet. */
static bool jal_admin_reap(struct jal_device *jdev, struct jal_admin_cqe *out)
{
	struct jal_admin *a = &jdev->admin;

	if (!jal_admin_cqe_ready(jdev))
		return false;
	dma_rmb(); /* phase first, then the rest of the entry */
	*out = a->cq[a->cq_head];
	if (++a->cq_head == JAL_ADMIN_ENTRIES) {
		a->cq_head = 0;
		a->phase ^= JAL_ADMIN_CQE_PHASE;
	}
	jal_wr(jdev, JAL_REG_ADMIN_CQ_HEAD, a->cq_head);
	return true;
}

/*
 * Runs one command and waits for its completion. `data` (data_len bytes, at most
 * JAL_ADMIN_DATA_MAX) receives what the device wrote into the data buffer. Returns 0 with
 * the completion in `cqe` (whatever its status), or a negative errno when the command
 * could not be run; a timeout disables the queue, which is enabled again on next use.
 */
int jal_admin_run(struct jal_device *jdev, struct jal_admin_sqe *sqe,
		  void *data, u32 data_len, struct jal_admin_cqe *cqe)
{
	struct jal_admin *a = &jdev->admin;
	struct jal_admin_deadline deadline;
	u16 cid;
	int ret;

	lockdep_assert_held(&jdev->lock);
	if (jdev->gone)
		return -ENODEV;
	if (data_len > JAL_ADMIN_DATA_MAX)
		return -EINVAL;
	ret = jal_fw_check_generation(jdev);
	if (ret)
		return ret;
	if (!a->enabled) {
		ret = jal_admin_enable(jdev);
		if (ret)
			return ret;
	}

	cid = a->next_cid++;
	sqe->cid = cid;
	sqe->flags = 0;
	sqe->data_addr = data_len ? a->data_dma : 0;
	sqe->data_len = data_len;
	if (data_len)
		memset(a->data, 0, data_len);
	a->sq[a->sq_tail] = *sqe;
	a->sq_tail = (a->sq_tail + 1) % JAL_ADMIN_ENTRIES;
	/* writel orders the entry before the doorbell */
	jal_wr(jdev, JAL_REG_ADMIN_SQ_TAIL, a->sq_tail);

	jal_admin_deadline_start(jdev, &deadline);
	for (;;) {
		/* Read before reaping: a completion the chip wrote before a reset (RESET's
		 * own) is then still taken; a reset fires every bound vector, so a command
		 * lost with the queue is noticed at once. */
		bool reset = jal_rd(jdev, JAL_REG_RESET_GENERATION) !=
			     jdev->reset_generation;

		while (jal_admin_reap(jdev, cqe)) {
			if (cqe->cid != cid)
				continue; /* late completion of a command that timed out */
			if (data_len)
				memcpy(data, a->data, data_len);
			return 0;
		}
		if (reset) {
			dev_warn(
				&jdev->pdev->dev,
				"Admin command 0x%02x lost: the chip was reset\n",
				sqe->opcode);
			a->enabled = false;
			return -ECONNRESET;
		}
		if (jal_admin_deadline_passed(jdev, &deadline))
			break;
		wait_event_timeout(jdev->vec[JAL_MSIX_VECTOR_ADMIN].wq,
				   jal_admin_cqe_ready(jdev),
				   msecs_to_jiffies(JAL_ADMIN_RECHECK_MS));
	}
	dev_err(&jdev->pdev->dev,
		"Admin command 0x%02x timed out after %u ms without progress\n",
		sqe->opcode, JAL_ADMIN_TIMEOUT_MS);
	jal_admin_disable(jdev);
	return -ETIMEDOUT;
}

int jal_admin_identify(struct jal_device *jdev)
{
	struct jal_admin_sqe sqe = { .opcode = JAL_ADMIN_IDENTIFY };
	struct jal_admin_cqe cqe;
	int ret;

	ret = jal_admin_run(jdev, &sqe, &jdev->identify, sizeof(jdev->identify),
			    &cqe);
	if (ret)
		return ret;
	return cqe.status == JAL_STATUS_OK ? 0 : -EIO;
}

int jal_admin_telemetry(struct jal_device *jdev, struct jal_telemetry *t)
{
	struct jal_admin_sqe sqe = { .opcode = JAL_ADMIN_GET_TELEMETRY };
	struct jal_admin_cqe cqe;
	int ret;

	ret = jal_admin_run(jdev, &sqe, t, sizeof(*t), &cqe);
	if (ret)
		return ret;
	return cqe.status == JAL_STATUS_OK ? 0 : -EIO;
}
