// SPDX-License-Identifier: GPL-2.0-only
/*
 * The boot handshake (docs/device-interface.md §4): the firmware announces READY or
 * FAILED in STATUS; the driver refuses a different interface major.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>

#include "jal_drv.h"

static const char *jal_fw_state(u32 status)
{
	if (status & JAL_REG_STATUS_FAILED)
		return "failed";
	if (status & JAL_REG_STATUS_RESETTING)
		return "resetting";
	if (status & JAL_REG_STATUS_BOOTING)
		return "booting";
	if (status & JAL_REG_STATUS_READY)
		return "ready";
	return "not started";
}

int jal_fw_wait_ready(struct jal_device *jdev)
{
	struct device *dev = &jdev->pdev->dev;
	unsigned long deadline =
		jiffies + msecs_to_jiffies(JAL_BOOT_TIMEOUT_MS);
	u32 id, status, version;

	id = jal_rd(jdev, JAL_REG_ID);
	if (id != JAL_ID_MAGIC) {
		dev_err(dev,
			"BAR0 ID is 0x%08x, not 0x%08x: not a Jalapeño register file\n",
			id, JAL_ID_MAGIC);
		return -ENODEV;
	}

	/* Decide in the documented order: a transition may be seen half-way. */
	for (;;) {
		status = jal_rd(jdev, JAL_REG_STATUS);
		if (status == U32_MAX)
			return -ENODEV; /* the device went away */
		if (status & JAL_REG_STATUS_FAILED)
			break;
		if (!(status &
		      (JAL_REG_STATUS_RESETTING | JAL_REG_STATUS_BOOTING)) &&
		    (status & JAL_REG_STATUS_READY))
			break;
		if (time_after(jiffies, deadline)) {
			dev_err(dev,
				"Firmware did not boot: STATUS 0x%x (%s), POST code 0x%x\n",
				status, jal_fw_state(status),
				jal_rd(jdev, JAL_REG_POST_CODE));
			return -ETIMEDOUT;
		}
		msleep(10);
	}

	version = jal_rd(jdev, JAL_REG_VERSION);
	if (JAL_HW_VERSION_GET_MAJOR(version) != JAL_HW_VERSION_MAJOR) {
		dev_err(dev,
			"Firmware implements interface %u.%u, this driver %u.%u\n",
			JAL_HW_VERSION_GET_MAJOR(version),
			JAL_HW_VERSION_GET_MINOR(version), JAL_HW_VERSION_MAJOR,
			JAL_HW_VERSION_MINOR);
		return -EPROTO;
	}
	jdev->windows = JAL_HW_VERSION_GET_MINOR(version) >= 11;
	if (!jdev->windows)
		dev_warn_once(
			dev,
			"Firmware implements interface %u.%u, without host windows: the device's users can name each other's host buffers\n",
			JAL_HW_VERSION_GET_MAJOR(version),
			JAL_HW_VERSION_GET_MINOR(version));
	if (status & JAL_REG_STATUS_FAILED)
		/* A failed chip still serves its admin queue: its logs say why. */
		dev_notice(
			dev,
			"Chip failed its boot: fault %u (%s), boot status 0x%x\n",
			jal_rd(jdev, JAL_REG_FAULT),
			jal_status_name(jal_rd(jdev, JAL_REG_FAULT)),
			jal_rd(jdev, JAL_REG_BOOT_STATUS));
	return 0;
}

/*
 * A chip reset (caller holds jdev->lock): every function's admin queue is disabled by
 * the chip, so the driver's is enabled again once the firmware is back.
 */
int jal_fw_reset(struct jal_device *jdev, bool admin_command)
{
	struct jal_admin_sqe sqe = { .opcode = JAL_ADMIN_RESET };
	struct jal_admin_cqe cqe;
	int ret;

	if (admin_command) {
		sqe.cdw[0] = JAL_RESET_CHIP;
		ret = jal_admin_run(jdev, &sqe, NULL, 0, &cqe);
		if (!ret && cqe.status != JAL_STATUS_OK)
			ret = -EIO;
		if (ret)
			return ret;
	} else {
		jal_wr(jdev, JAL_REG_RESET, JAL_RESET_MAGIC);
	}
	jdev->admin.enabled = false;
	jal_files_forget_device_state(jdev);

	ret = jal_fw_wait_ready(jdev);
	if (ret)
		return ret;
	ret = jal_admin_enable(jdev);
	if (ret)
		return ret;
	return jal_admin_identify(jdev);
}

/*
 * A reset the driver did not ask for (the firmware's watchdog, caller holds jdev->lock):
 * the management core rebooted and forgot every function's admin queue, contexts and
 * queues. It shows as a new RESET_GENERATION. The driver forgets what its files held (their
 * clients learn of the reset from the generation, libjal's JAL_STATUS_DEVICE_RESET) and
 * sets the admin queue up again once the firmware is back. Returns 0 when there was no
 * reset or the chip is set up again.
 */
int jal_fw_check_generation(struct jal_device *jdev)
{
	u32 generation = jal_rd(jdev, JAL_REG_RESET_GENERATION);
	int ret;

	if (generation == jdev->reset_generation)
		return 0;
	if (generation == U32_MAX)
		return -ENODEV;
	dev_warn(
		&jdev->pdev->dev,
		"Chip was reset under the driver (reset generation %u, was %u): setting it up again\n",
		generation, jdev->reset_generation);
	jdev->admin.enabled = false;
	jal_files_forget_device_state(jdev);
	ret = jal_fw_wait_ready(jdev);
	if (!ret)
		ret = jal_admin_enable(jdev); /* records the new generation */
	if (!ret)
		ret = jal_admin_identify(jdev);
	if (ret)
		dev_err(&jdev->pdev->dev,
			"Failed to set the chip up again after its reset: %d\n",
			ret);
	return ret;
}
