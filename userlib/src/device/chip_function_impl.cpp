#include "chip_function_impl.hpp"

#include <jal/hw/pci.h>
#include <jal/hw/regs.h>
#include <jal/hw/version.h>

#include "../admin/admin_names.hpp"

namespace jal {

namespace {
DeviceState state_from_bits(uint32_t bits)
{
    if (bits & JAL_REG_STATUS_FAILED) return DeviceState::failed;
    if (bits & JAL_REG_STATUS_RESETTING) return DeviceState::resetting;
    if (bits & JAL_REG_STATUS_BOOTING) return DeviceState::booting;
    if (bits & JAL_REG_STATUS_READY) return DeviceState::ready;
    return DeviceState::unknown;
}
}  // namespace

ChipFunction::Impl::Impl(unsigned index, std::unique_ptr<backend::Backend> backend,
                         const OpenOptions& options)
    : index_(index), options_(options), backend_(std::move(backend))
{}

ChipFunction::Impl::~Impl()
{
    // Buffers of abandoned raw commands and the queue go before the backend they use.
    pending_raw_.clear();
    admin_.reset();
    orphaned_buffers_.clear();
}

DeviceStatus ChipFunction::Impl::read_status()
{
    auto reg = [&](uint32_t offset) { return backend_->read32(JAL_BAR_REGS, offset); };
    DeviceStatus s;
    // The generation before the state: registers are read one at a time, and a reset
    // between the two reads must not give a new generation with the old state's "ready"
    // (ChipFunction::reset would take that for a chip already back). Read first, a new
    // generation means the reset began before the state was read.
    s.reset_generation = reg(JAL_REG_RESET_GENERATION);
    s.raw = reg(JAL_REG_STATUS);
    s.state = state_from_bits(s.raw);
    s.degraded = s.raw & JAL_REG_STATUS_DEGRADED;
    s.fault = static_cast<jal_status>(reg(JAL_REG_FAULT));
    uint32_t boot = reg(JAL_REG_BOOT_STATUS);
    s.boot_step = boot >> 16;
    s.boot_step_status = static_cast<jal_status>(boot & 0xffff);
    s.post_code = reg(JAL_REG_POST_CODE);
    s.fw_version = reg(JAL_REG_FW_VERSION);
    s.if_version = reg(JAL_REG_VERSION);
    return s;
}

uint32_t ChipFunction::Impl::read_reset_generation()
{
    return backend_->read32(JAL_BAR_REGS, JAL_REG_RESET_GENERATION);
}

void ChipFunction::Impl::pin_reset_generation(uint32_t generation)
{
    std::lock_guard lock(admin_mutex_);
    pinned_generation_ = generation;
}

Error ChipFunction::Impl::reset_error(uint32_t made_in, uint32_t now)
{
    return Error(JAL_STATUS_DEVICE_RESET,
                 "the device was reset (reset generation " + std::to_string(made_in) + " -> " +
                     std::to_string(now) +
                     "): the contexts, memory and queues made before are gone; release the "
                     "handles, close the device and open it again");
}

std::shared_ptr<admin::AdminQueue> ChipFunction::Impl::admin_queue()
{
    std::lock_guard lock(admin_mutex_);
    uint32_t generation = read_reset_generation();
    if (pinned_generation_ && generation != *pinned_generation_)
        throw reset_error(*pinned_generation_, generation);
    // A reset disabled the queue: enable a new one rather than wait on the dead one.
    if (admin_ && admin_->reset_generation() != generation) admin_.reset();
    if (admin_) return admin_;
    DeviceStatus s = read_status();
    // A failed chip may still serve its admin queue (its logs say why it failed), so only
    // a chip still on its way up is refused outright.
    if (s.state != DeviceState::ready && s.state != DeviceState::failed)
        throw Error(JAL_STATUS_NOT_READY, std::string("not ready (") + state_name(s.state) + ")");
    if (JAL_HW_VERSION_GET_MAJOR(s.if_version) != JAL_HW_VERSION_MAJOR)
        throw Error(JAL_STATUS_VERSION_MISMATCH,
                    "firmware implements device interface " +
                        std::to_string(JAL_HW_VERSION_GET_MAJOR(s.if_version)) + "." +
                        std::to_string(JAL_HW_VERSION_GET_MINOR(s.if_version)) + ", this library " +
                        std::to_string(JAL_HW_VERSION_MAJOR) + "." +
                        std::to_string(JAL_HW_VERSION_MINOR));
    try {
        admin::AdminQueueConfig config;
        config.enable_timeout = options_.admin_timeout;
        admin_ = std::make_shared<admin::AdminQueue>(*backend_, config);
    } catch (const Error& e) {
        if (s.state != DeviceState::failed) throw;
        throw Error(JAL_STATUS_HW_FAILED, std::string("chip failed (fault: ") +
                                              jal_status_name(s.fault) +
                                              ") and does not serve its admin queue: " + e.what());
    }
    return admin_;
}

void ChipFunction::Impl::drop_admin_queue()
{
    std::lock_guard lock(admin_mutex_);
    admin_.reset();
}

ChipFunction::Impl::Reply ChipFunction::Impl::run(uint8_t opcode,
                                                  std::initializer_list<uint32_t> cdw,
                                                  uint32_t data_len, const void* payload)
{
    auto queue = admin_queue();
    std::unique_ptr<backend::HostMemory> buffer;
    jal_admin_sqe sqe{};
    sqe.opcode = opcode;
    size_t i = 0;
    for (uint32_t word : cdw) sqe.cdw[i++] = word;
    if (data_len) {
        buffer = backend_->share_host_memory(data_len);
        if (payload) std::memcpy(buffer->data(), payload, data_len);
        sqe.data_addr = buffer->bus_addr();
        sqe.data_len = data_len;
    }
    Reply reply;
    try {
        reply.completion = queue->execute(sqe, options_.admin_timeout);
    } catch (const Error& e) {
        if (e.status() == JAL_STATUS_DEVICE_RESET) drop_admin_queue();
        if (e.status() == JAL_STATUS_TIMEOUT) {
            // The firmware may be wedged; start from a freshly enabled queue next time.
            drop_admin_queue();
            // Keep the buffer mapped: the device may still write the late reply into it.
            if (buffer) {
                std::lock_guard lock(admin_mutex_);
                orphaned_buffers_.push_back(std::move(buffer));
            }
        }
        throw;
    }
    if (reply.completion.status != JAL_STATUS_OK)
        throw Error(reply.completion.status,
                    "admin command " + admin::opcode_name(opcode) +
                        " failed: " + jal_status_name(reply.completion.status));
    if (buffer) reply.data.assign(buffer->data(), buffer->data() + data_len);
    return reply;
}

uint16_t ChipFunction::Impl::submit_raw(const jal_admin_sqe& sqe_in, size_t buffer_bytes)
{
    auto queue = admin_queue();
    jal_admin_sqe sqe = sqe_in;
    PendingRaw pending{queue, nullptr};
    if (buffer_bytes) {
        pending.buffer = backend_->share_host_memory(buffer_bytes);
        sqe.data_addr = pending.buffer->bus_addr();
    }
    uint16_t cid = queue->submit(sqe, util::Deadline(options_.admin_timeout));
    std::lock_guard lock(admin_mutex_);
    pending_raw_[cid] = std::move(pending);
    return cid;
}

RawAdminResult ChipFunction::Impl::wait_raw(uint16_t cid)
{
    PendingRaw pending;
    {
        std::lock_guard lock(admin_mutex_);
        auto it = pending_raw_.find(cid);
        if (it == pending_raw_.end())
            throw Error(JAL_STATUS_INVALID_FIELD,
                        "no raw admin command with cid " + std::to_string(cid));
        pending = std::move(it->second);
        pending_raw_.erase(it);
    }
    RawAdminResult out;
    try {
        admin::Completion c = pending.queue->wait(cid, util::Deadline(options_.admin_timeout));
        out.completion = AdminCompletion{c.cid, c.status, c.result};
    } catch (const Error& e) {
        if (e.status() == JAL_STATUS_TIMEOUT || e.status() == JAL_STATUS_DEVICE_RESET)
            drop_admin_queue();
        throw;
    }
    if (pending.buffer)
        out.data.assign(pending.buffer->data(), pending.buffer->data() + pending.buffer->size());
    return out;
}

}  // namespace jal
