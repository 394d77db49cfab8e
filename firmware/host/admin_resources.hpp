// Admin commands 0x10-0x1c (interface 1.1; 0x19 since 1.6, 0x1a-0x1b since 1.8, 0x1c since 1.11): contexts, device memory and user queues, and
// the cleanup that keeps them from outliving their host function.
//
// Every context belongs to the host function (admin queue) that created it; its queues
// and allocations go with it. Another function naming it gets JAL_STATUS_PERMISSION. When
// a function detaches (its JAL_HOSTIF_FUNC_PRESENT bit clears), or a JAL_EV_FUNC finds it
// present with a generation the firmware has not seen from it (it detached and a new
// client attached in between), everything it owned is destroyed: a crashed process leaves
// the device clean for the next one.
#pragma once

#include <array>
#include <cstdint>

#include "firmware/hbm/hbm_state.hpp"
#include "firmware/host/admin_commands.hpp"
#include "firmware/host/chip_info.hpp"
#include "firmware/host/journal.hpp"
#include "firmware/host/reply_writer.hpp"
#include "firmware/memory/address_spaces.hpp"
#include "firmware/queues/user_queues.hpp"
#include "firmware/slices/slice_manager.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/mgmt.h"

namespace jal::fw::host {

// The 64-bit argument in cdw[i] (low half) and cdw[i + 1].
inline std::uint64_t cdw64(const jal_admin_sqe& sqe, std::uint32_t i)
{
    return std::uint64_t{sqe.cdw[i + 1]} << 32 | sqe.cdw[i];
}

class ResourceCommands {
public:
    ResourceCommands(const ChipInfo& chip, const slices::SliceManager& slices,
                     const hbm::HbmState& hbm, Journal& journal)
        : chip_(chip), slices_(slices), hbm_(hbm), journal_(journal)
    {}

    // After the slice map and HBM capacity are final: pages, MMU and CP engines start clean.
    void init();

    static bool handles(std::uint8_t opcode)
    {
        return opcode >= JAL_ADMIN_CREATE_CONTEXT && opcode <= JAL_ADMIN_HOST_WINDOW;
    }
    // Smallest data_len of the data-carrying ones (0 for the others).
    static std::uint32_t min_data_len(std::uint8_t opcode);
    // Executes one of them for host function fn. NOT_READY unless the chip is READY.
    Completion execute(std::uint32_t fn, const jal_admin_sqe& sqe, ReplyWriter& out);

    // JAL_EV_FUNC: destroys what detached or re-attached functions owned.
    void functions_changed(std::uint32_t present_mask);
    // Destroys every context (with its memory and queues) owned by fn. Returns contexts.
    std::uint32_t release_function(std::uint32_t fn);

    const memory::AddressSpaces& memory() const { return mem_; }
    memory::AddressSpaces& memory() { return mem_; }
    const queues::UserQueues& queues() const { return queues_; }

private:
    Completion create_context(std::uint32_t fn, const jal_admin_sqe& sqe);
    // HOST_WINDOW (1.11, admin_windows.cpp): the windows of one of fn's host spaces.
    Completion host_window(std::uint32_t fn, const jal_admin_sqe& sqe);
    Completion destroy_context(std::uint32_t fn, const jal_admin_sqe& sqe);
    Completion alloc_memory(std::uint32_t fn, const jal_admin_sqe& sqe, ReplyWriter& out);
    Completion free_memory(std::uint32_t fn, const jal_admin_sqe& sqe);
    Completion get_placement(std::uint32_t fn, const jal_admin_sqe& sqe, ReplyWriter& out);
    // Peer memory (1.8): EXPORT_MEMORY and IMPORT_PEER.
    Completion export_memory(std::uint32_t fn, const jal_admin_sqe& sqe, ReplyWriter& out);
    Completion import_peer(std::uint32_t fn, const jal_admin_sqe& sqe, ReplyWriter& out);
    Completion create_queue(std::uint32_t fn, const jal_admin_sqe& sqe);
    Completion queue_command(std::uint32_t fn, const jal_admin_sqe& sqe, ReplyWriter& out);
    // GET_USAGE: streamed a field group at a time (jal_usage is 1.6 KiB; SRAM stacks are
    // small).
    Completion usage(ReplyWriter& out) const;
    // Contexts and user queues fn holds (for the per-function limits).
    std::uint32_t contexts_of(std::uint32_t fn) const;
    std::uint32_t queues_of(std::uint32_t fn) const;
    // JAL_FN_CONTEXTS: what the host's client list shows for fn.
    void publish_contexts(std::uint32_t fn) const;
    // Destroys a context's queues then its memory; returns allocations + queues it held.
    std::uint32_t teardown(std::uint32_t ctx, std::uint32_t& allocs, std::uint32_t& queues);

    const ChipInfo& chip_;
    const slices::SliceManager& slices_;
    const hbm::HbmState& hbm_;
    Journal& journal_;
    memory::AddressSpaces mem_{journal_};
    queues::UserQueues queues_;
    std::uint32_t present_ = 0;
    std::uint32_t have_generation_ = 0;  // bit per function
    std::array<std::uint32_t, JAL_MGMT_MAX_FUNCS> generation_{};
    // Each context's host space (CREATE_CONTEXT cdw[0]; 0: the whole function).
    std::array<std::uint32_t, JAL_MAX_CONTEXTS> space_{};
};

}  // namespace jal::fw::host
