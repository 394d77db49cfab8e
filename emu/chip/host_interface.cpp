#include "emu/chip/host_interface.hpp"

#include "emu/chip/irq_eventfd.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/status.h"

#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

namespace jal::emu {

namespace {
constexpr std::uint32_t hostif(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_HOSTIF;
}
constexpr std::uint32_t kFnBankBase = 0x100, kFnBankStride = 0x40;
}  // namespace

HostInterface::HostInterface(std::uint32_t chip_index, HostEvents& events)
    : chip_index_(chip_index), events_(events)
{}

HostInterface::~HostInterface()
{
    for (auto& f : fns_) close_irqs_locked(f);
}

void HostInterface::close_irqs_locked(Function& f)
{
    for (auto& irq : f.irq) irq.reset();
}

void HostInterface::bump_locked(int fn)
{
    ++fns_[fn].generation;
    func_events_ |= 1u << fn;
}

int HostInterface::attach()
{
    std::lock_guard lock(mutex_);
    for (int fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn) {
        Function& f = fns_[fn];
        if (f.present) continue;
        f.present = true;
        f.sq_lo = f.sq_hi = f.cq_lo = f.cq_hi = f.qsize = f.ctrl = f.admin_status = f.sq_tail =
            f.cq_head = 0;
        f.intr_mask = 0;
        f.contexts = 0;
        ++f.attaches;
        bump_locked(fn);
        events_.raise(JAL_EV_FUNC | JAL_EV_HOST);
        return fn;
    }
    return -1;
}

void HostInterface::detach(int fn)
{
    if (on_detach) on_detach(fn);
    {
        std::lock_guard lock(mutex_);
        Function& f = fns_[fn];
        f.present = false;
        f.doorbells.reset();
        f.ctrl = f.admin_status = f.contexts = f.pid = 0;
        f.name.clear();
        ++f.attaches;
        close_irqs_locked(f);
        bump_locked(fn);
        // Waits for an in-flight firmware DMA to finish (it holds the map's shared lock).
        f.memory->clear();
    }
    events_.raise(JAL_EV_FUNC | JAL_EV_HOST);
}

std::uint32_t HostInterface::status() const
{
    std::lock_guard lock(mutex_);
    return status_;
}

std::uint64_t HostInterface::host_read(int fn, std::uint32_t bar, std::uint32_t offset,
                                       std::uint32_t width)
{
    if (bar != JAL_BAR_REGS || width != 4) return 0;  // doorbell and MSI-X BARs read as zero
    std::lock_guard lock(mutex_);
    const Function& f = fns_[fn];
    switch (offset) {
    case JAL_REG_ID:
        return JAL_ID_MAGIC;
    case JAL_REG_VERSION:
        return version_;
    case JAL_REG_CAP:
        return cap_;
    case JAL_REG_CHIP_INDEX:
        return chip_index_;
    case JAL_REG_FW_VERSION:
        return fw_version_;
    case JAL_REG_STATUS:
        return status_;
    case JAL_REG_BOOT_STATUS:
        return boot_status_;
    case JAL_REG_POST_CODE:
        return post_code_;
    case JAL_REG_FAULT:
        return fault_;
    case JAL_REG_RESET_GENERATION:
        return reset_generation_;
    case JAL_REG_ADMIN_SQ_BASE_LO:
        return f.sq_lo;
    case JAL_REG_ADMIN_SQ_BASE_HI:
        return f.sq_hi;
    case JAL_REG_ADMIN_CQ_BASE_LO:
        return f.cq_lo;
    case JAL_REG_ADMIN_CQ_BASE_HI:
        return f.cq_hi;
    case JAL_REG_ADMIN_QSIZE:
        return f.qsize;
    case JAL_REG_ADMIN_CTRL:
        return f.ctrl;
    case JAL_REG_ADMIN_STATUS:
        return f.admin_status;
    case JAL_REG_ADMIN_PROGRESS:
        return admin_progress_;
    case JAL_REG_ADMIN_SQ_TAIL:
        return f.sq_tail;
    case JAL_REG_ADMIN_CQ_HEAD:
        return f.cq_head;
    case JAL_REG_INTR_MASK:
        return f.intr_mask;
    default:
        if (offset >= JAL_REG_SCRATCH0 && offset < JAL_REG_SCRATCH0 + 4 * JAL_REG_SCRATCH_COUNT &&
            offset % 4 == 0)
            return scratch_[(offset - JAL_REG_SCRATCH0) / 4];
        return 0;
    }
}

std::uint32_t HostInterface::host_write(int fn, std::uint32_t bar, std::uint32_t offset,
                                        std::uint32_t width, std::uint64_t value)
{
    if (width != 4 && width != 8) return JAL_STATUS_INVALID_FIELD;
    if (offset % width) return JAL_STATUS_INVALID_FIELD;
    if (bar == JAL_BAR_DOORBELL && width == 8 &&
        offset % JAL_DOORBELL_STRIDE == JAL_DOORBELL_WRITE_INDEX &&
        offset < JAL_BAR_DOORBELL_SIZE) {
        // The MMIO doorbell (QEMU device, kernel driver): the same page the direct
        // transport maps, plus the wakeup a direct client sends itself.
        if (auto db = doorbells(fn)) db->ring(offset / JAL_DOORBELL_STRIDE, value);
        return JAL_STATUS_OK;
    }
    if (bar != JAL_BAR_REGS) {
        log(LogLevel::debug, "chip{}: fn{} write to BAR{} +{:#x} ignored", chip_index_, fn, bar,
            offset);
        return JAL_STATUS_OK;
    }
    if (width != 4) return JAL_STATUS_INVALID_FIELD;
    const auto v = static_cast<std::uint32_t>(value);
    bool notify = true;
    {
        std::lock_guard lock(mutex_);
        Function& f = fns_[fn];
        switch (offset) {
        case JAL_REG_ADMIN_SQ_BASE_LO:
            f.sq_lo = v;
            break;
        case JAL_REG_ADMIN_SQ_BASE_HI:
            f.sq_hi = v;
            break;
        case JAL_REG_ADMIN_CQ_BASE_LO:
            f.cq_lo = v;
            break;
        case JAL_REG_ADMIN_CQ_BASE_HI:
            f.cq_hi = v;
            break;
        case JAL_REG_ADMIN_QSIZE:
            f.qsize = v;
            break;
        case JAL_REG_ADMIN_CTRL:
            f.ctrl = v;
            // Disabling resets the queue pair, doorbells included (as NVMe's CC.EN = 0).
            if (!(v & JAL_ADMIN_CTRL_ENABLE)) f.admin_status = f.sq_tail = f.cq_head = 0;
            ++f.generation;
            break;
        case JAL_REG_ADMIN_SQ_TAIL:
            f.sq_tail = v;
            break;
        case JAL_REG_ADMIN_CQ_HEAD:
            f.cq_head = v;
            break;
        case JAL_REG_INTR_MASK:
            f.intr_mask = v;
            notify = false;
            break;
        case JAL_REG_RESET:
            notify = false;
            if (v == JAL_RESET_MAGIC) {
                // The previous boot's progress must not read as the new boot's.
                status_ = JAL_REG_STATUS_RESETTING;
                boot_status_ = post_code_ = fault_ = 0;
                events_.request_reset(JAL_RESET_CAUSE_HOST);
            }
            break;
        default:
            notify = false;
            if (offset >= JAL_REG_SCRATCH0 && offset < JAL_REG_SCRATCH0 + 4 * JAL_REG_SCRATCH_COUNT)
                scratch_[(offset - JAL_REG_SCRATCH0) / 4] = v;
            else
                log(LogLevel::debug,
                    "chip{}: fn{} write {:#x} to read-only or unknown register {:#x} ignored",
                    chip_index_, fn, v, offset);
        }
        if (notify) func_events_ |= 1u << fn;
    }
    if (notify) events_.raise(JAL_EV_HOST);
    return JAL_STATUS_OK;
}

std::uint32_t HostInterface::set_irq(int fn, std::uint32_t vector, int fd)
{
    if (vector >= JAL_MSIX_VECTORS) {
        if (fd >= 0) close(fd);
        return JAL_STATUS_OUT_OF_RANGE;
    }
    std::shared_ptr<IrqEventfd> irq;
    if (fd >= 0) {
        if (!IrqEventfd::accept(fd)) {
            close(fd);
            log(LogLevel::warn, "chip{}: fn{}: SET_IRQ vector {} refused: not an eventfd",
                chip_index_, fn, vector);
            return JAL_STATUS_INVALID_FIELD;
        }
        irq = std::make_shared<IrqEventfd>(fd);
    }
    std::shared_ptr<IrqEventfd> old;  // closed outside the lock
    std::lock_guard lock(mutex_);
    old = std::exchange(fns_[fn].irq[vector], std::move(irq));
    return JAL_STATUS_OK;
}

std::shared_ptr<Doorbells> HostInterface::doorbells(int fn)
{
    if (fn < 0 || fn >= JAL_MGMT_MAX_FUNCS) return nullptr;
    std::lock_guard lock(mutex_);
    Function& f = fns_[fn];
    if (!f.present) return nullptr;
    if (!f.doorbells) {
        try {
            f.doorbells = std::make_shared<Doorbells>();
        } catch (const std::exception& e) {
            log(LogLevel::error, "chip{}: fn{}: cannot create doorbells: {}", chip_index_, fn,
                e.what());
            return nullptr;
        }
    }
    return f.doorbells;
}

bool HostInterface::present(int fn) const
{
    if (fn < 0 || fn >= JAL_MGMT_MAX_FUNCS) return false;
    std::lock_guard lock(mutex_);
    return fns_[fn].present;
}

void HostInterface::set_client(int fn, std::uint32_t pid, std::string name)
{
    std::lock_guard lock(mutex_);
    fns_[fn].pid = pid;
    fns_[fn].name = std::move(name);
}

HostInterface::ClientRecord HostInterface::client(int fn) const
{
    ClientRecord out;
    if (fn < 0 || fn >= JAL_MGMT_MAX_FUNCS) return out;
    std::lock_guard lock(mutex_);
    const Function& f = fns_[fn];
    if (!f.present) return out;
    out.present = true;
    out.pid = f.pid;
    out.contexts = f.contexts;
    out.name = f.name;
    return out;
}

std::uint32_t HostInterface::fw_read(std::uint32_t offset)
{
    std::lock_guard lock(mutex_);
    if (offset >= kFnBankBase && offset < kFnBankBase + kFnBankStride * JAL_MGMT_MAX_FUNCS) {
        const Function& f = fns_[(offset - kFnBankBase) / kFnBankStride];
        switch ((offset - kFnBankBase) % kFnBankStride) {
        case JAL_FN_SQ_BASE_LO:
            return f.sq_lo;
        case JAL_FN_SQ_BASE_HI:
            return f.sq_hi;
        case JAL_FN_CQ_BASE_LO:
            return f.cq_lo;
        case JAL_FN_CQ_BASE_HI:
            return f.cq_hi;
        case JAL_FN_QSIZE:
            return f.qsize;
        case JAL_FN_CTRL:
            return f.ctrl;
        case JAL_FN_ADMIN_STATUS:
            return f.admin_status;
        case JAL_FN_SQ_TAIL:
            return f.sq_tail;
        case JAL_FN_CQ_HEAD:
            return f.cq_head;
        case JAL_FN_GENERATION:
            return f.generation;
        case JAL_FN_ATTACHES:
            return f.attaches;
        case JAL_FN_CONTEXTS:
            return f.contexts;
        default:
            return 0;
        }
    }
    switch (offset) {
    case hostif(JAL_HOSTIF_STATUS):
        return status_;
    case hostif(JAL_HOSTIF_BOOT_STATUS):
        return boot_status_;
    case hostif(JAL_HOSTIF_POST_CODE):
        return post_code_;
    case hostif(JAL_HOSTIF_FAULT):
        return fault_;
    case hostif(JAL_HOSTIF_FW_VERSION):
        return fw_version_;
    case hostif(JAL_HOSTIF_VERSION):
        return version_;
    case hostif(JAL_HOSTIF_CAP):
        return cap_;
    case hostif(JAL_HOSTIF_FUNC_PRESENT): {
        std::uint32_t m = 0;
        for (int fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn)
            if (fns_[fn].present) m |= 1u << fn;
        return m;
    }
    case hostif(JAL_HOSTIF_FUNC_EVENTS):
        return func_events_;
    case hostif(JAL_HOSTIF_FN_LIMITS):
        return fn_limits_;
    case hostif(JAL_HOSTIF_FN_MEM_LIMIT):
        return fn_mem_limit_;
    default:
        return 0;
    }
}

void HostInterface::fw_write(std::uint32_t offset, std::uint32_t value)
{
    if (offset == hostif(JAL_HOSTIF_MSI)) {
        raise_msi(value >> 16, value & 0xffff);
        return;
    }
    std::function<void(std::uint32_t)> post_hook;
    {
        std::lock_guard lock(mutex_);
        if (offset >= kFnBankBase && offset < kFnBankBase + kFnBankStride * JAL_MGMT_MAX_FUNCS) {
            Function& f = fns_[(offset - kFnBankBase) / kFnBankStride];
            const std::uint32_t reg = (offset - kFnBankBase) % kFnBankStride;
            if (reg == JAL_FN_ADMIN_STATUS && f.present) f.admin_status = value;
            if (reg == JAL_FN_CONTEXTS && f.present) f.contexts = value;
            return;
        }
        switch (offset) {
        case hostif(JAL_HOSTIF_STATUS):
            status_ = value;
            break;
        case hostif(JAL_HOSTIF_BOOT_STATUS):
            boot_status_ = value;
            break;
        case hostif(JAL_HOSTIF_POST_CODE):
            post_code_ = value;
            post_hook = on_post_code;
            break;
        case hostif(JAL_HOSTIF_FAULT):
            fault_ = value;
            break;
        case hostif(JAL_HOSTIF_FW_VERSION):
            fw_version_ = value;
            break;
        case hostif(JAL_HOSTIF_VERSION):
            version_ = value;
            break;
        case hostif(JAL_HOSTIF_CAP):
            cap_ = value;
            break;
        case hostif(JAL_HOSTIF_FUNC_EVENTS):
            func_events_ &= ~value;
            break;
        case hostif(JAL_HOSTIF_ADMIN_PROGRESS):
            ++admin_progress_;
            break;
        default:
            break;
        }
    }
    if (post_hook) post_hook(value);
}

std::uint32_t HostInterface::dma(std::uint32_t fn, std::uint64_t host_addr, void* local,
                                 std::uint32_t len, bool to_host)
{
    if (fn >= JAL_MGMT_MAX_FUNCS) return JAL_STATUS_NO_DEVICE;
    HostMemory* mem;
    AdminRing ring = AdminRing::none;
    {
        std::lock_guard lock(mutex_);
        if (!fns_[fn].present) return JAL_STATUS_NO_DEVICE;
        mem = fns_[fn].memory.get();
        if (on_admin_fetch || on_admin_complete)
            ring = admin_ring_locked(fns_[fn], host_addr, len, to_host);
    }
    // HostMemory has its own lock; a detach in between empties it and the copy faults.
    const std::uint32_t status =
        to_host ? mem->write(host_addr, local, len) : mem->read(host_addr, local, len);
    if (status == JAL_STATUS_OK && ring != AdminRing::none)
        observe_admin(fn, *mem, ring, host_addr, local);
    return status;
}

// The rings as the host last programmed them (the firmware reads the same registers when
// it enables the queue): an SQ entry is fetched whole, a CQ entry's phase flag is written
// alone after its body (firmware/host/admin_queues.cpp).
HostInterface::AdminRing HostInterface::admin_ring_locked(const Function& f,
                                                          std::uint64_t host_addr,
                                                          std::uint32_t len, bool to_host) const
{
    if (!(f.ctrl & JAL_ADMIN_CTRL_ENABLE)) return AdminRing::none;
    const std::uint64_t sq = std::uint64_t{f.sq_hi} << 32 | f.sq_lo;
    const std::uint64_t cq = std::uint64_t{f.cq_hi} << 32 | f.cq_lo;
    const std::uint64_t sq_bytes = std::uint64_t{f.qsize & 0xffff} * sizeof(jal_admin_sqe);
    const std::uint64_t cq_bytes = std::uint64_t{f.qsize >> 16} * sizeof(jal_admin_cqe);
    constexpr std::uint32_t kPhase = offsetof(jal_admin_cqe, flags);
    if (!to_host && len == sizeof(jal_admin_sqe) && host_addr >= sq && host_addr - sq < sq_bytes &&
        (host_addr - sq) % sizeof(jal_admin_sqe) == 0)
        return AdminRing::sq_entry;
    if (to_host && len == sizeof(std::uint16_t) && host_addr >= cq + kPhase &&
        host_addr - cq < cq_bytes && (host_addr - cq) % sizeof(jal_admin_cqe) == kPhase)
        return AdminRing::cq_phase;
    return AdminRing::none;
}

void HostInterface::observe_admin(std::uint32_t fn, HostMemory& mem, AdminRing ring,
                                  std::uint64_t host_addr, const void* local) const
{
    if (ring == AdminRing::sq_entry) {
        jal_admin_sqe sqe;
        std::memcpy(&sqe, local, sizeof sqe);
        if (on_admin_fetch) on_admin_fetch(fn, sqe);
        return;
    }
    // The entry as the host sees it: read back whole once its phase is out.
    jal_admin_cqe cqe;
    const std::uint64_t entry = host_addr - offsetof(jal_admin_cqe, flags);
    if (on_admin_complete && mem.read(entry, &cqe, sizeof cqe) == JAL_STATUS_OK)
        on_admin_complete(fn, cqe);
}

void HostInterface::raise_msi(std::uint32_t fn, std::uint32_t vector)
{
    if (fn >= JAL_MGMT_MAX_FUNCS || vector >= JAL_MSIX_VECTORS) return;
    std::shared_ptr<IrqEventfd> irq;
    {
        std::lock_guard lock(mutex_);
        const Function& f = fns_[fn];
        if (!f.present || (f.intr_mask & (1u << vector))) return;
        irq = f.irq[vector];
    }
    // Outside the lock, and bounded: a client's eventfd must not stall the chip.
    if (irq) irq->signal();
}

// Both kinds (chip_reset or the watchdog's) reboot the management core, so both are the same
// here; the chip's models tell them apart (Chip::apply_reset).
void HostInterface::reset(bool /*chip_reset*/)
{
    std::vector<std::shared_ptr<IrqEventfd>> wake;
    {
        std::lock_guard lock(mutex_);
        ++reset_generation_;
        for (int fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn) {
            Function& f = fns_[fn];
            f.ctrl = f.admin_status = f.sq_tail = f.cq_head = 0;
            f.contexts = 0;
            if (!f.present) continue;
            bump_locked(fn);
            for (auto& irq : f.irq)
                if (irq) wake.push_back(irq);
        }
        // Until the rebooted firmware writes BOOTING the status says RESETTING, also after
        // a watchdog reset: a host waiting for the chip to come back would take a READY
        // left from before the reset for it.
        status_ = JAL_REG_STATUS_RESETTING;
        boot_status_ = post_code_ = fault_ = 0;
    }
    // Sleeping waiters (admin completions, queue signals) wake and read the new generation
    // instead of sleeping out their timeouts for completions that will never come.
    for (auto& irq : wake) irq->signal();
}

}  // namespace jal::emu
