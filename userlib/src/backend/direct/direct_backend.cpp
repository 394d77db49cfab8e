#include "direct_backend.hpp"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

#include <jal/hw/mgmt.h>
#include <jal/hw/pci.h>

#include <jal/error.hpp>

#include "memfd_memory.hpp"

namespace jal::direct {

namespace {

// Bus addresses the client hands out. Starting well above zero keeps a stray 0 or small
// integer from ever naming host memory; the unmapped page after every region makes an
// overrun a DMA fault instead of silent corruption of the neighbour.
constexpr uint64_t kFirstBusAddr = 0x1'0000'0000ull;

size_t page_size()
{
    return static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

// BAR2 of the function, shared with the emulator through the memfd GET_DOORBELLS returned:
// a doorbell write is a store into that memory, which the queue engine watches; when it
// sleeps (NEED_WAKEUP) the host writes the kick eventfd.
class DirectDoorbells final : public backend::DoorbellMapping {
public:
    explicit DirectDoorbells(DirectConnection::Doorbells fds) : kick_(std::move(fds.kick_eventfd))
    {
        void* p = ::mmap(nullptr, JAL_BAR_DOORBELL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                         fds.bar_memfd.get(), 0);
        if (p == MAP_FAILED)
            throw Error(JAL_STATUS_IO_ERROR,
                        std::string("mmap of the doorbell BAR: ") + std::strerror(errno));
        base_ = static_cast<std::byte*>(p);
    }
    ~DirectDoorbells() override { ::munmap(base_, JAL_BAR_DOORBELL_SIZE); }

    std::byte* page(uint32_t queue_id) override
    {
        if (queue_id >= JAL_MAX_USER_QUEUES)
            throw Error(JAL_STATUS_OUT_OF_RANGE,
                        "queue id " + std::to_string(queue_id) + " has no doorbell page");
        return base_ + size_t{queue_id} * JAL_DOORBELL_STRIDE;
    }

    void kick() override
    {
        uint64_t one = 1;
        // EAGAIN (counter saturated) still leaves the engine woken; nothing else can fail.
        [[maybe_unused]] ssize_t n = ::write(kick_.get(), &one, sizeof one);
    }

private:
    util::UniqueFd kick_;
    std::byte* base_ = nullptr;
};

}  // namespace

DirectBackend::DirectBackend(const std::string& socket_path, const DirectOptions& options)
    : next_bus_addr_(kFirstBusAddr)
{
    connection_ = std::make_shared<DirectConnection>(
        SeqpacketSocket::connect(socket_path, options.reply_timeout), options.reply_timeout);
    jal_msg_hello_reply hello;
    try {
        hello = connection_->hello(options.client_name);
    } catch (const Error& e) {
        if (e.status() != JAL_STATUS_BUSY) throw;
        throw Error(JAL_STATUS_BUSY,
                    "the emulator refused the connection: every host function of the chip is "
                    "in use by other clients");
    }
    identity_.transport = "direct";
    identity_.location = socket_path;
    identity_.interface_version = hello.proto_version;
    identity_.function = hello.function;
    identity_.chip_index = hello.chip_index;
    identity_.msix_vectors = hello.msix_vectors;
    for (size_t i = 0; i < identity_.bar_size.size(); i++)
        identity_.bar_size[i] = hello.bar_size[i];
}

uint32_t DirectBackend::read32(uint32_t bar, uint32_t offset)
{
    return static_cast<uint32_t>(connection_->reg_read(bar, offset, 4));
}

void DirectBackend::write32(uint32_t bar, uint32_t offset, uint32_t value)
{
    connection_->reg_write(bar, offset, 4, value, false);
}

void DirectBackend::write64(uint32_t bar, uint32_t offset, uint64_t value)
{
    connection_->reg_write(bar, offset, 8, value, false);
}

uint64_t DirectBackend::reserve_bus_range(size_t bytes)
{
    std::lock_guard lock(bus_mutex_);
    uint64_t addr = next_bus_addr_;
    next_bus_addr_ += bytes + page_size();
    return addr;
}

std::unique_ptr<backend::HostMemory> DirectBackend::share_host_memory(size_t bytes)
{
    if (bytes == 0) throw Error(JAL_STATUS_INVALID_FIELD, "cannot share 0 bytes of host memory");
    size_t size = round_up(bytes, page_size());
    return std::make_unique<MemfdMemory>(connection_, size, reserve_bus_range(size));
}

void DirectBackend::bind_irq(uint32_t vector, int eventfd)
{
    connection_->set_irq(vector, eventfd);
}

std::vector<backend::Backend::OtherClient> DirectBackend::other_clients()
{
    std::vector<OtherClient> out;
    for (uint32_t fn = 0; fn < JAL_MGMT_MAX_FUNCS; fn++) {
        if (fn == identity_.function) continue;
        jal_msg_client_info_reply c;
        try {
            c = connection_->client_info(fn);
        } catch (const Error& e) {
            if (e.status() != JAL_STATUS_PROTOCOL) throw;
            throw Error(JAL_STATUS_UNSUPPORTED,
                        "the emulator cannot list its clients (transport protocol " +
                            std::to_string(identity_.interface_version >> 16) + "." +
                            std::to_string(identity_.interface_version & 0xffff) +
                            ", CLIENT_INFO needs 1.2)");
        }
        if (!c.present) continue;
        out.push_back(OtherClient{
            fn, c.pid, std::string(c.client, ::strnlen(c.client, sizeof c.client)), c.contexts});
    }
    return out;
}

std::shared_ptr<backend::DoorbellMapping> DirectBackend::map_doorbells()
{
    return std::make_shared<DirectDoorbells>(connection_->get_doorbells());
}

}  // namespace jal::direct
