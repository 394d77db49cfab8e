/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * jal.ko: the Linux driver of the Jalapeño accelerator.
 *
 * One struct jal_device per PCI function, one struct jal_file per open /dev/jalN. The
 * device interface (registers, admin queue, packets) is include/jal/hw/, shared with the
 * firmware, the emulator and userlib; the ioctl ABI is include/uapi/jal_accel.h.
 */
#ifndef __JAL_DRV_H__
#define __JAL_DRV_H__

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/sched.h>
#include <linux/idr.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include <jal/hw/admin.h>
#include <jal/hw/pci.h>
#include <jal/hw/queue.h>
#include <jal/hw/regs.h>
#include <jal/hw/status.h>
#include <jal/hw/telemetry.h>
#include <jal/hw/version.h>
#include <uapi/jal_accel.h>

#define DRIVER_NAME "jal"
#define JAL_MAX_DEVICES 16

#define JAL_ADMIN_ENTRIES 16
/*
 * However the interrupt behaves, an admin command gets this long without firmware
 * progress (JAL_REG_ADMIN_PROGRESS), and this long in all while the firmware moves on.
 */
#define JAL_ADMIN_TIMEOUT_MS 10000
#define JAL_ADMIN_MAX_WAIT_MS 120000
/* Boot of the firmware after power-on or a reset. */
#define JAL_BOOT_TIMEOUT_MS 60000

/* mmap offsets: JAL_MMAP_* in the uapi header; host buffer h at HOST_BASE + h << SHIFT */
#define JAL_MMAP_HOST_SHIFT \
	24 /* room for a 4 MiB buffer per handle (and more) */

struct eventfd_ctx;
struct jal_device;

struct jal_vector {
	struct jal_device *jdev;
	unsigned int index;
	atomic_t count; /* interrupts since probe: sleepers wait for a change */
	wait_queue_head_t wq;
};

struct jal_admin {
	struct jal_admin_sqe *sq;
	struct jal_admin_cqe *cq;
	dma_addr_t sq_dma;
	dma_addr_t cq_dma;
	void *data; /* the data buffer of every command, JAL_ADMIN_DATA_MAX */
	dma_addr_t data_dma;
	u16 sq_tail;
	u16 cq_head;
	u16 phase;
	u16 next_cid;
	bool enabled;
};

struct jal_device {
	struct pci_dev *pdev;
	struct kref ref;
	void __iomem *regs;
	phys_addr_t doorbell_phys;
	/* Where a doorbell page faults in once the queue is gone (a reset, the device
	 * removed): a stale write then lands here instead of killing the process (SIGBUS) */
	struct page *dummy_page;
	int minor;
	struct cdev cdev;
	struct device *dev; /* the /dev/jalN class device */
	struct device *hwmon;

	/* Serialises the admin queue and every file's resources. */
	struct mutex lock;
	struct jal_admin admin;
	struct jal_identify identify; /* from the last IDENTIFY */
	bool gone; /* removed: every call fails with -ENODEV */
	/* RESET_GENERATION when the admin queue was last set up: a different value means the
	 * chip was reset since (its watchdog, or another function's reset) */
	u32 reset_generation;
	/* Host windows (interface 1.11): every file's contexts reach only its own buffers.
	 * Off against older firmware, which has no windows. */
	bool windows;
	u32 next_space; /* the host space the next opened file gets (never 0) */

	struct jal_vector vec[JAL_MSIX_VECTORS];
	/* files: changed under both jdev->lock and files_lock, read under either (the
	 * interrupt handler takes files_lock for the eventfd bindings) */
	spinlock_t files_lock;
	struct list_head files;
};

struct jal_file {
	struct jal_device *jdev;
	struct list_head node; /* in jdev->files */
	struct address_space
		*mapping; /* of the device node: doorbell revocation */
	DECLARE_BITMAP(contexts, JAL_MAX_CONTEXTS);
	DECLARE_BITMAP(queues, JAL_MAX_USER_QUEUES);
	u8 queue_ctx[JAL_MAX_USER_QUEUES]; /* context of each owned queue */
	struct idr host; /* handle -> struct jal_host_buf */
	/* The file's host space: its contexts are created in it and each of its buffers is a
	 * window of it, so a packet of this file's queues cannot name another file's memory
	 * (or the driver's admin queue). */
	u32 space;
	bool windows_lost; /* the chip was reset: its window table is empty */
	struct eventfd_ctx *irq_efd[JAL_MSIX_VECTORS];
	pid_t pid; /* the opener's process (tgid), for the sysfs client list */
	char comm[TASK_COMM_LEN];
};

static inline u32 jal_rd(struct jal_device *jdev, u32 reg)
{
	return readl(jdev->regs + reg);
}

static inline void jal_wr(struct jal_device *jdev, u32 reg, u32 value)
{
	writel(value, jdev->regs + reg);
}

/* jal_fw.c: the boot handshake */
int jal_fw_wait_ready(struct jal_device *jdev);
int jal_fw_reset(struct jal_device *jdev, bool admin_command);
int jal_fw_check_generation(struct jal_device *jdev);

/* jal_admin.c: the driver's admin queue (callers hold jdev->lock) */
int jal_admin_init(struct jal_device *jdev);
void jal_admin_fini(struct jal_device *jdev);
int jal_admin_enable(struct jal_device *jdev);
void jal_admin_disable(struct jal_device *jdev);
int jal_admin_run(struct jal_device *jdev, struct jal_admin_sqe *sqe,
		  void *data, u32 data_len, struct jal_admin_cqe *cqe);
int jal_admin_identify(struct jal_device *jdev);
int jal_admin_telemetry(struct jal_device *jdev, struct jal_telemetry *t);

/* jal_irq.c: MSI-X vectors, wakeups and eventfds */
int jal_irq_init(struct jal_device *jdev);
void jal_irq_fini(struct jal_device *jdev);

/* jal_file.c: the char device */
int jal_cdev_init(void);
void jal_cdev_fini(void);
int jal_cdev_add(struct jal_device *jdev);
int jal_minor_get(void);
void jal_cdev_del(struct jal_device *jdev);
void jal_device_put(struct jal_device *jdev);
void jal_files_forget_device_state(struct jal_device *jdev);

/* jal_ioctl.c */
long jal_ioctl(struct file *filp, unsigned int cmd, unsigned long arg);
void jal_file_release_resources(struct jal_file *jf);

/* jal_host.c: host memory the device reaches */
struct jal_host_buf;
int jal_host_alloc(struct jal_file *jf, u64 bytes, u32 *handle, u64 *bus_addr);
int jal_host_pin(struct jal_file *jf, u64 user_ptr, u64 bytes, u32 *handle,
		 struct jal_host_buf **out);
int jal_host_segments(struct jal_host_buf *buf, u64 __user *dst, u32 max,
		      u32 *count);
int jal_host_free(struct jal_file *jf, u32 handle);
void jal_host_free_all(struct jal_file *jf);
bool jal_host_contains(struct jal_file *jf, u64 bus_addr, u64 len);
int jal_host_mmap(struct jal_file *jf, u32 handle, struct vm_area_struct *vma);
int jal_host_windows_restore(struct jal_file *jf);
void jal_host_windows_clear(struct jal_file *jf);

/* jal_hwmon.c, jal_sysfs.c */
int jal_hwmon_init(struct jal_device *jdev);
void jal_hwmon_fini(struct jal_device *jdev);
extern const struct attribute_group *jal_dev_groups[];

#endif /* __JAL_DRV_H__ */
