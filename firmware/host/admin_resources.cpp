#include "firmware/host/admin_resources.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/host/event_codes.hpp"
#include "jal/hw/pci.h"
#include "jal/hw/queue.h"
#include "jal/hw/status.h"

namespace jal::fw::host {

namespace {

Completion fail(std::uint32_t status)
{
    return Completion{0, status, AfterAction::kNone};
}
Completion ok(std::uint32_t result = 0)
{
    return Completion{result, JAL_STATUS_OK, AfterAction::kNone};
}
// Counts attaches and detaches only (not admin-queue re-enables): it tells a new client apart.
std::uint32_t generation_of(std::uint32_t fn)
{
    return hal::read32(JAL_HOSTIF_FN(fn, JAL_FN_ATTACHES));
}

}  // namespace

void ResourceCommands::init()
{
    mem_.init(slices_.enabled(), hbm_);
    queues_.init();
    // A management-core reset may leave a previous boot's windows in the command processor.
    for (std::uint32_t fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn)
        (void)queues::cp::window(JAL_CP_WIN_CLEAR_FUNC, fn, 0, 0, 0);
    space_.fill(0);
}

std::uint32_t ResourceCommands::min_data_len(std::uint8_t opcode)
{
    switch (opcode) {
    case JAL_ADMIN_ALLOC_MEMORY:
        return sizeof(jal_mem_alloc_reply);
    case JAL_ADMIN_GET_PLACEMENT:
        return sizeof(jal_placement_header);
    case JAL_ADMIN_QUEUE_STATUS:
        return sizeof(jal_queue_status);
    case JAL_ADMIN_GET_USAGE:
        return sizeof(jal_usage);
    case JAL_ADMIN_EXPORT_MEMORY:
        return sizeof(jal_mem_export_reply);
    case JAL_ADMIN_IMPORT_PEER:
        return sizeof(jal_mem_alloc_reply);
    default:
        return 0;
    }
}

Completion ResourceCommands::execute(std::uint32_t fn, const jal_admin_sqe& sqe, ReplyWriter& out)
{
    if (chip_.state != JAL_CHIP_STATE_READY) return fail(JAL_STATUS_NOT_READY);
    if (fn >= JAL_MGMT_MAX_FUNCS) return fail(JAL_STATUS_INVALID_FIELD);
    // This function is alive and talking at this generation: a later change of it seen with
    // JAL_EV_FUNC means a new client.
    generation_[fn] = generation_of(fn);
    have_generation_ |= 1u << fn;

    switch (sqe.opcode) {
    case JAL_ADMIN_CREATE_CONTEXT:
        return create_context(fn, sqe);
    case JAL_ADMIN_HOST_WINDOW:
        return host_window(fn, sqe);
    case JAL_ADMIN_DESTROY_CONTEXT:
        return destroy_context(fn, sqe);
    case JAL_ADMIN_ALLOC_MEMORY:
        return alloc_memory(fn, sqe, out);
    case JAL_ADMIN_FREE_MEMORY:
        return free_memory(fn, sqe);
    case JAL_ADMIN_GET_PLACEMENT:
        return get_placement(fn, sqe, out);
    case JAL_ADMIN_CREATE_QUEUE:
        return create_queue(fn, sqe);
    case JAL_ADMIN_DESTROY_QUEUE:
    case JAL_ADMIN_QUEUE_STATUS:
    case JAL_ADMIN_RESET_QUEUE:
        return queue_command(fn, sqe, out);
    case JAL_ADMIN_GET_USAGE:
        return usage(out);
    case JAL_ADMIN_EXPORT_MEMORY:
        return export_memory(fn, sqe, out);
    case JAL_ADMIN_IMPORT_PEER:
        return import_peer(fn, sqe, out);
    default:
        return fail(JAL_STATUS_INVALID_OPCODE);
    }
}

// What one function may hold (JAL_HOSTIF_FN_LIMITS), so that one client cannot take every
// context or queue of the chip; 0 means no limit.
static std::uint32_t function_limit(unsigned shift)
{
    return hal::read32(JAL_HOSTIF_FN_LIMITS) >> shift & 0xffff;
}

std::uint32_t ResourceCommands::contexts_of(std::uint32_t fn) const
{
    std::uint32_t n = 0;
    for (std::uint32_t ctx = 1; ctx < JAL_MAX_CONTEXTS; ++ctx) n += mem_.owner(ctx) == fn;
    return n;
}

std::uint32_t ResourceCommands::queues_of(std::uint32_t fn) const
{
    std::uint32_t n = 0;
    for (std::uint32_t qid = 0; qid < JAL_MAX_USER_QUEUES; ++qid)
        n += queues_.check_owner(fn, qid) == JAL_STATUS_OK;
    return n;
}

void ResourceCommands::publish_contexts(std::uint32_t fn) const
{
    hal::write32(JAL_HOSTIF_FN(fn, JAL_FN_CONTEXTS), contexts_of(fn));
}

Completion ResourceCommands::create_context(std::uint32_t fn, const jal_admin_sqe& sqe)
{
    const std::uint32_t limit = function_limit(0);
    if (limit && contexts_of(fn) >= limit) return fail(JAL_STATUS_BUSY);
    std::uint32_t ctx = 0;
    const std::uint32_t status = mem_.create_context(fn, ctx);
    if (status != JAL_STATUS_OK) return fail(status);
    space_[ctx] = sqe.cdw[0];
    publish_contexts(fn);
    journal_.event(JAL_SRC_ADMIN, JAL_SEV_INFO, kEvContextCreated, "context created",
                   {fn, ctx, sqe.cdw[0]});
    return ok(ctx);
}

std::uint32_t ResourceCommands::teardown(std::uint32_t ctx, std::uint32_t& allocs,
                                         std::uint32_t& queues)
{
    // Queues first: their engines stop (finishing the packet in progress) before the memory
    // they may touch is unmapped.
    queues = queues_.destroy_context(ctx);
    allocs = mem_.destroy_context(ctx);
    return allocs + queues;
}

Completion ResourceCommands::destroy_context(std::uint32_t fn, const jal_admin_sqe& sqe)
{
    const std::uint32_t ctx = sqe.cdw[0];
    const std::uint32_t status = mem_.check_owner(fn, ctx);
    if (status != JAL_STATUS_OK) return fail(status);
    std::uint32_t allocs = 0, queues = 0;
    const std::uint32_t held = teardown(ctx, allocs, queues);
    publish_contexts(fn);
    journal_.event(JAL_SRC_ADMIN, JAL_SEV_INFO, kEvContextDestroyed, "context destroyed",
                   {fn, ctx, allocs, queues});
    return ok(held);
}

Completion ResourceCommands::alloc_memory(std::uint32_t fn, const jal_admin_sqe& sqe,
                                          ReplyWriter& out)
{
    const std::uint32_t ctx = sqe.cdw[0];
    std::uint32_t status = mem_.check_owner(fn, ctx);
    if (status != JAL_STATUS_OK) return fail(status);
    memory::AllocRequest req;
    req.bytes = cdw64(sqe, 1);
    req.placement = sqe.cdw[3];
    req.slice_mask = cdw64(sqe, 4);
    req.align_log2 = sqe.cdw[6];
    // The platform's per-client share of device memory (0: the whole chip).
    if (const std::uint32_t limit = hal::read32(JAL_HOSTIF_FN_MEM_LIMIT); limit != 0) {
        const std::uint64_t held = mem_.pages_of(fn);
        req.page_budget = held < limit ? limit - held : 0;
    }
    jal_mem_alloc_reply reply{};
    status = mem_.alloc(ctx, req, reply);
    if (status != JAL_STATUS_OK) return fail(status);
    out.put(&reply, sizeof reply);
    if (out.finish() != JAL_STATUS_OK) {
        // The host never learns the address: do not leave the memory behind.
        (void)mem_.free(ctx, reply.va);
        return fail(JAL_STATUS_DMA_FAULT);
    }
    return ok(out.written());
}

Completion ResourceCommands::free_memory(std::uint32_t fn, const jal_admin_sqe& sqe)
{
    const std::uint32_t ctx = sqe.cdw[0];
    std::uint32_t status = mem_.check_owner(fn, ctx);
    if (status == JAL_STATUS_OK) status = mem_.free(ctx, cdw64(sqe, 1));
    return status == JAL_STATUS_OK ? ok() : fail(status);
}

Completion ResourceCommands::export_memory(std::uint32_t fn, const jal_admin_sqe& sqe,
                                           ReplyWriter& out)
{
    const std::uint32_t ctx = sqe.cdw[0];
    std::uint32_t status = mem_.check_owner(fn, ctx);
    if (status != JAL_STATUS_OK) return fail(status);
    jal_mem_export_reply reply{};
    status = mem_.export_memory(ctx, cdw64(sqe, 1), cdw64(sqe, 3), reply);
    if (status != JAL_STATUS_OK) return fail(status);
    out.put(&reply, sizeof reply);
    if (out.finish() != JAL_STATUS_OK) {
        // The host never learns the key: nobody can use the export, so take it back.
        mem_.unexport(ctx, reply.handle);
        return fail(JAL_STATUS_DMA_FAULT);
    }
    return ok(reply.handle);
}

Completion ResourceCommands::import_peer(std::uint32_t fn, const jal_admin_sqe& sqe,
                                         ReplyWriter& out)
{
    const std::uint32_t ctx = sqe.cdw[0];
    std::uint32_t status = mem_.check_owner(fn, ctx);
    if (status != JAL_STATUS_OK) return fail(status);
    if (sqe.cdw[6] || sqe.cdw[7] || sqe.cdw[8] || sqe.cdw[9]) return fail(JAL_STATUS_INVALID_FIELD);
    jal_mem_alloc_reply reply{};
    status = mem_.import_peer(ctx, sqe.cdw[1], sqe.cdw[2], cdw64(sqe, 3), sqe.cdw[5], reply);
    if (status != JAL_STATUS_OK) return fail(status);
    out.put(&reply, sizeof reply);
    if (out.finish() != JAL_STATUS_OK) {
        (void)mem_.free(ctx, reply.va);
        return fail(JAL_STATUS_DMA_FAULT);
    }
    return ok(out.written());
}

Completion ResourceCommands::get_placement(std::uint32_t fn, const jal_admin_sqe& sqe,
                                           ReplyWriter& out)
{
    const std::uint32_t ctx = sqe.cdw[0];
    const std::uint32_t status = mem_.check_owner(fn, ctx);
    if (status != JAL_STATUS_OK) return fail(status);
    const memory::Allocation* a = mem_.find(ctx, cdw64(sqe, 1));
    if (a == nullptr) return fail(JAL_STATUS_INVALID_FIELD);
    const std::uint32_t first = sqe.cdw[3];
    const std::uint32_t pages = a->pages, replicas = a->replicas;
    if (first >= pages) return fail(JAL_STATUS_OUT_OF_RANGE);

    const std::uint64_t available = std::uint64_t{pages - first} * replicas;
    const std::uint32_t fits =
        (sqe.data_len - static_cast<std::uint32_t>(sizeof(jal_placement_header))) /
        static_cast<std::uint32_t>(sizeof(jal_page_placement));
    const auto count = static_cast<std::uint32_t>(available < fits ? available : fits);

    jal_placement_header hdr{};
    hdr.va = a->va();
    hdr.first_page = first;
    hdr.count = count;
    hdr.pages = pages;
    hdr.replicas = replicas;
    out.put(&hdr, sizeof hdr);
    jal_page_placement entry{};
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::uint32_t s = mem_.placement(*a, first + i / replicas, i % replicas, entry);
        if (s != JAL_STATUS_OK) {
            journal_.event(JAL_SRC_ADMIN, JAL_SEV_ERROR, kEvMmuError, "mmu lookup failed",
                           {JAL_MMU_CMD_LOOKUP, s, ctx, first + i / replicas});
            return fail(JAL_STATUS_INTERNAL);
        }
        if (!out.put(&entry, sizeof entry)) break;
    }
    if (out.finish() != JAL_STATUS_OK) return fail(JAL_STATUS_DMA_FAULT);
    return ok(out.written());
}

Completion ResourceCommands::create_queue(std::uint32_t fn, const jal_admin_sqe& sqe)
{
    queues::cp::QueueConfig cfg;
    cfg.ctx = sqe.cdw[0];
    cfg.fn = fn;
    cfg.ring = cdw64(sqe, 1);
    cfg.size = sqe.cdw[3];
    cfg.rptr = cdw64(sqe, 4);
    cfg.vector = sqe.cdw[6];
    const std::uint32_t status = mem_.check_owner(fn, cfg.ctx);
    if (status != JAL_STATUS_OK) return fail(status);
    cfg.space = space_[cfg.ctx];
    const bool pow2 = cfg.size != 0 && (cfg.size & (cfg.size - 1)) == 0;
    if (cfg.ring == 0 || cfg.ring % JAL_PACKET_SIZE != 0 || !pow2 ||
        cfg.size < JAL_QUEUE_SIZE_MIN || cfg.size > JAL_QUEUE_SIZE_MAX || cfg.rptr == 0 ||
        cfg.rptr % 8 != 0 || cfg.vector >= JAL_MSIX_VECTORS)
        return fail(JAL_STATUS_INVALID_FIELD);
    const std::uint32_t limit = function_limit(16);
    if (limit && queues_of(fn) >= limit) return fail(JAL_STATUS_BUSY);
    std::uint32_t qid = 0;
    const std::uint32_t created = queues_.create(cfg, qid);
    if (created != JAL_STATUS_OK) return fail(created);
    return ok(qid);
}

Completion ResourceCommands::queue_command(std::uint32_t fn, const jal_admin_sqe& sqe,
                                           ReplyWriter& out)
{
    const std::uint32_t qid = sqe.cdw[0];
    const std::uint32_t status = queues_.check_owner(fn, qid);
    if (status != JAL_STATUS_OK) return fail(status);
    switch (sqe.opcode) {
    case JAL_ADMIN_DESTROY_QUEUE:
        queues_.destroy(qid);
        return ok();
    case JAL_ADMIN_RESET_QUEUE:
        queues_.reset(qid);
        return ok();
    default:
        break;
    }
    jal_queue_status st{};
    if (queues_.status(qid, st))
        journal_.event(JAL_SRC_ADMIN, JAL_SEV_WARN, kEvUserQueueError, "user queue errors",
                       {qid, st.context, st.errors, st.last_error | st.state << 24});
    out.put(&st, sizeof st);
    if (out.finish() != JAL_STATUS_OK) return fail(JAL_STATUS_DMA_FAULT);
    return ok(out.written());
}

static_assert(JAL_USAGE_FUNCTIONS == JAL_MGMT_MAX_FUNCS);

Completion ResourceCommands::usage(ReplyWriter& out) const
{
    // Logical slice l is the l-th enabled physical slice.
    std::array<std::uint8_t, JAL_NUM_SLICES> phys{};
    std::uint32_t slices = 0;
    for (std::uint32_t s = 0; s < JAL_NUM_SLICES; ++s)
        if ((mem_.enabled_slices() >> s) & 1) phys[slices++] = static_cast<std::uint8_t>(s);
    const memory::PageAllocator& pages = mem_.pages();
    std::uint32_t total = 0;
    for (std::uint32_t l = 0; l < slices; ++l) total += pages.capacity(phys[l]);
    const std::uint32_t head[8] = {
        sizeof(jal_usage), JAL_PAGE_SIZE,           slices, mem_.live_contexts(),
        queues_.live(),    mem_.live_allocations(), total,  pages.free_pages_total()};
    out.put(head, sizeof head);
    for (int pass = 0; pass < 2; ++pass)
        for (std::uint32_t l = 0; l < JAL_NUM_SLICES; ++l) {
            const std::uint16_t n =
                static_cast<std::uint16_t>(l >= slices ? 0
                                           : pass == 0 ? pages.capacity(phys[l])
                                                       : pages.free_pages(phys[l]));
            out.put(&n, sizeof n);
        }
    const std::uint64_t reserved[4] = {};
    out.put(reserved, sizeof reserved);
    jal_usage_function f;
    for (std::uint32_t fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn) {
        f = jal_usage_function{};
        f.function = fn;
        f.present = (present_ >> fn) & 1;
        f.contexts = contexts_of(fn);
        f.queues = queues_of(fn);
        for (std::uint32_t ctx = 1; ctx < JAL_MAX_CONTEXTS; ++ctx)
            if (mem_.owner(ctx) == fn) f.allocations += mem_.allocations_of(ctx);
        f.pages = static_cast<std::uint32_t>(mem_.pages_of(fn));
        for (std::uint32_t l = 0; l < slices; ++l)
            f.slice_pages[l] = static_cast<std::uint16_t>(mem_.slice_pages_of(fn, phys[l]));
        out.put(&f, sizeof f);
    }
    if (out.finish() != JAL_STATUS_OK) return fail(JAL_STATUS_DMA_FAULT);
    return ok(out.written());
}

std::uint32_t ResourceCommands::release_function(std::uint32_t fn)
{
    std::uint32_t contexts = 0, allocs = 0, queues = 0;
    for (std::uint32_t ctx = 1; ctx < JAL_MAX_CONTEXTS; ++ctx) {
        if (mem_.owner(ctx) != fn) continue;
        std::uint32_t a = 0, q = 0;
        (void)teardown(ctx, a, q);
        ++contexts;
        allocs += a;
        queues += q;
    }
    (void)queues::cp::window(JAL_CP_WIN_CLEAR_FUNC, fn, 0, 0, 0);
    publish_contexts(fn);
    if (contexts)
        journal_.event(JAL_SRC_ADMIN, JAL_SEV_WARN, kEvFunctionCleanup, "cleaned up after function",
                       {fn, contexts, allocs, queues});
    return contexts;
}

void ResourceCommands::functions_changed(std::uint32_t present_mask)
{
    present_mask &= (1u << JAL_MGMT_MAX_FUNCS) - 1;
    for (std::uint32_t fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn) {
        const std::uint32_t bit = 1u << fn;
        if (!(present_mask & bit)) {
            (void)release_function(fn);
            have_generation_ &= ~bit;
            continue;
        }
        const std::uint32_t generation = generation_of(fn);
        const bool new_client =
            !(present_ & bit) || ((have_generation_ & bit) && generation != generation_[fn]);
        if (new_client) (void)release_function(fn);
        generation_[fn] = generation;
        have_generation_ |= bit;
    }
    present_ = present_mask;
}

}  // namespace jal::fw::host
