// Opening devices and reading their state: the parts of jal::ChipFunction that need no admin
// queue.
#include <jal/chip_function.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <jal/hw/pci.h>
#include <jal/hw/regs.h>

#include "../backend/open_backend.hpp"
#include "../util/deadline.hpp"
#include "chip_function_impl.hpp"

namespace jal {

std::vector<DeviceEntry> ChipFunction::enumerate(const std::string& emu_dir)
{
    namespace fs = std::filesystem;
    std::string dir = emu_dir.empty() ? default_emu_dir() : emu_dir;
    std::vector<DeviceEntry> found;
    std::error_code ec;
    static const std::regex socket_name(R"(jal(\d{1,4})\.sock)");
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        std::smatch m;
        std::string name = entry.path().filename().string();
        if (std::regex_match(name, m, socket_name) && entry.is_socket(ec))
            found.push_back({static_cast<unsigned>(std::stoul(m[1].str())), entry.path().string()});
    }
    std::sort(found.begin(), found.end(),
              [](const DeviceEntry& a, const DeviceEntry& b) { return a.index < b.index; });
    return found;
}

ChipFunction ChipFunction::open(unsigned index, const OpenOptions& options)
{
    try {
        return ChipFunction(
            std::make_unique<Impl>(index, backend::open_backend(index, options), options));
    } catch (const Error& e) {
        throw Error(e.status(), "device " + std::to_string(index) + ": " + e.what());
    }
}

ChipFunction::ChipFunction(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChipFunction::ChipFunction(ChipFunction&&) noexcept = default;
ChipFunction& ChipFunction::operator=(ChipFunction&&) noexcept = default;
ChipFunction::~ChipFunction() = default;

unsigned ChipFunction::index() const
{
    return impl_->index();
}
std::string ChipFunction::location() const
{
    return impl_->backend().identity().location;
}
uint32_t ChipFunction::host_function() const
{
    return impl_->backend().identity().function;
}

DeviceStatus ChipFunction::status()
{
    return impl_->guarded([&] { return impl_->read_status(); });
}

DeviceStatus ChipFunction::wait_ready(std::chrono::milliseconds timeout)
{
    return impl_->guarded([&] {
        util::Deadline deadline(timeout);
        for (;;) {
            uint32_t bits = impl_->backend().read32(JAL_BAR_REGS, JAL_REG_STATUS);
            bool settled = (bits & (JAL_REG_STATUS_READY | JAL_REG_STATUS_FAILED)) &&
                           !(bits & (JAL_REG_STATUS_BOOTING | JAL_REG_STATUS_RESETTING));
            if (settled || deadline.expired()) return impl_->read_status();
            std::this_thread::sleep_for(
                std::chrono::milliseconds(deadline.poll_ms(std::chrono::milliseconds(20))));
        }
    });
}

namespace {
std::string process_name(uint32_t pid)
{
    if (pid == 0) return {};
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    return name;  // empty when the process is gone or lives in another pid namespace
}
}  // namespace

std::vector<AttachedClient> ChipFunction::other_clients()
{
    return impl_->guarded([&] {
        std::vector<AttachedClient> out;
        for (const auto& c : impl_->backend().other_clients())
            out.push_back(
                AttachedClient{c.function, c.pid, process_name(c.pid), c.name, c.contexts});
        return out;
    });
}

RawAdminResult ChipFunction::admin_execute_raw(const jal_admin_sqe& sqe, size_t buffer_bytes)
{
    return impl_->guarded([&] { return impl_->wait_raw(impl_->submit_raw(sqe, buffer_bytes)); });
}

uint16_t ChipFunction::admin_submit_raw(const jal_admin_sqe& sqe, size_t buffer_bytes)
{
    return impl_->guarded([&] { return impl_->submit_raw(sqe, buffer_bytes); });
}

RawAdminResult ChipFunction::admin_wait_raw(uint16_t cid)
{
    return impl_->guarded([&] { return impl_->wait_raw(cid); });
}

}  // namespace jal
