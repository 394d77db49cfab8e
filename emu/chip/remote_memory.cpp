#include "emu/chip/remote_memory.hpp"

#include "emu/chip/chip.hpp"
#include "emu/fabric/domain.hpp"

#include <cstring>
#include <stdexcept>

namespace jal::emu {

namespace {

// A chip of this process (a tray's neighbour): its HBM is right here, a copy moves the bytes.
void local_copy(Chip& target, bool write, std::uint64_t addr, std::byte* data, std::size_t size)
{
    const std::uint64_t hbm = target.hbm().size();
    if (addr > hbm || size > hbm - addr)
        throw std::runtime_error("chip " + std::to_string(target.config().domain_chip) + ": [" +
                                 std::to_string(addr) + ", +" + std::to_string(size) +
                                 ") is outside its memory");
    if (size == 0) return;
    const std::span<std::byte> there = target.hbm().range(addr, size);
    std::memcpy(write ? there.data() : data, write ? data : there.data(), size);
}

void fabric_copy(Chip& chip, bool write, unsigned target, std::uint64_t addr, std::byte* data,
                 std::size_t size)
{
    fabric::Domain* domain = chip.domain();
    if (!domain)
        throw std::runtime_error("chip " + std::to_string(target) +
                                 " is in no process of this chip's fabric domain");
    try {
        if (write)
            domain->write(target, addr, data, size);
        else
            domain->read(target, addr, data, size);
    } catch (const fabric::DomainError& e) {
        if (e.peer_lost()) chip.links().peer_lost(target, e.what());
        throw std::runtime_error(e.what());
    }
}

RemoteAccess access(Chip& chip, bool write, unsigned target, std::uint64_t addr, std::byte* data,
                    std::size_t size)
{
    if (target == chip.config().domain_chip)
        throw std::runtime_error("chip " + std::to_string(target) + " is this chip");
    if (!chip.domain() && !chip.config().fabric)
        throw std::runtime_error(
            "this chip is in no fabric domain (jal-emu --domain FILE, or --chips N for a tray)");
    if (!chip.links().reaches(target)) throw std::runtime_error(chip.links().no_route(target));
    Chip* local = chip.config().fabric ? chip.config().fabric->chip(target) : nullptr;
    if (local)
        local_copy(*local, write, addr, data, size);
    else
        fabric_copy(chip, write, target, addr, data, size);
    const auto c = chip.links().charge(target, size, write, chip.clock().now_ns());
    if (!c) throw std::runtime_error(chip.links().no_route(target));  // went down meanwhile
    return {c->index, c->start_ns, c->end_ns, c->ports};
}

}  // namespace

RemoteAccess remote_write(Chip& chip, unsigned target, std::uint64_t addr,
                          std::span<const std::byte> data)
{
    return access(chip, true, target, addr, const_cast<std::byte*>(data.data()), data.size());
}

RemoteAccess remote_read(Chip& chip, unsigned target, std::uint64_t addr, std::span<std::byte> data)
{
    return access(chip, false, target, addr, data.data(), data.size());
}

}  // namespace jal::emu
