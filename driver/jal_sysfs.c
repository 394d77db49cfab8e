// SPDX-License-Identifier: GPL-2.0-only
/*
 * sysfs attributes of the PCI device: what the firmware reported at the last IDENTIFY
 * (probe, reset, or a user's IDENTIFY), plus the live STATUS register.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "jal_drv.h"

static struct jal_device *jal_from_dev(struct device *dev)
{
	return pci_get_drvdata(to_pci_dev(dev));
}

static ssize_t fw_version_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	const struct jal_identify *id = &jal_from_dev(dev)->identify;

	return sysfs_emit(buf, "%u.%u.%u %.32s\n", id->fw_version >> 16,
			  (id->fw_version >> 8) & 0xff, id->fw_version & 0xff,
			  id->fw_build);
}
static DEVICE_ATTR_RO(fw_version);

static ssize_t interface_version_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	u32 v = jal_from_dev(dev)->identify.if_version;

	return sysfs_emit(buf, "%u.%u\n", JAL_HW_VERSION_GET_MAJOR(v),
			  JAL_HW_VERSION_GET_MINOR(v));
}
static DEVICE_ATTR_RO(interface_version);

static ssize_t slices_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	const struct jal_identify *id = &jal_from_dev(dev)->identify;

	return sysfs_emit(buf, "%u/%u enabled mask 0x%016llx\n",
			  id->slices_enabled, id->slices_total,
			  (unsigned long long)id->slices_enabled_mask);
}
static DEVICE_ATTR_RO(slices);

static ssize_t hbm_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	const struct jal_identify *id = &jal_from_dev(dev)->identify;

	return sysfs_emit(
		buf,
		"%u/%u channels ok, %u stacks, %llu of %llu bytes usable\n",
		id->hbm_channels_ok, id->hbm_channels_total, id->hbm_stacks,
		(unsigned long long)id->hbm_bytes_usable,
		(unsigned long long)id->hbm_bytes_total);
}
static DEVICE_ATTR_RO(hbm);

static ssize_t chip_state_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct jal_device *jdev = jal_from_dev(dev);
	u32 s;

	if (READ_ONCE(jdev->gone))
		return -ENODEV;
	s = jal_rd(jdev, JAL_REG_STATUS);
	return sysfs_emit(buf, "%s%s\n",
			  s & JAL_REG_STATUS_FAILED    ? "failed" :
			  s & JAL_REG_STATUS_RESETTING ? "resetting" :
			  s & JAL_REG_STATUS_BOOTING   ? "booting" :
			  s & JAL_REG_STATUS_READY     ? "ready" :
							 "not started",
			  (s & JAL_REG_STATUS_DEGRADED) ? " degraded" : "");
}
static DEVICE_ATTR_RO(chip_state);

static ssize_t boot_count_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", jal_from_dev(dev)->identify.boot_count);
}
static DEVICE_ATTR_RO(boot_count);

/*
 * The processes that have the device open, one line each: "pid comm contexts". jalctl
 * reset lists them (and refuses) before it takes their contexts away.
 */
static ssize_t clients_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct jal_device *jdev = jal_from_dev(dev);
	struct jal_file *jf;
	ssize_t len = 0;

	mutex_lock(&jdev->lock);
	list_for_each_entry(jf, &jdev->files, node)
	{
		len += sysfs_emit_at(
			buf, len, "%d %s %u\n", jf->pid, jf->comm,
			bitmap_weight(jf->contexts, JAL_MAX_CONTEXTS));
	}
	mutex_unlock(&jdev->lock);
	return len;
}
static DEVICE_ATTR_RO(clients);

static struct attribute *jal_dev_attrs[] = {
	&dev_attr_fw_version.attr, &dev_attr_interface_version.attr,
	&dev_attr_slices.attr,	   &dev_attr_hbm.attr,
	&dev_attr_chip_state.attr, &dev_attr_boot_count.attr,
	&dev_attr_clients.attr,	   NULL
};

static const struct attribute_group jal_dev_group = {
	.attrs = jal_dev_attrs,
};

const struct attribute_group *jal_dev_groups[] = { &jal_dev_group, NULL };
