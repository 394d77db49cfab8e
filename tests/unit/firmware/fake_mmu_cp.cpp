#include "fake_mmu_cp.hpp"

#include "jal/hw/queue.h"
#include "jal/hw/status.h"

namespace fake {

namespace {
bool in_block(std::uint32_t addr, std::uint32_t block)
{
    return addr >= JAL_MGMT_REG(block, 0) && addr < JAL_MGMT_REG(block, 0x1000);
}
}  // namespace

bool FakeMmu::read(std::uint32_t addr, std::uint32_t& v) const
{
    switch (addr) {
    case JAL_MMU_CTX:
        v = ctx;
        return true;
    case JAL_MMU_VA_LO:
        v = va_lo;
        return true;
    case JAL_MMU_VA_HI:
        v = va_hi;
        return true;
    case JAL_MMU_PA_LO:
        v = pa_lo;
        return true;
    case JAL_MMU_PA_HI:
        v = pa_hi;
        return true;
    case JAL_MMU_FLAGS:
        v = flags;
        return true;
    case JAL_MMU_STATUS:
        v = status;
        return true;
    case JAL_MMU_CHIP:
        v = chip;
        return true;
    case JAL_MMU_SLOT:
        v = slot;
        return true;
    case JAL_MMU_KEY_LO:
        v = key_lo;
        return true;
    case JAL_MMU_KEY_HI:
        v = key_hi;
        return true;
    default:
        v = 0;
        return true;
    }
}

void FakeMmu::write(std::uint32_t addr, std::uint32_t v)
{
    switch (addr) {
    case JAL_MMU_CTX:
        ctx = v;
        return;
    case JAL_MMU_VA_LO:
        va_lo = v;
        return;
    case JAL_MMU_VA_HI:
        va_hi = v;
        return;
    case JAL_MMU_PA_LO:
        pa_lo = v;
        return;
    case JAL_MMU_PA_HI:
        pa_hi = v;
        return;
    case JAL_MMU_FLAGS:
        flags = v;
        return;
    case JAL_MMU_CHIP:
        chip = v;
        return;
    case JAL_MMU_SLOT:
        slot = v;
        return;
    case JAL_MMU_KEY_LO:
        key_lo = v;
        return;
    case JAL_MMU_KEY_HI:
        key_hi = v;
        return;
    case JAL_MMU_CMD:
        commands.push_back(v);
        execute(v);
        return;
    default:
        return;
    }
}

bool FakeMmu::drop(std::pair<std::uint32_t, std::uint64_t> key)
{
    auto it = maps.find(key);
    if (it == maps.end()) return false;
    for (std::uint64_t r : it->second)
        if (--mapped_[r] == 0) mapped_.erase(r);
    maps.erase(it);
    return true;
}

bool FakeMmu::execute_peer(std::uint32_t v, std::pair<std::uint32_t, std::uint64_t> key)
{
    switch (v) {
    case JAL_MMU_CMD_EXPORT:
        exported[slot] = flags;
        key_lo = slot + 1;
        key_hi = 0;
        chip = 7;
        return true;
    case JAL_MMU_CMD_REVOKE:
        revoked.push_back(slot);
        exported.erase(slot);
        return true;
    case JAL_MMU_CMD_MAP_REMOTE: {
        if (key_lo != slot + 1 || key_hi != 0 || !exported.contains(slot)) {
            status = JAL_STATUS_PERMISSION;
            return true;
        }
        const std::uint64_t marker = std::uint64_t{chip} << 48 | std::uint64_t{slot} << 20 | flags;
        drop(key);
        maps[key] = {marker};
        ++mapped_[marker];
        return true;
    }
    default:
        return false;
    }
}

void FakeMmu::execute(std::uint32_t v)
{
    const std::uint64_t va = std::uint64_t{va_hi} << 32 | va_lo;
    const std::uint64_t pa = std::uint64_t{pa_hi} << 32 | pa_lo;
    const auto key = std::make_pair(ctx, va / JAL_PAGE_SIZE);
    status = JAL_STATUS_OK;
    switch (v) {
    case JAL_MMU_CMD_MAP:
        if (ctx == 0 || ctx >= JAL_MAX_CONTEXTS || va % JAL_PAGE_SIZE || pa % JAL_PAGE_SIZE ||
            pa >= JAL_HBM_TOTAL_BYTES) {
            status = JAL_STATUS_INVALID_FIELD;
            return;
        }
        if (fail_map_after == 0) {
            fail_map_after = -1;
            status = JAL_STATUS_INTERNAL;
            return;
        }
        if (fail_map_after > 0) --fail_map_after;
        ++maps_done;
        if (flags & JAL_MMU_F_ADD_REPLICA) {
            auto it = maps.find(key);
            if (it == maps.end()) {
                status = JAL_STATUS_PAGE_FAULT;
                return;
            }
            it->second.push_back(pa);
        } else {
            drop(key);
            maps[key] = {pa};
        }
        ++mapped_[pa];
        return;
    case JAL_MMU_CMD_UNMAP:
        ++unmaps;
        if (!drop(key)) status = JAL_STATUS_PAGE_FAULT;
        return;
    case JAL_MMU_CMD_LOOKUP: {
        ++lookups;
        auto it = maps.find(key);
        if (it == maps.end() || flags >= it->second.size()) {
            status = JAL_STATUS_PAGE_FAULT;
            return;
        }
        pa_lo = static_cast<std::uint32_t>(it->second[flags]);
        pa_hi = static_cast<std::uint32_t>(it->second[flags] >> 32);
        return;
    }
    case JAL_MMU_CMD_SCRUB:
        if (pa % JAL_PAGE_SIZE || pa >= JAL_HBM_TOTAL_BYTES) {
            status = JAL_STATUS_INVALID_FIELD;
            return;
        }
        if (fail_scrub) {
            status = JAL_STATUS_INTERNAL;
            return;
        }
        scrubbed.push_back(pa);
        if (auto it = mapped_.find(pa); it != mapped_.end()) scrubbed_while_mapped += it->second;
        return;
    case JAL_MMU_CMD_FLUSH_CTX:
        flushes.push_back(ctx);
        for (auto it = maps.lower_bound({ctx, 0}); it != maps.end() && it->first.first == ctx;)
            drop((it++)->first);
        return;
    default:
        if (!execute_peer(v, key)) status = JAL_STATUS_INVALID_OPCODE;
        return;
    }
}

std::size_t FakeMmu::mapped_pages(std::uint32_t context) const
{
    std::size_t n = 0;
    for (auto& [k, v] : maps) n += k.first == context;
    return n;
}

const std::vector<std::uint64_t>* FakeMmu::replicas(std::uint32_t context, std::uint64_t va) const
{
    auto it = maps.find(std::make_pair(context, va / JAL_PAGE_SIZE));
    return it == maps.end() ? nullptr : &it->second;
}

bool FakeCp::read(std::uint32_t addr, std::uint32_t& v)
{
    if (addr == JAL_CP_QSEL) {
        v = qsel;
        return true;
    }
    if (addr == JAL_CP_WIN_STATUS) {
        v = window_status;
        return true;
    }
    const FakeCpQueue& s = q[qsel % JAL_MAX_USER_QUEUES];
    auto lo = [&](std::uint64_t x) {
        latch_hi = static_cast<std::uint32_t>(x >> 32);
        return static_cast<std::uint32_t>(x);
    };
    switch (addr) {
    case JAL_CP_Q_CTX:
        v = s.ctx;
        break;
    case JAL_CP_Q_FUNC:
        v = s.func;
        break;
    case JAL_CP_Q_RING_LO:
        v = s.ring_lo;
        break;
    case JAL_CP_Q_RING_HI:
        v = s.ring_hi;
        break;
    case JAL_CP_Q_SIZE:
        v = s.size;
        break;
    case JAL_CP_Q_RPTR_LO:
        v = s.rptr_lo;
        break;
    case JAL_CP_Q_RPTR_HI:
        v = s.rptr_hi;
        break;
    case JAL_CP_Q_VECTOR:
        v = s.vector;
        break;
    case JAL_CP_Q_SPACE:
        v = s.space;
        break;
    case JAL_CP_Q_STATE:
        v = s.state;
        break;
    case JAL_CP_Q_LAST_ERROR:
        v = s.last_error;
        break;
    case JAL_CP_Q_ERRORS:
        v = s.errors;
        break;
    case JAL_CP_Q_READ_LO:
        v = lo(s.read_index);
        break;
    case JAL_CP_Q_WRITE_LO:
        v = lo(s.write_index);
        break;
    case JAL_CP_Q_ERR_INDEX_LO:
        v = lo(s.err_index);
        break;
    case JAL_CP_Q_READ_HI:
    case JAL_CP_Q_WRITE_HI:
    case JAL_CP_Q_ERR_INDEX_HI:
        v = latch_hi;
        break;
    default:
        v = 0;
        break;
    }
    return true;
}

// The WIN_* registers; false for any other address.
static bool write_window(FakeCp& cp, std::uint32_t addr, std::uint32_t v)
{
    auto set = [](std::uint64_t& r, std::uint32_t x, bool hi) {
        r = hi ? (r & 0xffffffffull) | std::uint64_t{x} << 32 : (r & ~0xffffffffull) | x;
    };
    switch (addr) {
    case JAL_CP_WIN_FUNC:
        cp.window.fn = v;
        return true;
    case JAL_CP_WIN_SPACE:
        cp.window.space = v;
        return true;
    case JAL_CP_WIN_BASE_LO:
    case JAL_CP_WIN_BASE_HI:
        set(cp.window.base, v, addr == JAL_CP_WIN_BASE_HI);
        return true;
    case JAL_CP_WIN_SIZE_LO:
    case JAL_CP_WIN_SIZE_HI:
        set(cp.window.size, v, addr == JAL_CP_WIN_SIZE_HI);
        return true;
    case JAL_CP_WIN_CMD:
        cp.window.cmd = v;
        cp.window_cmds.push_back(cp.window);
        return true;
    default:
        return false;
    }
}

void FakeCp::write(std::uint32_t addr, std::uint32_t v)
{
    if (addr == JAL_CP_QSEL) {
        qsel = v;
        return;
    }
    if (write_window(*this, addr, v)) return;
    if (qsel >= JAL_MAX_USER_QUEUES) return;
    FakeCpQueue& s = q[qsel];
    switch (addr) {
    case JAL_CP_Q_CTX:
        s.ctx = v;
        return;
    case JAL_CP_Q_FUNC:
        s.func = v;
        return;
    case JAL_CP_Q_RING_LO:
        s.ring_lo = v;
        return;
    case JAL_CP_Q_RING_HI:
        s.ring_hi = v;
        return;
    case JAL_CP_Q_SIZE:
        s.size = v;
        return;
    case JAL_CP_Q_RPTR_LO:
        s.rptr_lo = v;
        return;
    case JAL_CP_Q_RPTR_HI:
        s.rptr_hi = v;
        return;
    case JAL_CP_Q_VECTOR:
        s.vector = v;
        return;
    case JAL_CP_Q_SPACE:
        s.space = v;
        return;
    case JAL_CP_Q_CTRL:
        s.ctrl.push_back(v);
        if (v == JAL_CP_CTRL_ENABLE) s.state = JAL_QUEUE_ACTIVE;
        if (v == JAL_CP_CTRL_DISABLE) s.state = JAL_QUEUE_DISABLED;
        if (v == JAL_CP_CTRL_RESET) {
            s.state = JAL_QUEUE_ACTIVE;
            s.errors = s.last_error = 0;
            s.err_index = 0;
            s.read_index = s.write_index;
        }
        return;
    default:
        return;
    }
}

void FakeMmuCp::install(FakeBus& bus)
{
    bus.read_hook = [this](std::uint32_t addr, std::uint32_t& v) {
        if (in_block(addr, JAL_MGMT_MMU)) return mmu.read(addr, v);
        if (in_block(addr, JAL_MGMT_CP)) return cp.read(addr, v);
        return false;
    };
    bus.write_hook = [this](std::uint32_t addr, std::uint32_t v) {
        if (in_block(addr, JAL_MGMT_MMU)) mmu.write(addr, v);
        if (in_block(addr, JAL_MGMT_CP)) cp.write(addr, v);
    };
}

}  // namespace fake
