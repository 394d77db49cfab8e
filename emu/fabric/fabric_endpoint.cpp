#include "emu/fabric/fabric_endpoint.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace jal::emu::fabric {

namespace {

constexpr unsigned kApiVersion = FI_VERSION(1, 17);
constexpr std::size_t kBounceBytes = 64 * 1024;  // send/recv go through it

[[noreturn]] void fail(const std::string& what, int ret)
{
    const int e = ret < 0 ? -ret : ret;
    throw FabricError(what + ": " + fi_strerror(e), e);
}
void check(int ret, const std::string& what)
{
    if (ret < 0) fail(what, ret);
}

// libfabric's name of the provider stack a user's short name means.
std::string provider_stack(const std::string& name)
{
    if (name == "tcp") return "tcp;ofi_rxm";  // RDM over TCP: the RxM layer on tcp
    return name;
}

fi_info* find_provider(const EndpointOptions& o)
{
    fi_info* hints = fi_allocinfo();
    if (!hints) throw FabricError("fi_allocinfo: out of memory", FI_ENOMEM);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA;
    // Every registration mode a provider may ask for is handled below.
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    // A completed write or send has reached the peer, not only left this buffer.
    hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    hints->fabric_attr->prov_name = strdup(provider_stack(o.provider).c_str());
    fi_info* info = nullptr;
    const char* node = o.node.empty() ? nullptr : o.node.c_str();
    const char* service = o.service.empty() ? nullptr : o.service.c_str();
    const int ret =
        fi_getinfo(kApiVersion, node, service, node || service ? FI_SOURCE : 0, hints, &info);
    fi_freeinfo(hints);
    if (ret == -FI_ENODATA)
        throw FabricError("no libfabric provider \"" + o.provider +
                              "\" with reliable datagrams, messages and RMA on this machine "
                              "(providers: tcp, shm, or a name fi_info lists)",
                          FI_ENODATA);
    check(ret, "fi_getinfo(" + o.provider + ")");
    return info;
}

template <class Fid>
void close_fid(Fid*& f)
{
    if (f) fi_close(&f->fid);
    f = nullptr;
}

}  // namespace

FabricError::FabricError(const std::string& what, int fi_errno)
    : std::runtime_error(what), errno_(fi_errno)
{}

struct FabricEndpoint::Registration {
    std::uint8_t* base;
    std::size_t size;
    fid_mr* mr;
};

FabricEndpoint::FabricEndpoint(const EndpointOptions& o) : timeout_(o.timeout)
{
    info_ = find_provider(o);
    provider_ = info_->fabric_attr->prov_name;
    mr_mode_ = static_cast<std::uint64_t>(info_->domain_attr->mr_mode);
    try {
        check(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
        check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
        fi_av_attr av{};
        av.type = FI_AV_TABLE;
        check(fi_av_open(domain_, &av, &av_, nullptr), "fi_av_open");
        fi_cq_attr cq{};
        cq.format = FI_CQ_FORMAT_MSG;
        cq.size = o.completion_queue;
        check(fi_cq_open(domain_, &cq, &cq_, nullptr), "fi_cq_open");
        check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
        check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)");
        check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
        check(fi_enable(ep_), "fi_enable");
        bounce_.resize(kBounceBytes);
        register_memory(bounce_.data(), bounce_.size(), false);
    } catch (...) {
        close_all();
        throw;
    }
}

FabricEndpoint::~FabricEndpoint()
{
    close_all();
}

void FabricEndpoint::close_all()
{
    close_fid(ep_);
    for (auto& r : regions_) close_fid(r->mr);
    regions_.clear();
    close_fid(cq_);
    close_fid(av_);
    close_fid(domain_);
    close_fid(fabric_);
    if (info_) fi_freeinfo(info_);
    info_ = nullptr;
}

FabricAddress FabricEndpoint::address() const
{
    std::size_t len = 0;
    int ret = fi_getname(&ep_->fid, nullptr, &len);
    if (ret != -FI_ETOOSMALL) check(ret, "fi_getname");
    FabricAddress a(len);
    check(fi_getname(&ep_->fid, a.data(), &len), "fi_getname");
    a.resize(len);
    return a;
}

std::uint64_t FabricEndpoint::add_peer(const FabricAddress& address)
{
    fi_addr_t peer = FI_ADDR_UNSPEC;
    const int n = fi_av_insert(av_, address.data(), 1, &peer, 0, nullptr);
    if (n != 1) fail("fi_av_insert: the peer's address was not accepted", n < 0 ? n : -FI_EINVAL);
    return peer;
}

std::uint64_t FabricEndpoint::add_peer(const std::string& node, const std::string& service)
{
    fi_addr_t peer = FI_ADDR_UNSPEC;
    const int n = fi_av_insertsvc(av_, node.c_str(), service.empty() ? nullptr : service.c_str(),
                                  &peer, 0, nullptr);
    if (n != 1)
        fail("fi_av_insertsvc(" + node + (service.empty() ? "" : ":" + service) + ")",
             n < 0 ? n : -FI_EINVAL);
    return peer;
}

RemoteRegion FabricEndpoint::register_memory(void* base, std::size_t size, bool remote)
{
    std::uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE;
    if (remote) access |= FI_REMOTE_READ | FI_REMOTE_WRITE;
    auto r = std::make_unique<Registration>();
    r->base = static_cast<std::uint8_t*>(base);
    r->size = size;
    const std::uint64_t requested_key = regions_.size() + 1;  // unless the provider picks
    check(fi_mr_reg(domain_, base, size, access, 0, requested_key, 0, &r->mr, nullptr),
          "fi_mr_reg");
    if (mr_mode_ & FI_MR_ENDPOINT) {
        check(fi_mr_bind(r->mr, &ep_->fid, 0), "fi_mr_bind");
        check(fi_mr_enable(r->mr), "fi_mr_enable");
    }
    RemoteRegion out;
    out.addr = (mr_mode_ & FI_MR_VIRT_ADDR) ? reinterpret_cast<std::uint64_t>(base) : 0;
    out.key = fi_mr_key(r->mr);
    out.size = size;
    regions_.push_back(std::move(r));
    return out;
}

void* FabricEndpoint::descriptor(const void* p, std::size_t size)
{
    const auto* b = static_cast<const std::uint8_t*>(p);
    for (const auto& r : regions_)
        if (b >= r->base && b + size <= r->base + r->size) return fi_mr_desc(r->mr);
    if (mr_mode_ & FI_MR_LOCAL)
        throw FabricError("provider " + provider_ +
                              " needs local buffers registered: register_memory() first",
                          FI_EINVAL);
    return nullptr;
}

void FabricEndpoint::wait_completion(const char* what, std::size_t* received)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
        fi_cq_msg_entry e{};
        const ssize_t n = fi_cq_read(cq_, &e, 1);
        if (n == 1) {
            if (received) *received = e.len;
            return;
        }
        if (n == -FI_EAVAIL) {
            fi_cq_err_entry err{};
            fi_cq_readerr(cq_, &err, 0);
            const char* text = fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0);
            throw FabricError(std::string(what) + ": " + fi_strerror(err.err) +
                                  (text ? std::string(" (") + text + ")" : ""),
                              err.err);
        }
        if (n != -FI_EAGAIN) fail(std::string(what) + ": fi_cq_read", static_cast<int>(n));
        if (std::chrono::steady_clock::now() > deadline)
            throw FabricError(std::string(what) + ": no completion within " +
                                  std::to_string(timeout_.count()) + " ms",
                              FI_ETIMEDOUT);
        std::this_thread::yield();
    }
}

// Posts `op` (returns an fi_* status), retrying while the provider is busy (FI_EAGAIN: it
// makes progress when the completion queue is read).
template <class Post>
void FabricEndpoint::post(const char* what, Post&& op)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
        const ssize_t ret = op();
        if (ret == 0) return;
        if (ret != -FI_EAGAIN) fail(what, static_cast<int>(ret));
        if (std::chrono::steady_clock::now() > deadline)
            throw FabricError(std::string(what) + ": the provider stayed busy", FI_ETIMEDOUT);
        fi_cq_msg_entry e{};
        const ssize_t n = fi_cq_read(cq_, &e, 1);  // progress only: nothing is outstanding
        if (n == 1) fail(std::string(what) + ": an unexpected completion", -FI_EOTHER);
    }
}

void FabricEndpoint::progress()
{
    fi_cq_msg_entry e{};
    const ssize_t n = fi_cq_read(cq_, &e, 1);
    if (n == 1) fail("progress: an unexpected completion", -FI_EOTHER);
    if (n != -FI_EAGAIN && n != -FI_EAVAIL) fail("progress: fi_cq_read", static_cast<int>(n));
    if (n == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        fi_cq_readerr(cq_, &err, 0);
        throw FabricError(std::string("progress: ") + fi_strerror(err.err), err.err);
    }
}

void FabricEndpoint::send(std::uint64_t peer, const void* data, std::size_t size)
{
    if (size > bounce_.size())
        throw FabricError("send: " + std::to_string(size) + " bytes, more than a message's " +
                              std::to_string(bounce_.size()),
                          FI_EMSGSIZE);
    std::memcpy(bounce_.data(), data, size);
    void* desc = descriptor(bounce_.data(), size);
    post("fi_send", [&] { return fi_send(ep_, bounce_.data(), size, desc, peer, nullptr); });
    wait_completion("send");
}

std::size_t FabricEndpoint::recv(void* data, std::size_t capacity)
{
    const std::size_t cap = std::min(capacity, bounce_.size());
    void* desc = descriptor(bounce_.data(), cap);
    post("fi_recv",
         [&] { return fi_recv(ep_, bounce_.data(), cap, desc, FI_ADDR_UNSPEC, nullptr); });
    std::size_t got = 0;
    wait_completion("recv", &got);
    std::memcpy(data, bounce_.data(), got);
    return got;
}

void FabricEndpoint::write(std::uint64_t peer, const void* local, std::size_t size,
                           const RemoteRegion& remote, std::uint64_t offset)
{
    if (offset > remote.size || size > remote.size - offset)
        throw FabricError("write: past the end of the peer's region", FI_EINVAL);
    void* desc = descriptor(local, size);
    post("fi_write", [&] {
        return fi_write(ep_, local, size, desc, peer, remote.addr + offset, remote.key, nullptr);
    });
    wait_completion("write");
}

void FabricEndpoint::read(std::uint64_t peer, void* local, std::size_t size,
                          const RemoteRegion& remote, std::uint64_t offset)
{
    if (offset > remote.size || size > remote.size - offset)
        throw FabricError("read: past the end of the peer's region", FI_EINVAL);
    void* desc = descriptor(local, size);
    post("fi_read", [&] {
        return fi_read(ep_, local, size, desc, peer, remote.addr + offset, remote.key, nullptr);
    });
    wait_completion("read");
}

namespace {
// 0 posted, false busy; anything else throws.
bool posted(ssize_t ret, const char* what)
{
    if (ret == 0) return true;
    if (ret == -FI_EAGAIN) return false;
    fail(what, static_cast<int>(ret));
}
}  // namespace

bool FabricEndpoint::post_send(std::uint64_t peer, const void* data, std::size_t size,
                               void* context)
{
    void* desc = descriptor(data, size);
    return posted(fi_send(ep_, data, size, desc, peer, context), "fi_send");
}

bool FabricEndpoint::post_recv(void* data, std::size_t capacity, void* context)
{
    void* desc = descriptor(data, capacity);
    return posted(fi_recv(ep_, data, capacity, desc, FI_ADDR_UNSPEC, context), "fi_recv");
}

bool FabricEndpoint::post_write(std::uint64_t peer, const void* local, std::size_t size,
                                const RemoteRegion& remote, std::uint64_t offset, void* context)
{
    if (offset > remote.size || size > remote.size - offset)
        throw FabricError("write: past the end of the peer's region", FI_EINVAL);
    void* desc = descriptor(local, size);
    return posted(fi_write(ep_, local, size, desc, peer, remote.addr + offset, remote.key, context),
                  "fi_write");
}

bool FabricEndpoint::post_read(std::uint64_t peer, void* local, std::size_t size,
                               const RemoteRegion& remote, std::uint64_t offset, void* context)
{
    if (offset > remote.size || size > remote.size - offset)
        throw FabricError("read: past the end of the peer's region", FI_EINVAL);
    void* desc = descriptor(local, size);
    return posted(fi_read(ep_, local, size, desc, peer, remote.addr + offset, remote.key, context),
                  "fi_read");
}

std::size_t FabricEndpoint::poll(std::vector<Completion>& out, std::size_t max)
{
    std::size_t got = 0;
    while (got < max) {
        fi_cq_msg_entry e{};
        const ssize_t n = fi_cq_read(cq_, &e, 1);
        if (n == 1) {
            out.push_back({e.op_context, e.len, 0, {}});
        } else if (n == -FI_EAVAIL) {
            fi_cq_err_entry err{};
            if (fi_cq_readerr(cq_, &err, 0) != 1) break;
            const char* text = fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0);
            out.push_back(
                {err.op_context, err.len, err.err ? err.err : FI_EOTHER,
                 std::string(fi_strerror(err.err)) + (text ? std::string(" (") + text + ")" : "")});
        } else if (n == -FI_EAGAIN) {
            break;
        } else {
            fail("fi_cq_read", static_cast<int>(n));
        }
        ++got;
    }
    return got;
}

}  // namespace jal::emu::fabric
