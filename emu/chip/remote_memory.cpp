#include "emu/chip/remote_memory.hpp"

#include "emu/chip/chip.hpp"
#include "emu/fabric/domain.hpp"

#include <stdexcept>

namespace jal::emu {

namespace {

RemoteAccess access(Chip& chip, bool write, unsigned target, std::uint64_t addr, std::byte* data,
                    std::size_t size)
{
    fabric::Domain* domain = chip.domain();
    if (!domain)
        throw std::runtime_error("this chip is in no fabric domain (jal-emu --domain FILE)");
    if (target == chip.config().domain_chip)
        throw std::runtime_error("chip " + std::to_string(target) + " is this chip");
    if (!chip.links().reaches(target)) throw std::runtime_error(chip.links().no_route(target));
    try {
        if (write)
            domain->write(target, addr, data, size);
        else
            domain->read(target, addr, data, size);
    } catch (const fabric::DomainError& e) {
        if (e.peer_lost()) chip.links().peer_lost(target, e.what());
        throw std::runtime_error(e.what());
    }
    const auto c = chip.links().charge(target, size, write, chip.clock().now_ns());
    if (!c) throw std::runtime_error(chip.links().no_route(target));  // went down meanwhile
    return {c->index, c->start_ns, c->end_ns};
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
