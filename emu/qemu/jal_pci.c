/*
 * Jalapeño accelerator: a PCIe device whose behaviour lives in jal-emu.
 *
 * The device is one client of the jal-emu transport (docs/transport.md in the jal
 * repository): it connects to the chip's socket, says HELLO (which attaches one host
 * function), forwards guest BAR0/BAR2 accesses as REG_READ/REG_WRITE, shares guest memory
 * with MEM_MAP so the emulator DMAs into it without a round trip through QEMU, and binds
 * each MSI-X vector to an eventfd with SET_IRQ; a signalled eventfd becomes msix_notify().
 * QEMU keeps config space and the MSI-X table; everything else is jal-emu.
 *
 * What the emulator may reach is what the device reaches through its own DMA address space
 * (pci_device_iommu_address_space), which a listener mirrors with MEM_MAP/MEM_UNMAP:
 *  - without a vIOMMU, or while the guest has DMA remapping off: every RAM section, at its
 *    guest-physical address;
 *  - behind a vIOMMU with remapping on: exactly the IOMMU's current mappings, at their
 *    IOVAs, followed with an IOMMU notifier (MAP and UNMAP events, like vfio and vhost).
 *    An address the guest has not mapped for the device is then a DMA fault in the
 *    emulator. intel-iommu reports MAP events only with caching-mode=on (the guest then
 *    invalidates on every map); realize fails without it.
 *
 * Requirements: guest RAM is a shared memory backend with a file descriptor
 *   -object memory-backend-memfd,id=mem,size=512M,share=on -machine memory-backend=mem
 * and, for isolation, a vIOMMU created before the device:
 *   -device intel-iommu,intremap=off,caching-mode=on
 *   -device jal-pci,socket=/run/user/1000/jal-emu/jal0.sock
 *
 * Built into Debian's QEMU 7.2 by scripts/build-qemu.sh, which copies this file to
 * hw/misc/jal_pci.c and the jal headers (include/jal) into the QEMU tree.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/cutils.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/event_notifier.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "exec/address-spaces.h"
#include "exec/cpu-common.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "sysemu/sysemu.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "trace.h"

#include <sys/socket.h>
#include <sys/un.h>

#include "jal/hw/pci.h"
#include "jal/hw/status.h"
#include "jal/emu/protocol.h"

#define TYPE_JAL_PCI "jal-pci"
OBJECT_DECLARE_SIMPLE_TYPE(JalPciState, JAL_PCI)

#define JAL_PCI_MAX_REGIONS 64 /* RAM sections */
#define JAL_PCI_REPLY_TIMEOUT_S 10

typedef struct JalPciIrq {
    struct JalPciState *s;
    unsigned vector;
    EventNotifier e;
    bool initialised;
} JalPciIrq;

typedef struct JalPciRegion {
    uint64_t bus_addr;
    uint64_t size;
    int fd; /* the RAM backend's, owned by QEMU's memory core */
    uint64_t fd_offset;
} JalPciRegion;

struct JalPciState {
    PCIDevice parent_obj;

    MemoryRegion regs;     /* BAR0 */
    MemoryRegion doorbell; /* BAR2 */
    MemoryRegion msix;     /* BAR4: MSI-X table and PBA, kept by QEMU */

    /* properties */
    char *socket_path;

    /* runtime */
    int sock; /* -1 once the emulator went away */
    uint64_t next_id;
    uint32_t function;
    bool used; /* the guest wrote to a BAR since the function was attached */
    QemuMutex lock; /* one request/reply pair at a time */
    /* the device's view of memory: a vIOMMU's, or system memory */
    AddressSpace *dma_as;
    MemoryListener listener;
    bool listener_registered;
    JalPciRegion regions[JAL_PCI_MAX_REGIONS];
    unsigned nregions;
    unsigned unshared_ram; /* RAM sections that could not be shared */
    /* behind a vIOMMU: one notifier for the IOMMU region while any section of it is in
     * dma_as, and the mappings shared with the emulator (JalPciIova, by IOVA) */
    IOMMUNotifier iommu_n;
    MemoryRegion *iommu_mr;
    unsigned iommu_sections;
    hwaddr iommu_offset;
    GTree *iova;
    Notifier machine_done;
    JalPciIrq irq[JAL_MSIX_VECTORS];
};

/* ---- socket ---------------------------------------------------------------------------- */

static void jal_pci_lost(JalPciState *s, const char *what, int err)
{
    if (s->sock >= 0) {
        error_report(
            "jal-pci: %s: %s; the device is gone (reads return all ones)", what,
            err ? strerror(err) : "end of stream");
        close(s->sock);
        s->sock = -1;
    }
}

static int jal_pci_send(JalPciState *s, void *msg, size_t len, int fd)
{
    struct iovec iov = { .iov_base = msg, .iov_len = len };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    ssize_t n;

    if (s->sock < 0) {
        return -ENOTCONN;
    }
    if (fd >= 0) {
        struct cmsghdr *c;

        memset(&ctl, 0, sizeof(ctl));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof(ctl.buf);
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(fd));
    }
    do {
        n = sendmsg(s->sock, &mh, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)len) {
        jal_pci_lost(s, "send", n < 0 ? errno : EIO);
        return -EIO;
    }
    return 0;
}

/* Waits for the reply to request `id`. Replies with older ids answer posted writes the
 * emulator rejected; they are skipped (docs/transport.md §6). */
static int jal_pci_recv_reply(JalPciState *s, uint64_t id,
                              struct jal_msg_reply *rep, void *payload,
                              size_t payload_len)
{
    uint8_t buf[JAL_PROTO_MSG_MAX];

    for (;;) {
        ssize_t n;
        struct jal_msg_reply *r = (struct jal_msg_reply *)buf;

        if (s->sock < 0) {
            return -ENOTCONN;
        }
        do {
            n = recv(s->sock, buf, sizeof(buf), 0);
        } while (n < 0 && errno == EINTR);
        if (n <= 0) {
            jal_pci_lost(s, n == 0 ? "receive" : "receive (timeout or error)",
                         n == 0 ? 0 : errno);
            return -EIO;
        }
        if ((size_t)n < sizeof(*r) || r->hdr.type != JAL_MSG_REPLY ||
            r->hdr.size != n) {
            jal_pci_lost(s, "malformed reply", EPROTO);
            return -EPROTO;
        }
        if (r->hdr.id < id) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "jal-pci: emulator rejected posted write %" PRIu64
                          ": status %u\n",
                          r->hdr.id, r->status);
            continue;
        }
        if (r->hdr.id != id) {
            jal_pci_lost(s, "reply out of order", EPROTO);
            return -EPROTO;
        }
        *rep = *r;
        if (payload_len) {
            if ((size_t)n < sizeof(*r) + payload_len) {
                memset(payload, 0, payload_len);
            } else {
                memcpy(payload, buf + sizeof(*r), payload_len);
            }
        }
        return 0;
    }
}

/* Sends a request and waits for its reply. Returns the reply status (enum jal_status), or
 * a negative errno when the emulator cannot be reached. */
static int jal_pci_call(JalPciState *s, struct jal_msg_hdr *hdr, size_t len,
                        int fd, uint64_t *value, void *payload,
                        size_t payload_len)
{
    struct jal_msg_reply rep = { 0 };
    int ret;

    qemu_mutex_lock(&s->lock);
    hdr->id = ++s->next_id;
    hdr->size = len;
    ret = jal_pci_send(s, hdr, len, fd);
    if (ret == 0) {
        ret = jal_pci_recv_reply(s, hdr->id, &rep, payload, payload_len);
    }
    qemu_mutex_unlock(&s->lock);
    if (ret < 0) {
        return ret;
    }
    if (value) {
        *value = rep.value;
    }
    return rep.status;
}

static int jal_pci_connect(JalPciState *s, Error **errp)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct timeval tv = { .tv_sec = JAL_PCI_REPLY_TIMEOUT_S };
    struct jal_msg_hello hello = { .hdr.type = JAL_MSG_HELLO };
    struct jal_msg_hello_reply hr;
    int ret;

    if (!s->socket_path || !*s->socket_path) {
        error_setg(errp, "jal-pci: property 'socket' is required "
                         "(the chip's jal-emu socket, e.g. DIR/jal0.sock)");
        return -1;
    }
    if (strlen(s->socket_path) >= sizeof(sa.sun_path)) {
        error_setg(errp,
                   "jal-pci: socket path '%s' is longer than %zu characters",
                   s->socket_path, sizeof(sa.sun_path) - 1);
        return -1;
    }
    strcpy(sa.sun_path, s->socket_path);

    s->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s->sock < 0) {
        error_setg_errno(errp, errno, "jal-pci: socket");
        return -1;
    }
    if (connect(s->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        error_setg_errno(errp, errno,
                         "jal-pci: cannot connect to jal-emu at '%s' "
                         "(is jal-emu running with that socket directory?)",
                         s->socket_path);
        close(s->sock);
        s->sock = -1;
        return -1;
    }
    setsockopt(s->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

    hello.proto_version = JAL_PROTO_VERSION;
    pstrcpy(hello.client, sizeof(hello.client), "qemu jal-pci");
    ret = jal_pci_call(s, &hello.hdr, sizeof(hello), -1, NULL, &hr, sizeof(hr));
    if (ret != JAL_STATUS_OK) {
        if (ret < 0) {
            error_setg(errp, "jal-pci: HELLO to '%s' got no reply",
                       s->socket_path);
        } else {
            error_setg(errp, "jal-pci: HELLO to '%s' refused with status %d%s",
                       s->socket_path, ret,
                       ret == JAL_STATUS_BUSY ? " (all host functions in use)"
                       : ret == JAL_STATUS_VERSION_MISMATCH
                           ? " (protocol version)"
                           : "");
        }
        goto fail;
    }
    if ((hr.proto_version >> 16) != JAL_PROTO_VERSION_MAJOR) {
        error_setg(errp,
                   "jal-pci: jal-emu speaks protocol %u.%u, this device %u.%u",
                   hr.proto_version >> 16, hr.proto_version & 0xffff,
                   JAL_PROTO_VERSION_MAJOR, JAL_PROTO_VERSION_MINOR);
        goto fail;
    }
    if (hr.bar_size[JAL_BAR_REGS] != JAL_BAR_REGS_SIZE ||
        hr.bar_size[JAL_BAR_DOORBELL] != JAL_BAR_DOORBELL_SIZE ||
        hr.msix_vectors != JAL_MSIX_VECTORS) {
        error_setg(
            errp,
            "jal-pci: the chip's BARs or vectors differ from this device's "
            "(BAR0 0x%" PRIx64 ", BAR2 0x%" PRIx64 ", %u vectors)",
            hr.bar_size[JAL_BAR_REGS], hr.bar_size[JAL_BAR_DOORBELL],
            hr.msix_vectors);
        goto fail;
    }
    s->function = hr.function;
    trace_jal_pci_attached(s->socket_path, hr.function, hr.chip_index);
    return 0;

fail:
    if (s->sock >= 0) {
        close(s->sock);
        s->sock = -1;
    }
    return -1;
}

/* ---- behind a vIOMMU: one MEM_MAP per IOMMU mapping ---------------------------------- */

/* A mapping the emulator holds: [iova, last] of the device's bus is guest RAM at gpa. */
typedef struct JalPciIova {
    uint64_t iova;
    uint64_t last; /* inclusive */
    uint64_t gpa;
} JalPciIova;

/* Entries never overlap, so overlapping ranges compare equal: a lookup with a range
 * finds a mapping inside it (as QEMU's own IOVATree does). */
static gint jal_pci_iova_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
    const JalPciIova *x = a, *y = b;

    if (x->last < y->iova) {
        return -1;
    }
    if (y->last < x->iova) {
        return 1;
    }
    return 0;
}

/* The memory file behind [gpa, gpa + size) of guest RAM, if it is one shared RAM block. */
static bool jal_pci_gpa_fd(uint64_t gpa, uint64_t size, int *fd,
                           uint64_t *fd_offset)
{
    MemoryRegion *mr;
    hwaddr xlat, len = size;
    ram_addr_t offset;
    void *host;

    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(&address_space_memory, gpa, &xlat, &len, true,
                                 MEMTXATTRS_UNSPECIFIED);
    if (len < size || !memory_region_is_ram(mr) ||
        memory_region_is_ram_device(mr) || memory_region_is_rom(mr) ||
        mr->readonly) {
        return false;
    }
    host = (uint8_t *)memory_region_get_ram_ptr(mr) + xlat;
    mr = memory_region_from_host(host, &offset);
    if (!mr || !mr->ram_block) {
        return false;
    }
    *fd = memory_region_get_fd(mr);
    *fd_offset = offset;
    return *fd >= 0 && qemu_ram_is_shared(mr->ram_block);
}

static int jal_pci_send_map(JalPciState *s, uint16_t type, uint64_t bus_addr,
                            uint64_t size, int fd, uint64_t fd_offset)
{
    struct jal_msg_mem_map m = { .hdr.type = type };

    m.bus_addr = bus_addr;
    m.size = size;
    m.fd_offset = fd_offset;
    return jal_pci_call(s, &m.hdr, sizeof(m), fd, NULL, NULL, 0);
}

/* Shares one IOMMU mapping with the emulator and remembers it. */
static void jal_pci_iova_map(JalPciState *s, uint64_t iova, uint64_t size,
                             uint64_t gpa)
{
    JalPciIova *e;
    uint64_t fd_offset;
    int fd, ret;

    if (!jal_pci_gpa_fd(gpa, size, &fd, &fd_offset)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "jal-pci: IOMMU mapping 0x%" PRIx64 "+0x%" PRIx64
                      " -> 0x%" PRIx64 " is not shared guest RAM; the device "
                      "cannot reach it\n",
                      iova, size, gpa);
        return;
    }
    ret = jal_pci_send_map(s, JAL_MSG_MEM_MAP, iova, size, fd, fd_offset);
    trace_jal_pci_iommu_map(iova, size, gpa, ret);
    if (ret != JAL_STATUS_OK) {
        if (ret > 0) {
            warn_report("jal-pci: MEM_MAP of IOMMU mapping 0x%" PRIx64
                        "+0x%" PRIx64 " failed: %d; the device cannot reach it",
                        iova, size, ret);
        }
        return;
    }
    e = g_new(JalPciIova, 1);
    *e = (JalPciIova){ .iova = iova, .last = iova + size - 1, .gpa = gpa };
    g_tree_insert(s->iova, e, e);
}

/* Takes every mapping in [first, last] away from the emulator; the parts of a mapping
 * outside the range stay mapped. */
static void jal_pci_iova_unmap(JalPciState *s, uint64_t first, uint64_t last)
{
    JalPciIova range = { .iova = first, .last = last };
    JalPciIova *e;

    while ((e = g_tree_lookup(s->iova, &range))) {
        JalPciIova old = *e;
        int ret;

        g_tree_remove(s->iova, e); /* frees e */
        ret = jal_pci_send_map(s, JAL_MSG_MEM_UNMAP, old.iova,
                               old.last - old.iova + 1, -1, 0);
        trace_jal_pci_iommu_unmap(old.iova, old.last - old.iova + 1, ret);
        if (old.iova < first) {
            jal_pci_iova_map(s, old.iova, first - old.iova, old.gpa);
        }
        if (old.last > last) {
            jal_pci_iova_map(s, last + 1, old.last - last,
                             old.gpa + (last + 1 - old.iova));
        }
    }
}

static void jal_pci_iommu_notify(IOMMUNotifier *n, IOMMUTLBEntry *iotlb)
{
    JalPciState *s = container_of(n, JalPciState, iommu_n);
    uint64_t iova = iotlb->iova + s->iommu_offset;

    if (iotlb->target_as != &address_space_memory) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "jal-pci: IOMMU mapping at 0x%" PRIx64
                      " leads to another address space; ignored\n",
                      iova);
        return;
    }
    /* A changed translation replaces the old one. Access rights are not carried: the
     * emulator maps every page read-write (the driver maps everything bidirectional). */
    jal_pci_iova_unmap(s, iova, iova + iotlb->addr_mask);
    if ((iotlb->perm & IOMMU_RW) != IOMMU_NONE) {
        jal_pci_iova_map(s, iova, iotlb->addr_mask + 1, iotlb->translated_addr);
    }
}

static void jal_pci_iommu_notifier_init(JalPciState *s, MemoryRegion *mr)
{
    int idx = memory_region_iommu_attrs_to_index(IOMMU_MEMORY_REGION(mr),
                                                 MEMTXATTRS_UNSPECIFIED);

    /* The whole region: the interrupt window splits it into sections, and an event
     * must not cross a notifier's bounds. */
    iommu_notifier_init(&s->iommu_n, jal_pci_iommu_notify,
                        IOMMU_NOTIFIER_IOTLB_EVENTS, 0, HWADDR_MAX, idx);
}

/* A section of an IOMMU region appeared in the device's address space (the guest turned
 * DMA remapping on): follow the region's mappings, starting with the current ones. */
static void jal_pci_iommu_add(JalPciState *s, MemoryRegionSection *section)
{
    Error *err = NULL;

    if (s->iommu_mr) {
        if (section->mr != s->iommu_mr) {
            warn_report("jal-pci: a second IOMMU region in the device's "
                        "address space is not followed");
            return;
        }
        s->iommu_sections++;
        return;
    }
    jal_pci_iommu_notifier_init(s, section->mr);
    s->iommu_offset =
        section->offset_within_address_space - section->offset_within_region;
    if (memory_region_register_iommu_notifier(section->mr, &s->iommu_n, &err)) {
        error_reportf_err(err, "jal-pci: cannot follow the vIOMMU's mappings; "
                               "the device reaches no guest memory: ");
        return;
    }
    s->iommu_mr = section->mr;
    s->iommu_sections = 1;
    trace_jal_pci_iommu(memory_region_name(section->mr), 1);
    memory_region_iommu_replay(IOMMU_MEMORY_REGION(section->mr), &s->iommu_n);
}

static void jal_pci_iommu_del(JalPciState *s, MemoryRegionSection *section)
{
    if (section->mr != s->iommu_mr || --s->iommu_sections) {
        return;
    }
    memory_region_unregister_iommu_notifier(section->mr, &s->iommu_n);
    s->iommu_mr = NULL;
    trace_jal_pci_iommu(memory_region_name(section->mr), 0);
    jal_pci_iova_unmap(s, 0, UINT64_MAX);
}

static MemoryRegion *jal_pci_find_iommu(MemoryRegion *mr)
{
    MemoryRegion *sub, *found;

    if (memory_region_is_iommu(mr)) {
        return mr;
    }
    for (sub = QTAILQ_FIRST(&mr->subregions); sub;
         sub = QTAILQ_NEXT(sub, subregions_link)) {
        found = jal_pci_find_iommu(sub);
        if (found) {
            return found;
        }
    }
    return NULL;
}

/* Behind a vIOMMU the device needs its MAP events (intel-iommu sends them only with
 * caching-mode=on); ask now, while the guest has not yet turned remapping on. */
static int jal_pci_check_iommu(JalPciState *s, Error **errp)
{
    MemoryRegion *mr;
    Error *err = NULL;

    if (s->dma_as == &address_space_memory) {
        return 0; /* no vIOMMU */
    }
    mr = jal_pci_find_iommu(s->dma_as->root);
    if (!mr) {
        return 0;
    }
    jal_pci_iommu_notifier_init(s, mr);
    if (memory_region_register_iommu_notifier(mr, &s->iommu_n, &err)) {
        error_propagate_prepend(
            errp, err,
            "jal-pci: the vIOMMU cannot report its mappings to the device "
            "(intel-iommu needs caching-mode=on): ");
        return -1;
    }
    memory_region_unregister_iommu_notifier(mr, &s->iommu_n);
    return 0;
}

/* Shares every mapping again (a new function after a reset). */
static gboolean jal_pci_iova_replay(gpointer key, gpointer value,
                                    gpointer opaque)
{
    JalPciState *s = opaque;
    JalPciIova *e = value;
    uint64_t fd_offset;
    int fd, ret = -1;

    if (jal_pci_gpa_fd(e->gpa, e->last - e->iova + 1, &fd, &fd_offset)) {
        ret = jal_pci_send_map(s, JAL_MSG_MEM_MAP, e->iova,
                               e->last - e->iova + 1, fd, fd_offset);
    }
    trace_jal_pci_iommu_map(e->iova, e->last - e->iova + 1, e->gpa, ret);
    return FALSE;
}

/* ---- guest RAM: one MEM_MAP per shared RAM section --------------------------------------- */

static bool jal_pci_section_fd(MemoryRegionSection *section, int *fd,
                               uint64_t *fd_offset)
{
    MemoryRegion *mr = section->mr;
    ram_addr_t offset;
    void *host;

    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        memory_region_is_rom(mr)) {
        return false;
    }
    host = (uint8_t *)memory_region_get_ram_ptr(mr) +
           section->offset_within_region;
    mr = memory_region_from_host(host, &offset);
    if (!mr || !mr->ram_block) {
        return false;
    }
    *fd = memory_region_get_fd(mr);
    *fd_offset = offset;
    return *fd >= 0 && qemu_ram_is_shared(mr->ram_block);
}

static void jal_pci_region_add(MemoryListener *l, MemoryRegionSection *section)
{
    JalPciState *s = container_of(l, JalPciState, listener);
    struct jal_msg_mem_map m = { .hdr.type = JAL_MSG_MEM_MAP };
    uint64_t page = qemu_real_host_page_size();
    int fd, ret;

    if (memory_region_is_iommu(section->mr)) {
        jal_pci_iommu_add(s, section);
        return;
    }
    if (!memory_region_is_ram(section->mr) ||
        memory_region_is_ram_device(section->mr) ||
        memory_region_is_rom(section->mr) || section->readonly) {
        return; /* MMIO, ROM, BARs mapped from other devices: not DMA-able memory */
    }
    m.bus_addr = section->offset_within_address_space;
    m.size = int128_get64(section->size);
    if (!jal_pci_section_fd(section, &fd, &m.fd_offset)) {
        s->unshared_ram++;
        warn_report("jal-pci: guest RAM '%s' at 0x%" PRIx64
                    " is not a shared memory "
                    "backend; the device cannot reach it",
                    memory_region_name(section->mr), m.bus_addr);
        return;
    }
    if (!QEMU_IS_ALIGNED(m.bus_addr | m.size | m.fd_offset, page) ||
        m.size == 0) {
        warn_report("jal-pci: RAM section at 0x%" PRIx64 " size 0x%" PRIx64
                    " is not page aligned; not shared with the device",
                    m.bus_addr, m.size);
        return;
    }
    if (s->nregions == JAL_PCI_MAX_REGIONS) {
        warn_report("jal-pci: more than %d RAM sections; 0x%" PRIx64
                    " not shared",
                    JAL_PCI_MAX_REGIONS, m.bus_addr);
        return;
    }
    ret = jal_pci_call(s, &m.hdr, sizeof(m), fd, NULL, NULL, 0);
    trace_jal_pci_mem_map(m.bus_addr, m.size, m.fd_offset, ret);
    if (ret == JAL_STATUS_PERMISSION) {
        /* jal-emu maps only memory sealed against shrinking (F_SEAL_SHRINK), which
         * memory-backend-memfd does unless it is given seal=off. */
        warn_report(
            "jal-pci: MEM_MAP 0x%" PRIx64 "+0x%" PRIx64
            " refused: guest RAM is not sealed (use memory-backend-memfd "
            "without seal=off)",
            m.bus_addr, m.size);
        return;
    }
    if (ret != JAL_STATUS_OK) {
        warn_report("jal-pci: MEM_MAP 0x%" PRIx64 "+0x%" PRIx64 " failed: %d",
                    m.bus_addr, m.size, ret);
        return;
    }
    s->regions[s->nregions++] =
        (JalPciRegion){ m.bus_addr, m.size, fd, m.fd_offset };
}

static void jal_pci_region_del(MemoryListener *l, MemoryRegionSection *section)
{
    JalPciState *s = container_of(l, JalPciState, listener);
    struct jal_msg_mem_map m = { .hdr.type = JAL_MSG_MEM_UNMAP };
    unsigned i;
    int ret;

    if (memory_region_is_iommu(section->mr)) {
        jal_pci_iommu_del(s, section);
        return;
    }
    m.bus_addr = section->offset_within_address_space;
    m.size = int128_get64(section->size);
    for (i = 0; i < s->nregions; i++) {
        if (s->regions[i].bus_addr == m.bus_addr &&
            s->regions[i].size == m.size) {
            break;
        }
    }
    if (i == s->nregions) {
        return; /* never mapped */
    }
    s->regions[i] = s->regions[--s->nregions];
    ret = jal_pci_call(s, &m.hdr, sizeof(m), -1, NULL, NULL, 0);
    trace_jal_pci_mem_unmap(m.bus_addr, m.size, ret);
}

/* ---- BARs ---------------------------------------------------------------------------- */

static uint64_t jal_pci_reg_read(JalPciState *s, unsigned bar, hwaddr addr,
                                 unsigned size)
{
    struct jal_msg_reg r = { .hdr.type = JAL_MSG_REG_READ };
    uint64_t value = 0;
    int ret;

    r.bar = bar;
    r.offset = addr;
    r.width = size;
    ret = jal_pci_call(s, &r.hdr, sizeof(r), -1, &value, NULL, 0);
    trace_jal_pci_reg_read(bar, addr, size, value, ret);
    if (ret < 0) {
        return size == 8 ? UINT64_MAX
                         : UINT32_MAX; /* like a surprise-removed device */
    }
    if (ret != JAL_STATUS_OK) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "jal-pci: BAR%u read 0x%" HWADDR_PRIx "/%u: status %d\n",
                      bar, addr, size, ret);
    }
    return value;
}

static void jal_pci_reg_write(JalPciState *s, unsigned bar, hwaddr addr,
                              uint64_t val, unsigned size)
{
    struct jal_msg_reg r = { .hdr.type = JAL_MSG_REG_WRITE };

    r.bar = bar;
    r.offset = addr;
    r.width = size;
    r.value = val;
    trace_jal_pci_reg_write(bar, addr, size, val);
    s->used = true;
    /* Posted: no reply. The next request on this connection (a read) sees it. */
    qemu_mutex_lock(&s->lock);
    r.hdr.id = ++s->next_id;
    r.hdr.size = sizeof(r);
    jal_pci_send(s, &r, sizeof(r), -1);
    qemu_mutex_unlock(&s->lock);
}

static uint64_t jal_pci_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    return jal_pci_reg_read(opaque, JAL_BAR_REGS, addr, size);
}

static void jal_pci_regs_write(void *opaque, hwaddr addr, uint64_t val,
                               unsigned size)
{
    jal_pci_reg_write(opaque, JAL_BAR_REGS, addr, val, size);
}

static const MemoryRegionOps jal_pci_regs_ops = {
    .read = jal_pci_regs_read,
    .write = jal_pci_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    /* BAR0 is 32-bit only: anything else is refused by the memory core (and logged as a
     * guest error) before it reaches us. */
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

static uint64_t jal_pci_doorbell_read(void *opaque, hwaddr addr, unsigned size)
{
    return 0; /* doorbells are write-only */
}

static void jal_pci_doorbell_write(void *opaque, hwaddr addr, uint64_t val,
                                   unsigned size)
{
    if (size != 8 || (addr % JAL_DOORBELL_STRIDE) != 0) {
        qemu_log_mask(
            LOG_GUEST_ERROR,
            "jal-pci: doorbell write 0x%" HWADDR_PRIx
            "/%u ignored: a doorbell is an 8-byte write at a page start\n",
            addr, size);
        return;
    }
    jal_pci_reg_write(opaque, JAL_BAR_DOORBELL, addr, val, size);
}

static const MemoryRegionOps jal_pci_doorbell_ops = {
    .read = jal_pci_doorbell_read,
    .write = jal_pci_doorbell_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

/* ---- interrupts ---------------------------------------------------------------------- */

static void jal_pci_irq_handler(void *opaque)
{
    JalPciIrq *irq = opaque;
    PCIDevice *pdev = PCI_DEVICE(irq->s);

    if (!event_notifier_test_and_clear(&irq->e)) {
        return;
    }
    trace_jal_pci_irq(irq->vector);
    if (msix_enabled(pdev)) {
        msix_notify(pdev, irq->vector); /* masked vectors become pending bits */
    }
}

static int jal_pci_set_irq(JalPciState *s, unsigned v)
{
    struct jal_msg_set_irq m = { .hdr.type = JAL_MSG_SET_IRQ, .vector = v };

    return jal_pci_call(s, &m.hdr, sizeof(m),
                        event_notifier_get_fd(&s->irq[v].e), NULL, NULL, 0);
}

static int jal_pci_bind_irqs(JalPciState *s, Error **errp)
{
    unsigned v;

    for (v = 0; v < JAL_MSIX_VECTORS; v++) {
        JalPciIrq *irq = &s->irq[v];
        int ret;

        irq->s = s;
        irq->vector = v;
        ret = event_notifier_init(&irq->e, 0);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "jal-pci: eventfd for vector %u", v);
            return -1;
        }
        irq->initialised = true;
        ret = jal_pci_set_irq(s, v);
        if (ret != JAL_STATUS_OK) {
            error_setg(errp, "jal-pci: SET_IRQ vector %u failed: %d", v, ret);
            return -1;
        }
        qemu_set_fd_handler(event_notifier_get_fd(&irq->e), jal_pci_irq_handler,
                            NULL, irq);
        msix_vector_use(PCI_DEVICE(s), v);
    }
    return 0;
}

/* ---- lifecycle ----------------------------------------------------------------------- */

/*
 * Device reset (machine reset, guest reboot, FLR): the function is detached from the chip
 * and a fresh one attached, as a reset function would come back on real hardware. The
 * emulator's firmware then reclaims what the old function owned (contexts, memory,
 * queues) and the new one starts with its admin queue disabled. Guest memory (RAM sections
 * or IOMMU mappings) and the MSI-X eventfds are given to the new function again. A function
 * the guest never wrote to is kept (the reset at machine start needs no new function).
 */
static void jal_pci_reset(DeviceState *dev)
{
    JalPciState *s = JAL_PCI(dev);
    Error *err = NULL;
    unsigned i;
    int ret;

    if (!s->used) {
        return;
    }
    if (s->sock >= 0) {
        close(s->sock);
        s->sock = -1;
    }
    if (jal_pci_connect(s, &err) < 0) {
        error_report_err(err);
        return; /* reads return all ones, like a function that did not come back */
    }
    s->used = false;
    for (i = 0; i < s->nregions; i++) {
        struct jal_msg_mem_map m = { .hdr.type = JAL_MSG_MEM_MAP };

        m.bus_addr = s->regions[i].bus_addr;
        m.size = s->regions[i].size;
        m.fd_offset = s->regions[i].fd_offset;
        ret =
            jal_pci_call(s, &m.hdr, sizeof(m), s->regions[i].fd, NULL, NULL, 0);
        trace_jal_pci_mem_map(m.bus_addr, m.size, m.fd_offset, ret);
        if (ret != JAL_STATUS_OK) {
            warn_report("jal-pci: MEM_MAP 0x%" PRIx64 "+0x%" PRIx64
                        " after reset failed: %d",
                        m.bus_addr, m.size, ret);
        }
    }
    g_tree_foreach(s->iova, jal_pci_iova_replay, s);
    for (i = 0; i < JAL_MSIX_VECTORS; i++) {
        if (s->irq[i].initialised &&
            (ret = jal_pci_set_irq(s, i)) != JAL_STATUS_OK) {
            warn_report("jal-pci: SET_IRQ vector %u after reset failed: %d", i,
                        ret);
        }
    }
    trace_jal_pci_reset(s->function);
}

static void jal_pci_config_write(PCIDevice *pdev, uint32_t addr, uint32_t val,
                                 int len)
{
    pci_default_write_config(pdev, addr, val, len);
    if (pci_is_express(pdev)) {
        pcie_cap_flr_write_config(pdev, addr, val,
                                  len); /* an FLR calls jal_pci_reset */
    }
}

static void jal_pci_teardown(JalPciState *s)
{
    unsigned v;

    if (s->listener_registered) {
        /* region_del for each section */
        memory_listener_unregister(&s->listener);
        s->listener_registered = false;
    }
    if (s->iova) {
        g_tree_destroy(s->iova);
        s->iova = NULL;
    }
    for (v = 0; v < JAL_MSIX_VECTORS; v++) {
        if (s->irq[v].initialised) {
            qemu_set_fd_handler(event_notifier_get_fd(&s->irq[v].e), NULL, NULL,
                                NULL);
            event_notifier_cleanup(&s->irq[v].e);
            s->irq[v].initialised = false;
        }
    }
    if (s->sock >= 0) {
        close(s->sock); /* the emulator detaches the function */
        s->sock = -1;
    }
}

/* A vIOMMU created after the device would not be in its path: refuse to run so. */
static void jal_pci_machine_done(Notifier *n, void *unused)
{
    JalPciState *s = container_of(n, JalPciState, machine_done);

    if (pci_device_iommu_address_space(PCI_DEVICE(s)) != s->dma_as) {
        error_report("jal-pci: a vIOMMU was created after the device, so the "
                     "device would bypass it; put -device intel-iommu before "
                     "-device jal-pci");
        exit(1);
    }
    if (s->dma_as == &address_space_memory) {
        warn_report("jal-pci: no vIOMMU: the device (and whoever in the guest "
                    "can submit its packets) reaches all guest memory; "
                    "-device intel-iommu,intremap=off,caching-mode=on before "
                    "it confines it to what the guest maps for it");
    }
}

static void jal_pci_realize(PCIDevice *pdev, Error **errp)
{
    JalPciState *s = JAL_PCI(pdev);

    s->sock = -1;
    qemu_mutex_init(&s->lock);
    s->iova = g_tree_new_full(jal_pci_iova_cmp, NULL, g_free, NULL);
    /* intel-iommu must be created before the device for this to be its address space */
    s->dma_as = pci_device_iommu_address_space(pdev);
    if (jal_pci_check_iommu(s, errp) < 0) {
        goto fail;
    }
    if (jal_pci_connect(s, errp) < 0) {
        goto fail;
    }

    pdev->config[PCI_INTERRUPT_PIN] = 0; /* MSI-X only */

    memory_region_init_io(&s->regs, OBJECT(s), &jal_pci_regs_ops, s, "jal-regs",
                          JAL_BAR_REGS_SIZE);
    memory_region_init_io(&s->doorbell, OBJECT(s), &jal_pci_doorbell_ops, s,
                          "jal-doorbells", JAL_BAR_DOORBELL_SIZE);
    memory_region_init(&s->msix, OBJECT(s), "jal-msix", JAL_BAR_MSIX_SIZE);
    pci_register_bar(
        pdev, JAL_BAR_REGS,
        PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64, &s->regs);
    pci_register_bar(pdev, JAL_BAR_DOORBELL,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                         PCI_BASE_ADDRESS_MEM_TYPE_64,
                     &s->doorbell);
    if (msix_init(pdev, JAL_MSIX_VECTORS, &s->msix, JAL_BAR_MSIX, 0, &s->msix,
                  JAL_BAR_MSIX, JAL_BAR_MSIX_SIZE / 2, 0, errp) < 0) {
        goto fail;
    }
    pci_register_bar(
        pdev, JAL_BAR_MSIX,
        PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64, &s->msix);
    if (pci_is_express(pdev)) {
        if (pcie_endpoint_cap_init(pdev, 0) < 0) {
            error_setg(errp, "jal-pci: no room for the PCIe capability");
            goto fail_msix;
        }
        pcie_cap_flr_init(
            pdev); /* the guest can reset the function (pci_reset_function) */
    }
    if (jal_pci_bind_irqs(s, errp) < 0) {
        goto fail_msix;
    }

    /* Replays every current section (RAM, or an enabled IOMMU) through region_add. */
    s->listener = (MemoryListener){
        .name = "jal-pci",
        .region_add = jal_pci_region_add,
        .region_del = jal_pci_region_del,
        .priority = 10,
    };
    memory_listener_register(&s->listener, s->dma_as);
    s->listener_registered = true;
    if ((s->nregions == 0 && !s->iommu_mr) || s->unshared_ram) {
        error_setg(
            errp,
            "jal-pci: guest RAM must be a shared memory backend so jal-emu can "
            "DMA into it: -object "
            "memory-backend-memfd,id=mem,size=...,share=on "
            "-machine memory-backend=mem");
        goto fail_msix;
    }
    s->machine_done.notify = jal_pci_machine_done;
    qemu_add_machine_init_done_notifier(&s->machine_done);
    return;

fail_msix:
    msix_uninit(pdev, &s->msix, &s->msix);
fail:
    jal_pci_teardown(s);
}

static DeviceRealize jal_pci_parent_dc_realize;

/*
 * The device implements both the PCIe and the conventional interface, and QEMU leaves such
 * a hybrid to decide: on a PCIe bus (q35) it is a PCIe endpoint, which is what carries the
 * FLR capability. This must be known before PCI realize sizes config space.
 */
static void jal_pci_dc_realize(DeviceState *qdev, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(qdev);

    if (pci_bus_is_express(pci_get_bus(pdev))) {
        pdev->cap_present |= QEMU_PCI_CAP_EXPRESS;
    }
    jal_pci_parent_dc_realize(qdev, errp);
}

static void jal_pci_exit(PCIDevice *pdev)
{
    JalPciState *s = JAL_PCI(pdev);

    qemu_remove_machine_init_done_notifier(&s->machine_done);
    jal_pci_teardown(s);
    msix_uninit(pdev, &s->msix, &s->msix);
    qemu_mutex_destroy(&s->lock);
}

static Property jal_pci_properties[] = {
    DEFINE_PROP_STRING("socket", JalPciState, socket_path),
    DEFINE_PROP_END_OF_LIST(),
};

/* The chip's state is in jal-emu, which QEMU cannot migrate. */
static const VMStateDescription jal_pci_vmstate = {
    .name = TYPE_JAL_PCI,
    .unmigratable = 1,
};

static void jal_pci_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = jal_pci_realize;
    k->exit = jal_pci_exit;
    k->config_write = jal_pci_config_write;
    k->vendor_id = JAL_PCI_VENDOR_ID;
    k->device_id = JAL_PCI_DEVICE_ID;
    k->revision = JAL_PCI_REVISION;
    k->class_id = JAL_PCI_CLASS >> 8; /* base class and subclass; prog-if 0 */
    dc->desc = "Jalapeño accelerator (served by jal-emu)";
    dc->vmsd = &jal_pci_vmstate;
    dc->reset = jal_pci_reset;
    device_class_set_parent_realize(dc, jal_pci_dc_realize,
                                    &jal_pci_parent_dc_realize);
    device_class_set_props(dc, jal_pci_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo jal_pci_info = {
    .name = TYPE_JAL_PCI,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(JalPciState),
    .class_init = jal_pci_class_init,
    .interfaces =
        (InterfaceInfo[]){
            { INTERFACE_PCIE_DEVICE },
            { INTERFACE_CONVENTIONAL_PCI_DEVICE },
            {},
        },
};

static void jal_pci_register_types(void)
{
    type_register_static(&jal_pci_info);
}

type_init(jal_pci_register_types)
