// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host memory the device reaches by DMA, owned by one open file:
 *  - allocated: coherent memory the process maps with mmap (the queue rings, signals and
 *    copy buffers of userlib: a copy packet names one contiguous bus range, which this
 *    is: physically contiguous without an IOMMU (at most 4 MiB), IOVA-contiguous behind
 *    one (at most 256 MiB);
 *  - pinned: a range of the process's own memory, pinned with pin_user_pages and mapped
 *    for DMA; the caller learns its DMA segments (one, behind an IOMMU).
 * Everything goes through the DMA API, so behind an IOMMU the device holds IOVAs and
 * reaches only these buffers (of every file, one IOMMU domain per function) and the
 * driver's admin queue; a buffer's mapping goes away with the buffer, which lives until it
 * is freed and no mapping of it remains, and the device then faults on its old addresses.
 * Within that domain each file is a host space of the device (interface 1.11): every DMA
 * segment of its buffers is a window of its space from allocation to HOST_FREE, and its
 * contexts' packets fault outside those windows, so one process's queues cannot name
 * another's buffers or the admin queue.
 */
#include <linux/dma-mapping.h>
#include <linux/iommu.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "jal_drv.h"

#define JAL_HOST_ALLOC_MAX (4u << 20)
#define JAL_HOST_ALLOC_MAX_IOMMU (256u << 20)
#define JAL_HOST_PIN_MAX (1ull << 30)

struct jal_host_buf {
	struct kref ref;
	struct device *dev;
	size_t size;
	bool pinned;
	void *cpu; /* allocated */
	dma_addr_t dma;
	struct page **pages; /* pinned */
	unsigned long npages;
	struct sg_table sgt;
};

static void jal_host_release(struct kref *ref)
{
	struct jal_host_buf *buf = container_of(ref, struct jal_host_buf, ref);

	if (buf->pinned) {
		dma_unmap_sgtable(buf->dev, &buf->sgt, DMA_BIDIRECTIONAL, 0);
		sg_free_table(&buf->sgt);
		unpin_user_pages_dirty_lock(buf->pages, buf->npages, true);
		kvfree(buf->pages);
	} else {
		dma_free_coherent(buf->dev, buf->size, buf->cpu, buf->dma);
	}
	put_device(buf->dev);
	kfree(buf);
}

static void jal_host_put(struct jal_host_buf *buf)
{
	kref_put(&buf->ref, jal_host_release);
}

/*
 * One HOST_WINDOW command for the file's space: the admin queue's error, or 0 with the
 * device's answer in *status.
 */
static int jal_host_window(struct jal_file *jf, u32 op, u64 bus, u64 len,
			   u32 *status)
{
	struct jal_admin_sqe sqe = { .opcode = JAL_ADMIN_HOST_WINDOW };
	struct jal_admin_cqe cqe;
	int ret;

	sqe.cdw[0] = op;
	sqe.cdw[1] = jf->space;
	sqe.cdw[2] = lower_32_bits(bus);
	sqe.cdw[3] = upper_32_bits(bus);
	sqe.cdw[4] = lower_32_bits(len);
	sqe.cdw[5] = upper_32_bits(len);
	ret = jal_admin_run(jf->jdev, &sqe, NULL, 0, &cqe);
	if (ret)
		return ret;
	*status = cqe.status;
	return 0;
}

/* ADD: 0, or -ENOSPC (the device's table is full), -EIO, the admin queue's error. */
static int jal_host_window_add(struct jal_file *jf, u64 bus, u64 len)
{
	u32 status = JAL_STATUS_OK;
	int ret = jal_host_window(jf, JAL_WINDOW_ADD, bus, len, &status);

	if (ret || status == JAL_STATUS_OK)
		return ret;
	dev_warn(&jf->jdev->pdev->dev,
		 "HOST_WINDOW ADD of space %u (bus 0x%llx, %llu bytes): %s\n",
		 jf->space, bus, len, jal_status_name(status));
	return status == JAL_STATUS_BUSY ? -ENOSPC : -EIO;
}

/* Adds the windows of a buffer's DMA segments, taking back the ones it added if one fails. */
static int jal_host_buf_windows_add(struct jal_file *jf,
				    struct jal_host_buf *buf)
{
	struct scatterlist *sg;
	unsigned int i, failed;
	u32 status;
	int ret = 0;

	if (!jf->jdev->windows)
		return 0;
	if (!buf->pinned)
		return jal_host_window_add(jf, buf->dma, buf->size);
	for_each_sgtable_dma_sg(&buf->sgt, sg, i)
	{
		ret = jal_host_window_add(jf, sg_dma_address(sg),
					  sg_dma_len(sg));
		if (ret)
			break;
	}
	if (!ret)
		return 0;
	failed = i;
	for_each_sgtable_dma_sg(&buf->sgt, sg, i)
	{
		if (i == failed)
			break;
		jal_host_window(jf, JAL_WINDOW_REMOVE, sg_dma_address(sg),
				sg_dma_len(sg), &status);
	}
	return ret;
}

/*
 * Removes the windows of a buffer's DMA segments. A REMOVE the device answers, whatever it
 * says, leaves no such window (INVALID_FIELD: the chip was reset before the driver
 * noticed, and the table is empty); only the admin queue's own failure is returned.
 */
static int jal_host_buf_windows_remove(struct jal_file *jf,
				       struct jal_host_buf *buf)
{
	struct scatterlist *sg;
	unsigned int i;
	u32 status;
	int ret = 0, err;

	if (!jf->jdev->windows)
		return 0;
	if (!buf->pinned)
		return jal_host_window(jf, JAL_WINDOW_REMOVE, buf->dma,
				       buf->size, &status);
	for_each_sgtable_dma_sg(&buf->sgt, sg, i)
	{
		err = jal_host_window(jf, JAL_WINDOW_REMOVE, sg_dma_address(sg),
				      sg_dma_len(sg), &status);
		if (err && !ret)
			ret = err;
	}
	return ret;
}

/*
 * After a chip reset the window table is empty while the file keeps its buffers: they get
 * their windows back before the file adds or uses any (a context created, a buffer added).
 */
int jal_host_windows_restore(struct jal_file *jf)
{
	struct jal_host_buf *buf;
	int id, ret;

	if (!jf->windows_lost)
		return 0;
	jf->windows_lost = false;
	idr_for_each_entry(&jf->host, buf, id)
	{
		ret = jal_host_buf_windows_add(jf, buf);
		if (ret) {
			jf->windows_lost = true;
			return ret;
		}
	}
	return 0;
}

/* The file is closing: its space goes, with every window in it. */
void jal_host_windows_clear(struct jal_file *jf)
{
	u32 status;

	if (jf->jdev->windows && !jf->windows_lost)
		jal_host_window(jf, JAL_WINDOW_CLEAR, 0, 0, &status);
}

static int jal_host_insert(struct jal_file *jf, struct jal_host_buf *buf,
			   u32 *handle)
{
	int id = idr_alloc(&jf->host, buf, 1, 0, GFP_KERNEL);

	if (id < 0)
		return id;
	*handle = id;
	return 0;
}

/*
 * Behind a translating IOMMU the DMA API builds a coherent buffer from single pages mapped
 * at consecutive IOVAs, so its size is bounded by IOVA space and the device's mappings (the
 * emulated function holds at most 256 MiB of 4 KiB pages); without one it must be
 * physically contiguous, which the page allocator gives up to 4 MiB.
 */
static u64 jal_host_alloc_max(struct device *dev)
{
	struct iommu_domain *domain = iommu_get_domain_for_dev(dev);

	if (domain && iommu_is_dma_domain(domain))
		return JAL_HOST_ALLOC_MAX_IOMMU;
	return JAL_HOST_ALLOC_MAX;
}

int jal_host_alloc(struct jal_file *jf, u64 bytes, u32 *handle, u64 *bus_addr)
{
	struct device *dev = &jf->jdev->pdev->dev;
	struct jal_host_buf *buf;
	int ret;

	if (!bytes || bytes > jal_host_alloc_max(dev))
		return -EINVAL;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	kref_init(&buf->ref);
	buf->dev = get_device(dev);
	buf->size = PAGE_ALIGN(bytes);
	buf->cpu = dma_alloc_coherent(dev, buf->size, &buf->dma, GFP_KERNEL);
	if (!buf->cpu) {
		ret = -ENOMEM;
		goto err_put_dev;
	}
	ret = jal_host_windows_restore(jf);
	if (!ret)
		ret = jal_host_buf_windows_add(jf, buf);
	if (ret)
		goto err_free;
	ret = jal_host_insert(jf, buf, handle);
	if (ret)
		goto err_windows;
	*bus_addr = buf->dma;
	return 0;

err_windows:
	jal_host_buf_windows_remove(jf, buf);
err_free:
	dma_free_coherent(dev, buf->size, buf->cpu, buf->dma);
err_put_dev:
	put_device(dev);
	kfree(buf);
	return ret;
}

int jal_host_pin(struct jal_file *jf, u64 user_ptr, u64 bytes, u32 *handle,
		 struct jal_host_buf **out)
{
	struct device *dev = &jf->jdev->pdev->dev;
	struct jal_host_buf *buf;
	int pinned, ret;

	if (!bytes || bytes > JAL_HOST_PIN_MAX || !PAGE_ALIGNED(user_ptr) ||
	    !PAGE_ALIGNED(bytes))
		return -EINVAL;
	if (user_ptr + bytes < user_ptr ||
	    !access_ok(u64_to_user_ptr(user_ptr), bytes))
		return -EFAULT;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	kref_init(&buf->ref);
	buf->pinned = true;
	buf->size = bytes;
	buf->npages = bytes >> PAGE_SHIFT;
	buf->pages =
		kvmalloc_array(buf->npages, sizeof(*buf->pages), GFP_KERNEL);
	if (!buf->pages) {
		ret = -ENOMEM;
		goto err_free_buf;
	}
	pinned = pin_user_pages_fast(user_ptr, buf->npages,
				     FOLL_WRITE | FOLL_LONGTERM, buf->pages);
	if (pinned != buf->npages) {
		ret = pinned < 0 ? pinned : -EFAULT;
		if (pinned > 0)
			unpin_user_pages(buf->pages, pinned);
		goto err_free_pages;
	}
	ret = sg_alloc_table_from_pages(&buf->sgt, buf->pages, buf->npages, 0,
					bytes, GFP_KERNEL);
	if (ret)
		goto err_unpin;
	ret = dma_map_sgtable(dev, &buf->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto err_free_sgt;
	buf->dev = get_device(dev);
	ret = jal_host_windows_restore(jf);
	if (!ret)
		ret = jal_host_buf_windows_add(jf, buf);
	if (ret)
		goto err_unmap;
	ret = jal_host_insert(jf, buf, handle);
	if (ret)
		goto err_windows;
	*out = buf;
	return 0;

err_windows:
	jal_host_buf_windows_remove(jf, buf);
err_unmap:
	put_device(dev);
	dma_unmap_sgtable(dev, &buf->sgt, DMA_BIDIRECTIONAL, 0);
err_free_sgt:
	sg_free_table(&buf->sgt);
err_unpin:
	unpin_user_pages(buf->pages, buf->npages);
err_free_pages:
	kvfree(buf->pages);
err_free_buf:
	kfree(buf);
	return ret;
}

int jal_host_segments(struct jal_host_buf *buf, u64 __user *dst, u32 max,
		      u32 *count)
{
	struct scatterlist *sg;
	unsigned int i;

	*count = buf->sgt.nents;
	for_each_sgtable_dma_sg(&buf->sgt, sg, i)
	{
		u64 seg[2] = { sg_dma_address(sg), sg_dma_len(sg) };

		if (i >= max)
			break;
		if (copy_to_user(dst + 2 * i, seg, sizeof(seg)))
			return -EFAULT;
	}
	return 0;
}

/*
 * The window goes before the buffer (which a mapping may keep alive): from here on the
 * device cannot reach it for this file, and its IOVA may go to another file's buffer.
 */
int jal_host_free(struct jal_file *jf, u32 handle)
{
	struct jal_host_buf *buf = idr_find(&jf->host, handle);
	int ret;

	if (!buf)
		return -EINVAL;
	if (!jf->windows_lost) {
		ret = jal_host_buf_windows_remove(jf, buf);
		if (ret)
			return ret; /* kept: still reachable, so not freed */
	}
	idr_remove(&jf->host, handle);
	jal_host_put(buf);
	return 0;
}

void jal_host_free_all(struct jal_file *jf)
{
	struct jal_host_buf *buf;
	int id;

	idr_for_each_entry(&jf->host, buf, id) jal_host_put(buf);
	idr_destroy(&jf->host);
}

static bool jal_host_buf_contains(struct jal_host_buf *buf, u64 bus, u64 len)
{
	struct scatterlist *sg;
	unsigned int i;

	if (!buf->pinned)
		return bus >= buf->dma && len <= buf->size &&
		       bus - buf->dma <= buf->size - len;
	for_each_sgtable_dma_sg(&buf->sgt, sg, i)
	{
		u64 start = sg_dma_address(sg), n = sg_dma_len(sg);

		if (bus >= start && len <= n && bus - start <= n - len)
			return true;
	}
	return false;
}

/* Is [bus, bus + len) inside one of the file's buffers (one DMA segment)? */
bool jal_host_contains(struct jal_file *jf, u64 bus, u64 len)
{
	struct jal_host_buf *buf;
	int id;

	if (!len || bus + len < bus)
		return false;
	idr_for_each_entry(
		&jf->host, buf,
		id) if (jal_host_buf_contains(buf, bus, len)) return true;
	return false;
}

static void jal_host_vm_open(struct vm_area_struct *vma)
{
	struct jal_host_buf *buf = vma->vm_private_data;

	kref_get(&buf->ref);
}

static void jal_host_vm_close(struct vm_area_struct *vma)
{
	jal_host_put(vma->vm_private_data);
}

static const struct vm_operations_struct jal_host_vm_ops = {
	.open = jal_host_vm_open,
	.close = jal_host_vm_close,
};

int jal_host_mmap(struct jal_file *jf, u32 handle, struct vm_area_struct *vma)
{
	struct jal_host_buf *buf = idr_find(&jf->host, handle);
	unsigned long len = vma->vm_end - vma->vm_start;
	int ret;

	if (!buf || buf->pinned || len > buf->size)
		return -EINVAL;
	/* dma_mmap_coherent reads vm_pgoff as the offset into the buffer */
	vma->vm_pgoff = 0;
	ret = dma_mmap_coherent(buf->dev, vma, buf->cpu, buf->dma, len);
	if (ret)
		return ret;
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY;
	vma->vm_private_data = buf;
	vma->vm_ops = &jal_host_vm_ops;
	kref_get(&buf->ref);
	return 0;
}
