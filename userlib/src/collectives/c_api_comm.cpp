// The C API's communicators (jal_comm_*, API 1.5) over jal::collectives::Communicator.
#include <jal/collectives.hpp>
#include <jal/jal.h>

#include <vector>

#include "../runtime/c_api_support.hpp"

using namespace jal::runtime::capi;
using jal::collectives::Communicator;

struct jal_comm_s {
    std::unique_ptr<Communicator> comm;
};

namespace {

template <typename F>
jal_status_t run(jal_comm_t comm, F&& f)
{
    REQUIRE(comm, "comm is NULL");
    return call(std::forward<F>(f));
}

}  // namespace

extern "C" {

jal_status_t jal_comm_create(const jal_comm_rank_t* ranks, uint32_t count,
                             const jal_comm_options_t* options_in, jal_comm_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_comm_create");
    REQUIRE(ranks && out, "ranks or out is NULL");
    REQUIRE(count >= 1, "count is 0");
    REQUIRE(!options_in || struct_ok(options_in), "options->struct_size is not set");
    const jal_comm_options_t o = copy_in(options_in);
    REQUIRE(o.reserved == 0, "options->reserved must be zero");
    return call([&] {
        std::vector<jal::collectives::Rank> r;
        for (uint32_t i = 0; i < count; ++i)
            r.emplace_back(ranks[i].device, ranks[i].context, ranks[i].queue);
        jal::collectives::Options opt;
        if (o.staging_bytes) opt.staging_bytes = o.staging_bytes;
        if (o.timeout_us) opt.timeout = std::chrono::microseconds(o.timeout_us);
        opt.slice_mask = o.slice_mask;
        *out = new jal_comm_s{std::make_unique<Communicator>(std::move(r), opt)};
    });
}

jal_status_t jal_comm_destroy(jal_comm_t comm)
{
    delete comm;
    return JAL_STATUS_OK;
}

jal_status_t jal_comm_size(jal_comm_t comm, uint32_t* size)
{
    REQUIRE(comm && size, "comm or size is NULL");
    *size = comm->comm->size();
    return JAL_STATUS_OK;
}

jal_status_t jal_comm_all_reduce(jal_comm_t comm, uint32_t rank, uint64_t send, uint64_t recv,
                                 uint64_t count, uint32_t dtype, jal_signal_t done)
{
    return run(comm, [&] {
        comm->comm->all_reduce(rank, send, recv, count, static_cast<jal_dtype>(dtype), done);
    });
}

jal_status_t jal_comm_reduce_scatter(jal_comm_t comm, uint32_t rank, uint64_t send, uint64_t recv,
                                     uint64_t recv_count, uint32_t dtype, jal_signal_t done)
{
    return run(comm, [&] {
        comm->comm->reduce_scatter(rank, send, recv, recv_count, static_cast<jal_dtype>(dtype),
                                   done);
    });
}

jal_status_t jal_comm_all_gather(jal_comm_t comm, uint32_t rank, uint64_t send, uint64_t recv,
                                 uint64_t send_count, uint32_t dtype, jal_signal_t done)
{
    return run(comm, [&] {
        comm->comm->all_gather(rank, send, recv, send_count, static_cast<jal_dtype>(dtype), done);
    });
}

jal_status_t jal_comm_all_to_all(jal_comm_t comm, uint32_t rank, uint64_t send, uint64_t recv,
                                 uint64_t count, uint32_t dtype, jal_signal_t done)
{
    return run(comm, [&] {
        comm->comm->all_to_all(rank, send, recv, count, static_cast<jal_dtype>(dtype), done);
    });
}

}  // extern "C"
