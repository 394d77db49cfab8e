// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ioctls of /dev/jalN (include/uapi/jal_accel.h). Arguments are checked here before
 * anything reaches the device: size, flags and reserved fields, ownership of contexts and
 * queues, and that rings live in the file's own host memory.
 */
#include <linux/eventfd.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <uapi/jal_accel.h>

#include "jal_drv.h"

/* Every argument struct begins with these two words. */
struct jal_ioctl_hdr {
	__u32 size;
	__u32 flags;
};

#define JAL_IOCTL_SIZE_MAX PAGE_SIZE

static int jal_copy_in(void *karg, size_t ksize, unsigned long arg, u32 *usize)
{
	u32 __user *uarg = (u32 __user *)arg;
	int ret;

	if (get_user(*usize, uarg))
		return -EFAULT;
	if (*usize < ksize)
		return -EINVAL;
	if (*usize > JAL_IOCTL_SIZE_MAX)
		return -E2BIG;
	ret = copy_struct_from_user(karg, ksize, uarg, *usize);
	if (ret)
		return ret;
	return 0;
}

static int jal_copy_out(unsigned long arg, const void *karg, size_t ksize)
{
	return copy_to_user((void __user *)arg, karg, ksize) ? -EFAULT : 0;
}

static bool jal_nonzero(const void *p, size_t n)
{
	return memchr_inv(p, 0, n) != NULL;
}

/* Runs a command with no data; its status goes to *status. */
static int jal_run_simple(struct jal_device *jdev, u8 opcode, const u32 *cdw,
			  unsigned int n, u32 *result, u32 *status)
{
	struct jal_admin_sqe sqe = { .opcode = opcode };
	struct jal_admin_cqe cqe;
	int ret;

	memcpy(sqe.cdw, cdw, n * sizeof(*cdw));
	ret = jal_admin_run(jdev, &sqe, NULL, 0, &cqe);
	if (ret)
		return ret;
	if (result)
		*result = cqe.result;
	*status = cqe.status;
	return 0;
}

static long jal_ioctl_info(struct jal_file *jf, struct jal_ioctl_info *a)
{
	struct jal_device *jdev = jf->jdev;

	if (a->flags ||
	    jal_nonzero(&a->id,
			sizeof(*a) - offsetof(struct jal_ioctl_info, id)))
		return -EINVAL;
	a->id = jal_rd(jdev, JAL_REG_ID);
	a->if_version = jal_rd(jdev, JAL_REG_VERSION);
	a->cap = jal_rd(jdev, JAL_REG_CAP);
	a->chip_index = jal_rd(jdev, JAL_REG_CHIP_INDEX);
	a->fw_version = jal_rd(jdev, JAL_REG_FW_VERSION);
	a->status = jal_rd(jdev, JAL_REG_STATUS);
	a->boot_status = jal_rd(jdev, JAL_REG_BOOT_STATUS);
	a->post_code = jal_rd(jdev, JAL_REG_POST_CODE);
	a->fault = jal_rd(jdev, JAL_REG_FAULT);
	a->reset_generation = jal_rd(jdev, JAL_REG_RESET_GENERATION);
	a->msix_vectors = JAL_MSIX_VECTORS;
	a->bar_size[JAL_BAR_REGS] = pci_resource_len(jdev->pdev, JAL_BAR_REGS);
	a->bar_size[JAL_BAR_DOORBELL] =
		pci_resource_len(jdev->pdev, JAL_BAR_DOORBELL);
	a->bar_size[JAL_BAR_MSIX] = pci_resource_len(jdev->pdev, JAL_BAR_MSIX);
	return 0;
}

static bool jal_owns_context(struct jal_file *jf, u32 ctx)
{
	return ctx < JAL_MAX_CONTEXTS && test_bit(ctx, jf->contexts);
}

static bool jal_owns_queue(struct jal_file *jf, u32 q)
{
	return q < JAL_MAX_USER_QUEUES && test_bit(q, jf->queues);
}

static long jal_ioctl_admin(struct jal_file *jf, struct jal_ioctl_admin *a)
{
	struct jal_device *jdev = jf->jdev;
	struct jal_admin_sqe sqe = { .opcode = a->opcode };
	struct jal_admin_cqe cqe;
	void *data = NULL;
	long ret;

	if (a->flags || a->result || a->status ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (a->data_len > JAL_ADMIN_DATA_MAX || (a->data_len && !a->data_ptr))
		return -EINVAL;
	if (a->data_len &&
	    !access_ok(u64_to_user_ptr(a->data_ptr), a->data_len))
		return -EFAULT;
	switch (a->opcode) {
	case JAL_ADMIN_IDENTIFY:
	case JAL_ADMIN_GET_FEATURE:
	case JAL_ADMIN_GET_TELEMETRY:
	case JAL_ADMIN_GET_LOG:
	case JAL_ADMIN_GET_SLICE_MAP:
	case JAL_ADMIN_GET_HBM_REPORT:
	case JAL_ADMIN_GET_LINK_REPORT:
	case JAL_ADMIN_GET_USAGE:
		break;
	case JAL_ADMIN_SET_FEATURE:
	case JAL_ADMIN_DEBUG_FAULT:
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		break;
	case JAL_ADMIN_GET_PLACEMENT:
	case JAL_ADMIN_EXPORT_MEMORY: /* peer memory (interface 1.8): the */
	case JAL_ADMIN_IMPORT_PEER: /* file's own context only */
		if (!jal_owns_context(jf, a->cdw[0]))
			return -EPERM;
		break;
	case JAL_ADMIN_QUEUE_STATUS:
	case JAL_ADMIN_RESET_QUEUE:
		if (!jal_owns_queue(jf, a->cdw[0]))
			return -EPERM;
		break;
	default:
		/* unknown, or one with its own ioctl (contexts, memory, queues, reset) */
		return -EINVAL;
	}

	if (a->data_len) {
		data = kvzalloc(a->data_len, GFP_KERNEL);
		if (!data)
			return -ENOMEM;
	}
	memcpy(sqe.cdw, a->cdw, sizeof(sqe.cdw));
	ret = jal_admin_run(jdev, &sqe, data, a->data_len, &cqe);
	if (!ret && a->data_len &&
	    copy_to_user(u64_to_user_ptr(a->data_ptr), data, a->data_len))
		ret = -EFAULT;
	if (!ret) {
		a->result = cqe.result;
		a->status = cqe.status;
		if (a->opcode == JAL_ADMIN_IDENTIFY &&
		    cqe.status == JAL_STATUS_OK)
			memcpy(&jdev->identify, data,
			       min_t(u32, a->data_len, sizeof(jdev->identify)));
	}
	kvfree(data);
	return ret;
}

static long jal_ioctl_identify(struct jal_file *jf,
			       struct jal_ioctl_identify *a)
{
	struct jal_device *jdev = jf->jdev;
	struct jal_admin_sqe sqe = { .opcode = JAL_ADMIN_IDENTIFY };
	struct jal_admin_cqe cqe;
	struct jal_identify *id;
	long ret;

	if (a->flags || a->status ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (a->data_len > PAGE_SIZE)
		return -EINVAL;
	if (!access_ok(u64_to_user_ptr(a->data_ptr), a->data_len))
		return -EFAULT;
	id = kzalloc(max_t(size_t, a->data_len, sizeof(*id)), GFP_KERNEL);
	if (!id)
		return -ENOMEM;
	ret = jal_admin_run(jdev, &sqe, id, sizeof(*id), &cqe);
	if (!ret) {
		a->status = cqe.status;
		if (cqe.status == JAL_STATUS_OK)
			jdev->identify = *id;
		if (copy_to_user(u64_to_user_ptr(a->data_ptr), id, a->data_len))
			ret = -EFAULT;
	}
	kfree(id);
	return ret;
}

static long jal_ioctl_reset(struct jal_file *jf, struct jal_ioctl_reset *a)
{
	struct jal_device *jdev = jf->jdev;
	int ret;

	if ((a->flags & ~JAL_RESET_F_ADMIN_COMMAND) || a->state ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = jal_fw_reset(jdev, a->flags & JAL_RESET_F_ADMIN_COMMAND);
	a->state = jal_rd(jdev, JAL_REG_STATUS);
	return ret;
}

static long jal_ioctl_ctx_create(struct jal_file *jf,
				 struct jal_ioctl_context *a)
{
	u32 id, space;
	long ret;

	if (a->flags || a->context || a->leaked || a->status ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	/* Its buffers' windows went with the chip's reset: back before it can run a packet. */
	if (jf->windows_lost) {
		ret = jal_host_windows_restore(jf);
		if (ret)
			return ret;
	}
	space = jf->jdev->windows ? jf->space : 0;
	ret = jal_run_simple(jf->jdev, JAL_ADMIN_CREATE_CONTEXT, &space, 1, &id,
			     &a->status);
	if (ret || a->status != JAL_STATUS_OK)
		return ret;
	if (id >= JAL_MAX_CONTEXTS) {
		dev_err(&jf->jdev->pdev->dev,
			"Firmware returned context id %u\n", id);
		return -EIO;
	}
	set_bit(id, jf->contexts);
	a->context = id;
	return 0;
}

/* The device destroyed these queues with their context, or on QUEUE_DESTROY. */
static void jal_forget_queue(struct jal_file *jf, u32 q)
{
	clear_bit(q, jf->queues);
	unmap_mapping_range(jf->mapping,
			    JAL_MMAP_DOORBELL_BASE +
				    (u64)q * JAL_DOORBELL_STRIDE,
			    JAL_DOORBELL_STRIDE, 1);
}

static int jal_destroy_context(struct jal_file *jf, u32 ctx, u32 *leaked,
			       u32 *status)
{
	unsigned int q;
	int ret;

	ret = jal_run_simple(jf->jdev, JAL_ADMIN_DESTROY_CONTEXT, &ctx, 1,
			     leaked, status);
	if (ret || *status != JAL_STATUS_OK)
		return ret;
	clear_bit(ctx, jf->contexts);
	for_each_set_bit(q, jf->queues,
			 JAL_MAX_USER_QUEUES) if (jf->queue_ctx[q] == ctx)
		jal_forget_queue(jf, q);
	return 0;
}

static long jal_ioctl_ctx_destroy(struct jal_file *jf,
				  struct jal_ioctl_context *a)
{
	if (a->flags || a->leaked || a->status ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!jal_owns_context(jf, a->context))
		return -EPERM;
	return jal_destroy_context(jf, a->context, &a->leaked, &a->status);
}

static long jal_ioctl_mem_alloc(struct jal_file *jf,
				struct jal_ioctl_mem_alloc *a)
{
	struct jal_admin_sqe sqe = { .opcode = JAL_ADMIN_ALLOC_MEMORY };
	struct jal_mem_alloc_reply reply;
	struct jal_admin_cqe cqe;
	long ret;

	if (a->flags || a->status || a->va || a->rounded_size ||
	    a->reply_slice_mask || a->reply_placement || a->page_size ||
	    a->pages || a->replicas ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!jal_owns_context(jf, a->context))
		return -EPERM;
	sqe.cdw[0] = a->context;
	sqe.cdw[1] = lower_32_bits(a->bytes);
	sqe.cdw[2] = upper_32_bits(a->bytes);
	sqe.cdw[3] = a->placement;
	sqe.cdw[4] = lower_32_bits(a->slice_mask);
	sqe.cdw[5] = upper_32_bits(a->slice_mask);
	sqe.cdw[6] = a->align_log2;
	ret = jal_admin_run(jf->jdev, &sqe, &reply, sizeof(reply), &cqe);
	if (ret)
		return ret;
	a->status = cqe.status;
	if (cqe.status != JAL_STATUS_OK)
		return 0;
	a->va = reply.va;
	a->rounded_size = reply.size;
	a->reply_slice_mask = reply.slice_mask;
	a->reply_placement = reply.placement;
	a->page_size = reply.page_size;
	a->pages = reply.pages;
	a->replicas = reply.replicas;
	return 0;
}

static long jal_ioctl_mem_free(struct jal_file *jf,
			       struct jal_ioctl_mem_free *a)
{
	u32 cdw[3];

	if (a->flags || a->status ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!jal_owns_context(jf, a->context))
		return -EPERM;
	cdw[0] = a->context;
	cdw[1] = lower_32_bits(a->va);
	cdw[2] = upper_32_bits(a->va);
	return jal_run_simple(jf->jdev, JAL_ADMIN_FREE_MEMORY, cdw, 3, NULL,
			      &a->status);
}

static long jal_ioctl_queue_create(struct jal_file *jf,
				   struct jal_ioctl_queue_create *a)
{
	u32 cdw[7], id;
	long ret;

	if (a->flags || a->queue || a->status || a->reserved0 ||
	    a->doorbell_offset || jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!jal_owns_context(jf, a->context))
		return -EPERM;
	/* The device reads the ring and writes the read index: both must be the file's. */
	if (!jal_host_contains(jf, a->ring_bus,
			       (u64)a->ring_size * JAL_PACKET_SIZE) ||
	    !jal_host_contains(jf, a->read_index_bus, sizeof(u64)))
		return -EINVAL;
	cdw[0] = a->context;
	cdw[1] = lower_32_bits(a->ring_bus);
	cdw[2] = upper_32_bits(a->ring_bus);
	cdw[3] = a->ring_size;
	cdw[4] = lower_32_bits(a->read_index_bus);
	cdw[5] = upper_32_bits(a->read_index_bus);
	cdw[6] = a->vector;
	ret = jal_run_simple(jf->jdev, JAL_ADMIN_CREATE_QUEUE, cdw, 7, &id,
			     &a->status);
	if (ret || a->status != JAL_STATUS_OK)
		return ret;
	if (id >= JAL_MAX_USER_QUEUES) {
		dev_err(&jf->jdev->pdev->dev, "Firmware returned queue id %u\n",
			id);
		return -EIO;
	}
	set_bit(id, jf->queues);
	jf->queue_ctx[id] = a->context;
	a->queue = id;
	a->doorbell_offset =
		JAL_MMAP_DOORBELL_BASE + (u64)id * JAL_DOORBELL_STRIDE;
	return 0;
}

static long jal_ioctl_queue_destroy(struct jal_file *jf,
				    struct jal_ioctl_queue_destroy *a)
{
	long ret;

	if (a->flags || a->status ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!jal_owns_queue(jf, a->queue))
		return -EPERM;
	ret = jal_run_simple(jf->jdev, JAL_ADMIN_DESTROY_QUEUE, &a->queue, 1,
			     NULL, &a->status);
	if (!ret && a->status == JAL_STATUS_OK)
		jal_forget_queue(jf, a->queue);
	return ret;
}

static long jal_ioctl_host_alloc(struct jal_file *jf,
				 struct jal_ioctl_host_alloc *a)
{
	long ret;

	if (a->flags || a->handle || a->reserved0 || a->bus_addr ||
	    a->mmap_offset || jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	ret = jal_host_alloc(jf, a->bytes, &a->handle, &a->bus_addr);
	if (ret)
		return ret;
	a->mmap_offset =
		JAL_MMAP_HOST_BASE + ((u64)a->handle << JAL_MMAP_HOST_SHIFT);
	return 0;
}

static long jal_ioctl_host_pin(struct jal_file *jf,
			       struct jal_ioctl_host_pin *a)
{
	struct jal_host_buf *buf;
	long ret;

	if (a->flags || a->nsegments || a->handle ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (a->max_segments &&
	    !access_ok(u64_to_user_ptr(a->segments_ptr),
		       (u64)a->max_segments * sizeof(struct jal_host_segment)))
		return -EFAULT;
	ret = jal_host_pin(jf, a->user_ptr, a->bytes, &a->handle, &buf);
	if (ret)
		return ret;
	ret = jal_host_segments(buf, u64_to_user_ptr(a->segments_ptr),
				a->max_segments, &a->nsegments);
	if (ret) {
		jal_host_free(jf, a->handle);
		a->handle = 0;
	}
	return ret;
}

static long jal_ioctl_host_free(struct jal_file *jf,
				struct jal_ioctl_host_free *a)
{
	if (a->flags || jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	return jal_host_free(jf, a->handle);
}

static long jal_ioctl_bind_irq(struct jal_file *jf,
			       struct jal_ioctl_bind_irq *a)
{
	struct jal_device *jdev = jf->jdev;
	struct eventfd_ctx *efd = NULL, *old;

	if (a->flags || jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (a->vector < JAL_MSIX_VECTOR_QUEUE_FIRST ||
	    a->vector >= JAL_MSIX_VECTORS)
		return -EINVAL;
	if (a->eventfd != -1) {
		efd = eventfd_ctx_fdget(a->eventfd);
		if (IS_ERR(efd))
			return PTR_ERR(efd);
	}
	spin_lock_irq(&jdev->files_lock);
	old = jf->irq_efd[a->vector];
	jf->irq_efd[a->vector] = efd;
	spin_unlock_irq(&jdev->files_lock);
	if (old)
		eventfd_ctx_put(old);
	return 0;
}

/* Reads the signal's value; the device writes status first and value last. */
static int jal_read_signal(struct jal_signal __user *sig, s64 *value,
			   u32 *status)
{
	if (get_user(*value, &sig->value))
		return -EFAULT;
	smp_rmb();
	if (get_user(*status, &sig->status))
		return -EFAULT;
	return 0;
}

static bool jal_condition_met(u32 cond, s64 value, s64 compare)
{
	switch (cond) {
	case JAL_WAIT_EQ:
		return value == compare;
	case JAL_WAIT_NE:
		return value != compare;
	case JAL_WAIT_LT:
		return value < compare;
	default:
		return value >= compare;
	}
}

static long jal_ioctl_wait_signal(struct jal_file *jf,
				  struct jal_ioctl_wait_signal *a)
{
	struct jal_signal __user *sig = u64_to_user_ptr(a->signal_ptr);
	struct jal_vector *vec;
	long remaining;
	int ret;

	if (a->flags || a->value || a->signal_status ||
	    jal_nonzero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (a->vector < JAL_MSIX_VECTOR_QUEUE_FIRST ||
	    a->vector >= JAL_MSIX_VECTORS || a->condition > JAL_WAIT_GTE ||
	    !IS_ALIGNED(a->signal_ptr, 16))
		return -EINVAL;
	vec = &jf->jdev->vec[a->vector];
	remaining = nsecs_to_jiffies(a->timeout_ns);
	for (;;) {
		/* Interrupt count first: the device writes the signal before it interrupts. */
		int seen = atomic_read(&vec->count);

		ret = jal_read_signal(sig, &a->value, &a->signal_status);
		if (ret)
			return ret;
		if (jal_condition_met(a->condition, a->value, a->compare))
			return 0;
		if (remaining <= 0)
			return -ETIMEDOUT;
		remaining = wait_event_interruptible_timeout(
			vec->wq, atomic_read(&vec->count) != seen, remaining);
		if (remaining < 0)
			return -EINTR;
		if (remaining == 0)
			remaining = -1; /* one last look */
	}
}

void jal_file_release_resources(struct jal_file *jf)
{
	struct jal_device *jdev = jf->jdev;
	unsigned int id;
	u32 leaked, status;

	lockdep_assert_held(&jdev->lock);
	if (!jdev->gone) {
		for_each_set_bit(id, jf->queues, JAL_MAX_USER_QUEUES)
			jal_run_simple(jdev, JAL_ADMIN_DESTROY_QUEUE,
				       (u32 *)&id, 1, NULL, &status);
		for_each_set_bit(id, jf->contexts, JAL_MAX_CONTEXTS) if (
			!jal_run_simple(jdev, JAL_ADMIN_DESTROY_CONTEXT,
					(u32 *)&id, 1, &leaked, &status) &&
			leaked)
			dev_dbg(&jdev->pdev->dev,
				"context %u: %u leaked resources freed\n", id,
				leaked);
		jal_host_windows_clear(jf);
	}
	bitmap_zero(jf->queues, JAL_MAX_USER_QUEUES);
	bitmap_zero(jf->contexts, JAL_MAX_CONTEXTS);
	jal_host_free_all(jf);
}

union jal_ioctl_args {
	struct jal_ioctl_hdr hdr;
	struct jal_ioctl_info info;
	struct jal_ioctl_admin admin;
	struct jal_ioctl_reset reset;
	struct jal_ioctl_identify identify;
	struct jal_ioctl_context context;
	struct jal_ioctl_mem_alloc mem_alloc;
	struct jal_ioctl_mem_free mem_free;
	struct jal_ioctl_queue_create queue_create;
	struct jal_ioctl_queue_destroy queue_destroy;
	struct jal_ioctl_host_alloc host_alloc;
	struct jal_ioctl_host_pin host_pin;
	struct jal_ioctl_host_free host_free;
	struct jal_ioctl_bind_irq bind_irq;
	struct jal_ioctl_wait_signal wait_signal;
};

typedef long (*jal_ioctl_fn)(struct jal_file *jf, void *arg);

struct jal_ioctl_desc {
	unsigned int cmd;
	jal_ioctl_fn fn;
	size_t size;
	bool locked; /* runs under jdev->lock */
};

#define JAL_IOCTL_DEF(c, f, type, l)                                   \
	{                                                              \
		.cmd = c, .fn = (jal_ioctl_fn)f, .size = sizeof(type), \
		.locked = l                                            \
	}

static const struct jal_ioctl_desc jal_ioctls[] = {
	JAL_IOCTL_DEF(JAL_IOCTL_INFO, jal_ioctl_info, struct jal_ioctl_info,
		      false),
	JAL_IOCTL_DEF(JAL_IOCTL_ADMIN, jal_ioctl_admin, struct jal_ioctl_admin,
		      true),
	JAL_IOCTL_DEF(JAL_IOCTL_RESET, jal_ioctl_reset, struct jal_ioctl_reset,
		      true),
	JAL_IOCTL_DEF(JAL_IOCTL_IDENTIFY, jal_ioctl_identify,
		      struct jal_ioctl_identify, true),
	JAL_IOCTL_DEF(JAL_IOCTL_CTX_CREATE, jal_ioctl_ctx_create,
		      struct jal_ioctl_context, true),
	JAL_IOCTL_DEF(JAL_IOCTL_CTX_DESTROY, jal_ioctl_ctx_destroy,
		      struct jal_ioctl_context, true),
	JAL_IOCTL_DEF(JAL_IOCTL_MEM_ALLOC, jal_ioctl_mem_alloc,
		      struct jal_ioctl_mem_alloc, true),
	JAL_IOCTL_DEF(JAL_IOCTL_MEM_FREE, jal_ioctl_mem_free,
		      struct jal_ioctl_mem_free, true),
	JAL_IOCTL_DEF(JAL_IOCTL_QUEUE_CREATE, jal_ioctl_queue_create,
		      struct jal_ioctl_queue_create, true),
	JAL_IOCTL_DEF(JAL_IOCTL_QUEUE_DESTROY, jal_ioctl_queue_destroy,
		      struct jal_ioctl_queue_destroy, true),
	JAL_IOCTL_DEF(JAL_IOCTL_HOST_ALLOC, jal_ioctl_host_alloc,
		      struct jal_ioctl_host_alloc, true),
	JAL_IOCTL_DEF(JAL_IOCTL_HOST_PIN, jal_ioctl_host_pin,
		      struct jal_ioctl_host_pin, true),
	JAL_IOCTL_DEF(JAL_IOCTL_HOST_FREE, jal_ioctl_host_free,
		      struct jal_ioctl_host_free, true),
	JAL_IOCTL_DEF(JAL_IOCTL_BIND_IRQ, jal_ioctl_bind_irq,
		      struct jal_ioctl_bind_irq, false),
	JAL_IOCTL_DEF(JAL_IOCTL_WAIT_SIGNAL, jal_ioctl_wait_signal,
		      struct jal_ioctl_wait_signal, false),
};

/*
 * Commands are matched on type and number only: the size encoded in the command follows
 * the struct as the caller knows it, and the struct's own size field is what counts.
 */
long jal_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct jal_file *jf = filp->private_data;
	struct jal_device *jdev = jf->jdev;
	const struct jal_ioctl_desc *desc = NULL;
	union jal_ioctl_args args;
	unsigned int i;
	u32 usize;
	long ret;

	if (_IOC_TYPE(cmd) != JAL_IOCTL_BASE)
		return -ENOTTY;
	for (i = 0; i < ARRAY_SIZE(jal_ioctls); i++)
		if (_IOC_NR(jal_ioctls[i].cmd) == _IOC_NR(cmd))
			desc = &jal_ioctls[i];
	if (!desc)
		return -ENOTTY;

	memset(&args, 0, sizeof(args));
	ret = jal_copy_in(&args, desc->size, arg, &usize);
	if (ret)
		return ret;

	if (desc->locked) {
		mutex_lock(&jdev->lock);
		ret = jdev->gone ? -ENODEV : desc->fn(jf, &args);
		mutex_unlock(&jdev->lock);
	} else {
		ret = READ_ONCE(jdev->gone) ? -ENODEV : desc->fn(jf, &args);
	}
	if (ret)
		return ret;
	return jal_copy_out(arg, &args, desc->size);
}
