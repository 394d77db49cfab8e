// The MMU's remote pages reach peers through remote_read/remote_write: the bytes over the
// domain, the time from the link model. Failures become statuses the packet or dispatch
// that made the access reports (LINK_DOWN), never exceptions in a queue engine.
#include "emu/chip/chip.hpp"
#include "emu/chip/remote_memory.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/status.h"

#include <stdexcept>

namespace jal::emu {

namespace {

template <class Span, class Move>
std::uint32_t peer_access(Chip& chip, std::uint32_t target, Span data, std::uint64_t& link_ns,
                          Move move)
{
    if (!chip.domain() && !chip.config().fabric) return JAL_STATUS_LINK_DOWN;  // no fabric
    try {
        const RemoteAccess a = move(data);
        link_ns += a.end_ns - a.start_ns;
        return JAL_STATUS_OK;
    } catch (const std::runtime_error& e) {
        log(LogLevel::debug, "chip{} peer memory: chip {}: {}", chip.index(), target, e.what());
        return JAL_STATUS_LINK_DOWN;
    }
}

}  // namespace

void Chip::wire_peer_memory()
{
    // A chip of a domain or of a tray (jal-emu --chips N: one switched domain) has an id
    // its peers name it by; a lone chip has none.
    mmu_.fabric.self = [this] { return domain() || config_.fabric ? config_.domain_chip : ~0u; };
    mmu_.fabric.read = [this](std::uint32_t target, std::uint64_t pa, std::span<std::byte> data,
                              std::uint64_t& ns) {
        return peer_access(*this, target, data, ns, [&](std::span<std::byte> d) {
            return remote_read(*this, target, pa, d);
        });
    };
    mmu_.fabric.write = [this](std::uint32_t target, std::uint64_t pa,
                               std::span<const std::byte> data, std::uint64_t& ns) {
        return peer_access(*this, target, data, ns, [&](std::span<const std::byte> d) {
            return remote_write(*this, target, pa, d);
        });
    };
    mmu_.fabric.table_write = [this](std::uint64_t pa, std::span<const std::byte> data) {
        auto dst = hbm_.range(pa, data.size());
        if (dst.size() == data.size()) std::copy(data.begin(), data.end(), dst.begin());
    };
}

}  // namespace jal::emu
