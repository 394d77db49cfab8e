#include "kmd_backend.hpp"

#include <uapi/jal_accel.h>

#include <jal/error.hpp>
#include <jal/hw/pci.h>
#include <jal/hw/regs.h>

#include "kmd_memory.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace jal::kmd {

std::string device_node(unsigned index)
{
    return "/dev/jal" + std::to_string(index);
}

KmdBackend::KmdBackend(const std::string& path)
    : file_(std::make_shared<KmdFile>(path)), registry_(std::make_shared<BusRegistry>()),
      admin_(file_, registry_)
{
    jal_ioctl_info info{};
    file_->ioctl_or_throw(JAL_IOCTL_INFO, info, "INFO");
    identity_.transport = "kmd";
    identity_.location = path;
    identity_.interface_version = info.if_version;
    identity_.function = 0;
    identity_.chip_index = info.chip_index;
    identity_.msix_vectors = info.msix_vectors;
    for (size_t i = 0; i < identity_.bar_size.size(); i++) identity_.bar_size[i] = info.bar_size[i];
}

uint32_t KmdBackend::read32(uint32_t bar, uint32_t offset)
{
    if (bar != JAL_BAR_REGS) return 0;
    uint32_t value = 0;
    if (admin_.read(offset, value)) return value;
    jal_ioctl_info info{};
    file_->ioctl_or_throw(JAL_IOCTL_INFO, info, "INFO");
    switch (offset) {
    case JAL_REG_ID:
        return info.id;
    case JAL_REG_VERSION:
        return info.if_version;
    case JAL_REG_CAP:
        return info.cap;
    case JAL_REG_CHIP_INDEX:
        return info.chip_index;
    case JAL_REG_FW_VERSION:
        return info.fw_version;
    case JAL_REG_STATUS:
        return info.status;
    case JAL_REG_BOOT_STATUS:
        return info.boot_status;
    case JAL_REG_POST_CODE:
        return info.post_code;
    case JAL_REG_FAULT:
        return info.fault;
    case JAL_REG_RESET_GENERATION:
        return info.reset_generation;
    default:
        return 0;  // scratch and unassigned registers belong to the driver
    }
}

void KmdBackend::write32(uint32_t bar, uint32_t offset, uint32_t value)
{
    if (bar == JAL_BAR_REGS) admin_.write(offset, value);
}

void KmdBackend::write64(uint32_t, uint32_t, uint64_t)
{
    // Doorbells are written through the mapped page (map_doorbells), not by offset.
    throw Error(JAL_STATUS_UNSUPPORTED,
                file_->path() + ": doorbells are rung through their mapped page");
}

std::unique_ptr<backend::HostMemory> KmdBackend::share_host_memory(size_t bytes)
{
    if (bytes == 0) throw Error(JAL_STATUS_INVALID_FIELD, "cannot share 0 bytes of host memory");
    return std::make_unique<KmdMemory>(file_, registry_, bytes);
}

void KmdBackend::bind_irq(uint32_t vector, int eventfd)
{
    if (vector == JAL_MSIX_VECTOR_ADMIN) {
        admin_.bind_admin_irq(eventfd);
        return;
    }
    jal_ioctl_bind_irq a{};
    a.vector = vector;
    a.eventfd = eventfd;
    file_->ioctl_or_throw(JAL_IOCTL_BIND_IRQ, a,
                          ("BIND_IRQ vector " + std::to_string(vector)).c_str());
}

std::shared_ptr<backend::DoorbellMapping> KmdBackend::map_doorbells()
{
    auto doorbells = std::make_shared<KmdDoorbells>(file_);
    admin_.set_doorbells(doorbells);
    return doorbells;
}

}  // namespace jal::kmd

namespace jal::kmd {

std::vector<backend::Backend::OtherClient> KmdBackend::other_clients()
{
    // jal.ko lists the processes that have the node open, "pid comm contexts" per line
    // (comm may hold spaces). Other processes only: this one's files are ours.
    std::string node = std::filesystem::path(file_->path()).filename();
    std::string list = "/sys/class/jal/" + node + "/device/clients";
    std::ifstream in(list);
    if (!in)
        throw Error(JAL_STATUS_UNSUPPORTED,
                    list + " cannot be read (a jal.ko without the client list?)");
    std::vector<OtherClient> out;
    for (std::string line; std::getline(in, line);) {
        size_t first = line.find(' '), last = line.rfind(' ');
        if (first == std::string::npos || last <= first) continue;
        OtherClient c;
        c.pid = static_cast<uint32_t>(std::strtoul(line.c_str(), nullptr, 10));
        c.name = line.substr(first + 1, last - first - 1);
        c.contexts = static_cast<uint32_t>(std::strtoul(line.c_str() + last + 1, nullptr, 10));
        if (c.pid != static_cast<uint32_t>(::getpid())) out.push_back(c);
    }
    return out;
}

}  // namespace jal::kmd
