// Program: a code object in device memory. Staged through pinned host memory and copied
// with the queue the caller will dispatch on; the constructor waits so the program is
// usable on any queue of the context afterwards.
#include <jal/kernels/dispatch.hpp>

#include <algorithm>
#include <cstring>

#include <jal/isa/code_object.hpp>

namespace jal::kernels {

Program::Program(const jal::runtime::Device& dev, jal::runtime::Context& ctx,
                 jal::runtime::Queue& q, const CodeObject& co, const MemoryPlace& where)
    : memory_(ctx, std::max<size_t>(co.bytes.size(), 1), where.placement, where.slice_mask),
      name_(co.name), args_size_(co.args_size), l1_bytes_(co.l1_bytes),
      slice_table_arg_(co.slice_table_arg), after_messages_(co.after_messages),
      dispatch_senders_(co.dispatch_senders), readahead_slot_(co.readahead_slot)
{
    if (co.bytes.empty())
        throw Error(JAL_STATUS_INVALID_LENGTH, "kernel " + co.name + ": the code object is empty");
    code_ = isa::read_code_object_unchecked(co.bytes).code;

    jal::runtime::HostBuffer staging(dev, co.bytes.size());
    std::memcpy(staging.data(), co.bytes.data(), co.bytes.size());
    jal::runtime::Signal done(dev, 1);
    q.copy_to_device(memory_.va(), staging, 0, co.bytes.size(), &done);
    jal::runtime::WaitResult r = done.wait_zero();
    if (r.status != JAL_STATUS_OK)
        throw Error(r.status, "kernel " + co.name +
                                  ": copying the code object to the device failed: " +
                                  jal_status_name(r.status));
}

}  // namespace jal::kernels
