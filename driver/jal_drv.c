// SPDX-License-Identifier: GPL-2.0-only
/*
 * PCI probe and remove of the Jalapeño accelerator: BARs, MSI-X, the firmware handshake,
 * the admin queue, then the char device and hwmon.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "jal_drv.h"

static void jal_log_identity(struct jal_device *jdev)
{
	const struct jal_identify *id = &jdev->identify;

	dev_info(
		&jdev->pdev->dev,
		"%.32s %.32s: firmware %u.%u.%u (%.32s), interface %u.%u, %u/%u slices, %u/%u HBM channels, /dev/jal%d\n",
		id->model, id->serial, id->fw_version >> 16,
		(id->fw_version >> 8) & 0xff, id->fw_version & 0xff,
		id->fw_build, JAL_HW_VERSION_GET_MAJOR(id->if_version),
		JAL_HW_VERSION_GET_MINOR(id->if_version), id->slices_enabled,
		id->slices_total, id->hbm_channels_ok, id->hbm_channels_total,
		jdev->minor);
}

/* long-function: probe is the ordered list of setup steps with their unwind labels
 * (kernel style: one goto ladder), which reads best in one place. */
static int jal_probe(struct pci_dev *pdev, const struct pci_device_id *ent)
{
	struct device *dev = &pdev->dev;
	struct jal_device *jdev;
	int ret;

	jdev = kzalloc(sizeof(*jdev), GFP_KERNEL);
	if (!jdev)
		return -ENOMEM;
	jdev->dummy_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!jdev->dummy_page) {
		kfree(jdev);
		return -ENOMEM;
	}
	kref_init(&jdev->ref);
	jdev->pdev = pci_dev_get(pdev);
	mutex_init(&jdev->lock);
	spin_lock_init(&jdev->files_lock);
	INIT_LIST_HEAD(&jdev->files);
	jdev->minor = jal_minor_get();
	if (jdev->minor < 0) {
		ret = jdev->minor;
		dev_err(dev, "Failed to get a device number: %d\n", ret);
		pci_dev_put(pdev);
		__free_page(jdev->dummy_page);
		kfree(jdev);
		return ret;
	}
	pci_set_drvdata(pdev, jdev);

	ret = pcim_enable_device(pdev);
	if (ret) {
		dev_err(dev, "Failed to enable the PCI device: %d\n", ret);
		goto err_put;
	}
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret) {
		dev_err(dev, "Failed to set the DMA mask: %d\n", ret);
		goto err_put;
	}
	/*
	 * A copy packet names one bus range: behind an IOMMU, a pinned range is
	 * then one bus-contiguous segment (the PCI default cuts it at 64 KiB).
	 */
	ret = dma_set_max_seg_size(dev, UINT_MAX);
	if (ret) {
		dev_err(dev, "Failed to set the DMA segment size: %d\n", ret);
		goto err_put;
	}
	ret = pcim_iomap_regions(
		pdev, BIT(JAL_BAR_REGS) | BIT(JAL_BAR_DOORBELL), DRIVER_NAME);
	if (ret) {
		dev_err(dev, "Failed to map BARs 0 and 2: %d\n", ret);
		goto err_put;
	}
	jdev->regs = pcim_iomap_table(pdev)[JAL_BAR_REGS];
	jdev->doorbell_phys = pci_resource_start(pdev, JAL_BAR_DOORBELL);

	ret = jal_fw_wait_ready(jdev);
	if (ret) {
		dev_err(dev, "Failed to complete the firmware handshake: %d\n",
			ret);
		goto err_put;
	}
	ret = jal_irq_init(jdev);
	if (ret)
		goto err_put;
	ret = jal_admin_init(jdev);
	if (ret) {
		dev_err(dev, "Failed to allocate the admin queue: %d\n", ret);
		goto err_irq_fini;
	}
	mutex_lock(&jdev->lock);
	ret = jal_admin_enable(jdev);
	if (!ret)
		ret = jal_admin_identify(jdev);
	mutex_unlock(&jdev->lock);
	if (ret) {
		dev_err(dev, "Failed to identify the chip: %d\n", ret);
		goto err_admin_disable;
	}
	ret = jal_cdev_add(jdev);
	if (ret)
		goto err_admin_disable;
	ret = jal_hwmon_init(jdev);
	if (ret)
		goto err_cdev_del;

	jal_log_identity(jdev);
	return 0;

err_cdev_del:
	jal_cdev_del(jdev);
err_admin_disable:
	jal_admin_disable(jdev);
	jal_admin_fini(jdev);
err_irq_fini:
	jal_irq_fini(jdev);
err_put:
	jal_device_put(jdev);
	return ret;
}

static void jal_remove(struct pci_dev *pdev)
{
	struct jal_device *jdev = pci_get_drvdata(pdev);

	jal_hwmon_fini(jdev);
	jal_cdev_del(jdev);

	/* Files still open keep jdev, but every call on them now fails with -ENODEV. */
	mutex_lock(&jdev->lock);
	jal_admin_disable(jdev);
	WRITE_ONCE(jdev->gone, true);
	jal_files_forget_device_state(jdev);
	mutex_unlock(&jdev->lock);

	jal_irq_fini(jdev);
	jal_admin_fini(jdev);
	jal_device_put(jdev);
}

/*
 * A function-level reset (pci_reset_function, sysfs "reset"): the function comes back
 * with its admin queue disabled and without the contexts and queues it owned, so every
 * file loses them and their doorbell mappings; the driver's admin queue is enabled again.
 * jdev->lock is held from prepare to done, so no command runs meanwhile.
 */
static void jal_reset_prepare(struct pci_dev *pdev)
{
	struct jal_device *jdev = pci_get_drvdata(pdev);

	mutex_lock(&jdev->lock);
	jdev->admin.enabled = false;
	jal_files_forget_device_state(jdev);
}

static void jal_reset_done(struct pci_dev *pdev)
{
	struct jal_device *jdev = pci_get_drvdata(pdev);
	int ret;

	ret = jal_fw_wait_ready(jdev);
	if (!ret)
		ret = jal_admin_enable(jdev);
	if (!ret)
		ret = jal_admin_identify(jdev);
	if (ret)
		dev_err(&pdev->dev,
			"Failed to bring the function back after reset: %d\n",
			ret);
	mutex_unlock(&jdev->lock);
}

static const struct pci_error_handlers jal_err_handlers = {
	.reset_prepare = jal_reset_prepare,
	.reset_done = jal_reset_done,
};

static const struct pci_device_id jal_pci_ids[] = {
	{ PCI_DEVICE(JAL_PCI_VENDOR_ID, JAL_PCI_DEVICE_ID) }, {}
};
MODULE_DEVICE_TABLE(pci, jal_pci_ids);

static struct pci_driver jal_pci_driver = {
	.name = DRIVER_NAME,
	.id_table = jal_pci_ids,
	.probe = jal_probe,
	.remove = jal_remove,
	.dev_groups = jal_dev_groups,
	.err_handler = &jal_err_handlers,
};

static int __init jal_init(void)
{
	int ret;

	ret = jal_cdev_init();
	if (ret) {
		pr_err("jal: Failed to register the char device region: %d\n",
		       ret);
		return ret;
	}
	ret = pci_register_driver(&jal_pci_driver);
	if (ret) {
		pr_err("jal: Failed to register the PCI driver: %d\n", ret);
		goto err_cdev_fini;
	}
	return 0;

err_cdev_fini:
	jal_cdev_fini();
	return ret;
}

static void __exit jal_exit(void)
{
	pci_unregister_driver(&jal_pci_driver);
	jal_cdev_fini();
}

module_init(jal_init);
module_exit(jal_exit);

MODULE_DESCRIPTION("Jalapeño accelerator");
MODULE_LICENSE("GPL");
