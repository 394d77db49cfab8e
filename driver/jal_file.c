// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/jalN: one char device per chip function. Each open file owns what it creates
 * (contexts, queues, host buffers, interrupt bindings); closing it releases all of it.
 */
#include <linux/eventfd.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include <uapi/jal_accel.h>

#include "jal_drv.h"

static dev_t jal_devt;
static struct class *jal_class;
static DEFINE_IDA(jal_minors);

static void jal_device_release(struct kref *ref)
{
	struct jal_device *jdev = container_of(ref, struct jal_device, ref);

	ida_free(&jal_minors, jdev->minor);
	pci_dev_put(jdev->pdev);
	__free_page(jdev->dummy_page);
	kfree(jdev);
}

void jal_device_put(struct jal_device *jdev)
{
	kref_put(&jdev->ref, jal_device_release);
}

static int jal_open(struct inode *inode, struct file *filp)
{
	struct jal_device *jdev =
		container_of(inode->i_cdev, struct jal_device, cdev);
	struct jal_file *jf;

	jf = kzalloc(sizeof(*jf), GFP_KERNEL);
	if (!jf)
		return -ENOMEM;
	jf->jdev = jdev;
	jf->mapping = filp->f_mapping;
	jf->pid = task_tgid_nr(current);
	get_task_comm(jf->comm, current->group_leader);
	idr_init(&jf->host);

	mutex_lock(&jdev->lock);
	if (jdev->gone) {
		mutex_unlock(&jdev->lock);
		kfree(jf);
		return -ENODEV;
	}
	kref_get(&jdev->ref);
	jf->space = ++jdev->next_space ? jdev->next_space : ++jdev->next_space;
	spin_lock_irq(&jdev->files_lock);
	list_add(&jf->node, &jdev->files);
	spin_unlock_irq(&jdev->files_lock);
	mutex_unlock(&jdev->lock);

	filp->private_data = jf;
	return 0;
}

static int jal_release(struct inode *inode, struct file *filp)
{
	struct jal_file *jf = filp->private_data;
	struct jal_device *jdev = jf->jdev;
	unsigned int v;

	mutex_lock(&jdev->lock);
	jal_file_release_resources(jf);
	spin_lock_irq(&jdev->files_lock);
	list_del(&jf->node);
	spin_unlock_irq(&jdev->files_lock);
	mutex_unlock(&jdev->lock);

	for (v = 0; v < JAL_MSIX_VECTORS; v++)
		if (jf->irq_efd[v])
			eventfd_ctx_put(jf->irq_efd[v]);
	kfree(jf);
	jal_device_put(jdev);
	return 0;
}

/*
 * A doorbell page is mapped in full at mmap time, so a fault means the queue is gone: the
 * chip was reset (or removed) and jal_files_forget_device_state() took the page away. A
 * client that writes it before it learns of the reset gets the device's dummy page, not
 * SIGBUS; libjal then reports JAL_STATUS_DEVICE_RESET (the VMA holds the file, so jf lives).
 */
static vm_fault_t jal_doorbell_fault(struct vm_fault *vmf)
{
	struct jal_file *jf = vmf->vma->vm_private_data;

	return vmf_insert_pfn(vmf->vma, vmf->address,
			      page_to_pfn(jf->jdev->dummy_page));
}

static const struct vm_operations_struct jal_doorbell_vm_ops = {
	.fault = jal_doorbell_fault,
};

/* The doorbell page of a queue the file owns: uncached MMIO, nothing else of BAR2. */
static int jal_mmap_doorbell(struct jal_file *jf, u64 queue,
			     struct vm_area_struct *vma)
{
	struct jal_device *jdev = jf->jdev;

	if (queue >= JAL_MAX_USER_QUEUES || !test_bit(queue, jf->queues))
		return -EPERM;
	if (vma->vm_end - vma->vm_start != JAL_DOORBELL_STRIDE ||
	    JAL_DOORBELL_STRIDE != PAGE_SIZE)
		return -EINVAL;
	vma->vm_flags |=
		VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY;
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	vma->vm_ops = &jal_doorbell_vm_ops;
	vma->vm_private_data = jf;
	return io_remap_pfn_range(vma, vma->vm_start,
				  (jdev->doorbell_phys >> PAGE_SHIFT) + queue,
				  PAGE_SIZE, vma->vm_page_prot);
}

static int jal_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct jal_file *jf = filp->private_data;
	struct jal_device *jdev = jf->jdev;
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	int ret;

	mutex_lock(&jdev->lock);
	if (jdev->gone)
		ret = -ENODEV;
	else if (offset >= JAL_MMAP_HOST_BASE)
		ret = jal_host_mmap(jf,
				    (offset - JAL_MMAP_HOST_BASE) >>
					    JAL_MMAP_HOST_SHIFT,
				    vma);
	else if (offset >= JAL_MMAP_DOORBELL_BASE)
		ret = jal_mmap_doorbell(jf,
					(offset - JAL_MMAP_DOORBELL_BASE) /
						JAL_DOORBELL_STRIDE,
					vma);
	else
		ret = -EINVAL;
	mutex_unlock(&jdev->lock);
	return ret;
}

static const struct file_operations jal_fops = {
	.owner = THIS_MODULE,
	.open = jal_open,
	.release = jal_release,
	.unlocked_ioctl = jal_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = jal_mmap,
	.llseek = noop_llseek,
};

/* After a chip reset no file owns anything on the device any more (caller holds
 * jdev->lock); their doorbell mappings are revoked. */
void jal_files_forget_device_state(struct jal_device *jdev)
{
	struct jal_file *jf;

	/* The list only changes under jdev->lock too, so it can be walked while sleeping. */
	list_for_each_entry(jf, &jdev->files, node)
	{
		bitmap_zero(jf->contexts, JAL_MAX_CONTEXTS);
		bitmap_zero(jf->queues, JAL_MAX_USER_QUEUES);
		jf->windows_lost = true;
		unmap_mapping_range(
			jf->mapping, JAL_MMAP_DOORBELL_BASE,
			(u64)JAL_MAX_USER_QUEUES * JAL_DOORBELL_STRIDE, 1);
	}
}

int jal_cdev_add(struct jal_device *jdev)
{
	struct device *dev = &jdev->pdev->dev;
	dev_t devt;
	int ret;

	devt = MKDEV(MAJOR(jal_devt), jdev->minor);
	cdev_init(&jdev->cdev, &jal_fops);
	jdev->cdev.owner = THIS_MODULE;
	ret = cdev_add(&jdev->cdev, devt, 1);
	if (ret) {
		dev_err(dev, "Failed to add the char device: %d\n", ret);
		return ret;
	}
	jdev->dev =
		device_create(jal_class, dev, devt, jdev, "jal%d", jdev->minor);
	if (IS_ERR(jdev->dev)) {
		ret = PTR_ERR(jdev->dev);
		dev_err(dev, "Failed to create /dev/jal%d: %d\n", jdev->minor,
			ret);
		goto err_cdev_del;
	}
	return 0;

err_cdev_del:
	cdev_del(&jdev->cdev);
	return ret;
}

void jal_cdev_del(struct jal_device *jdev)
{
	device_destroy(jal_class, MKDEV(MAJOR(jal_devt), jdev->minor));
	cdev_del(&jdev->cdev);
}

int jal_minor_get(void)
{
	return ida_alloc_max(&jal_minors, JAL_MAX_DEVICES - 1, GFP_KERNEL);
}

int jal_cdev_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&jal_devt, 0, JAL_MAX_DEVICES, DRIVER_NAME);
	if (ret)
		return ret;
	jal_class = class_create(THIS_MODULE, DRIVER_NAME);
	if (IS_ERR(jal_class)) {
		ret = PTR_ERR(jal_class);
		goto err_unregister;
	}
	return 0;

err_unregister:
	unregister_chrdev_region(jal_devt, JAL_MAX_DEVICES);
	return ret;
}

void jal_cdev_fini(void)
{
	class_destroy(jal_class);
	unregister_chrdev_region(jal_devt, JAL_MAX_DEVICES);
}
