// SPDX-License-Identifier: GPL-2.0-only
/*
 * MSI-X: vector 0 wakes the admin queue's waiter; vectors 1..15 carry user-queue signals
 * and wake both in-kernel signal waiters and the eventfds files bound to them.
 */
#include <linux/eventfd.h>
#include <linux/interrupt.h>

#include "jal_drv.h"

static irqreturn_t jal_irq_handler(int irq, void *arg)
{
	struct jal_vector *v = arg;
	struct jal_device *jdev = v->jdev;
	struct jal_file *jf;

	atomic_inc(&v->count);
	wake_up_all(&v->wq);
	if (v->index == JAL_MSIX_VECTOR_ADMIN)
		return IRQ_HANDLED;

	spin_lock(&jdev->files_lock);
	list_for_each_entry(jf, &jdev->files, node) if (jf->irq_efd[v->index])
		eventfd_signal(jf->irq_efd[v->index], 1);
	spin_unlock(&jdev->files_lock);
	return IRQ_HANDLED;
}

int jal_irq_init(struct jal_device *jdev)
{
	struct pci_dev *pdev = jdev->pdev;
	unsigned int i;
	int ret;

	for (i = 0; i < JAL_MSIX_VECTORS; i++) {
		jdev->vec[i].jdev = jdev;
		jdev->vec[i].index = i;
		atomic_set(&jdev->vec[i].count, 0);
		init_waitqueue_head(&jdev->vec[i].wq);
	}

	ret = pci_alloc_irq_vectors(pdev, JAL_MSIX_VECTORS, JAL_MSIX_VECTORS,
				    PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "Failed to allocate %d MSI-X vectors: %d\n",
			JAL_MSIX_VECTORS, ret);
		return ret;
	}
	for (i = 0; i < JAL_MSIX_VECTORS; i++) {
		ret = request_irq(pci_irq_vector(pdev, i), jal_irq_handler, 0,
				  DRIVER_NAME, &jdev->vec[i]);
		if (ret) {
			dev_err(&pdev->dev,
				"Failed to request MSI-X vector %u: %d\n", i,
				ret);
			goto err_free_irqs;
		}
	}
	return 0;

err_free_irqs:
	while (i--)
		free_irq(pci_irq_vector(pdev, i), &jdev->vec[i]);
	pci_free_irq_vectors(pdev);
	return ret;
}

void jal_irq_fini(struct jal_device *jdev)
{
	unsigned int i;

	for (i = 0; i < JAL_MSIX_VECTORS; i++)
		free_irq(pci_irq_vector(jdev->pdev, i), &jdev->vec[i]);
	pci_free_irq_vectors(jdev->pdev);
}
