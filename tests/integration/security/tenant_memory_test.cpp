// One tenant never reads another's device memory: every page the firmware frees (an explicit
// free, or a client that exits holding it) is scrubbed before it can be handed out again;
// and one client cannot take more device memory than --max-memory-per-client
// (docs/security.md, "Device memory").
#include <gtest/gtest.h>

#include <jal/jal.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "fixture/emu_process.hpp"

namespace {

using namespace std::chrono_literals;
using namespace jal::runtime;

constexpr uint64_t kPage = JAL_PAGE_SIZE;
constexpr uint64_t kSlicePages = 1728;  // 216 GiB / 64 slices / 2 MiB
constexpr uint64_t kSlice0 = 1;
constexpr size_t kMark = 4096;  // bytes at the start of every page that the test writes

// Copies the first kMark bytes of every page of `mem` to or from consecutive kMark-byte
// pieces of `host`, one copy per page, and waits for all of them.
void copy_page_heads(const Device& dev, Queue& q, const Memory& mem, const HostBuffer& host,
                     jal_copy_dir dir)
{
    const uint64_t pages = mem.size() / kPage;
    Signal done(dev, static_cast<int64_t>(pages));  // each completion takes one off
    for (uint64_t p = 0; p < pages; ++p) {
        if (dir == JAL_COPY_H2D)
            q.copy_to_device(mem.va() + p * kPage, host, p * kMark, kMark, &done);
        else
            q.copy_to_host(host, p * kMark, mem.va() + p * kPage, kMark, &done);
    }
    const auto r = done.wait_zero(120s);
    ASSERT_TRUE(r.satisfied) << "copies still pending";
    ASSERT_EQ(r.status, JAL_STATUS_OK);
}

// Allocates all of slice 0 for `dev`, retrying while the firmware has not yet reclaimed a
// departed client's pages (it does so when it notices the client went away).
std::unique_ptr<Memory> all_of_slice0(const Context& ctx)
{
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (auto backoff = 1ms;; backoff = std::min(backoff * 2, 100ms)) {
        try {
            return std::make_unique<Memory>(ctx, kSlicePages * kPage, JAL_PLACE_SLICE, kSlice0);
        } catch (const jal::Error& e) {
            if (e.status() != JAL_STATUS_NO_MEMORY || std::chrono::steady_clock::now() > deadline)
                throw;
        }
        std::this_thread::sleep_for(backoff);  // each attempt is an admin command
    }
}

// How many pages of tenant B's view of slice 0 still hold anything but zeros.
uint64_t dirty_pages_seen_by_next_tenant(const std::string& socket_dir)
{
    Device dev(0, socket_dir);
    Context ctx(dev);
    Queue q(ctx, 4096);
    const auto mem = all_of_slice0(ctx);
    HostBuffer back(dev, kSlicePages * kMark);
    std::memset(back.data(), 0x5a, back.size());  // so an uncopied head also counts
    copy_page_heads(dev, q, *mem, back, JAL_COPY_D2H);
    uint64_t dirty = 0;
    for (uint64_t p = 0; p < kSlicePages; ++p) {
        const auto* head = back.data() + p * kMark;
        dirty += std::any_of(head, head + kMark, [](std::byte b) { return b != std::byte{0}; });
    }
    return dirty;
}

// Tenant A fills slice 0 with its secret; with `leave`, exits without freeing anything.
void tenant_a(const std::string& socket_dir, bool leave)
{
    Device dev(0, socket_dir);
    Context ctx(dev);
    Queue q(ctx, 4096);
    Memory mem(ctx, kSlicePages * kPage, JAL_PLACE_SLICE, kSlice0);
    HostBuffer secret(dev, kSlicePages * kMark);
    std::memset(secret.data(), 0xa5, secret.size());
    copy_page_heads(dev, q, mem, secret, JAL_COPY_H2D);
    if (leave) ::_exit(::testing::Test::HasFailure() ? 3 : 0);  // nothing freed or destroyed
}

TEST(TenantMemory, FreedPagesReadAsZeroForTheNextTenant)
{
    jal::test::EmuProcess emu;
    tenant_a(emu.socket_dir(), false);  // frees on the way out
    EXPECT_EQ(dirty_pages_seen_by_next_tenant(emu.socket_dir()), 0u)
        << "pages of slice 0 still held the previous tenant's bytes";
    EXPECT_EQ(emu.stop(), "");
}

TEST(TenantMemory, PagesOfAClientThatExitsHoldingThemReadAsZero)
{
    jal::test::EmuProcess emu;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        tenant_a(emu.socket_dir(), true);
        ::_exit(4);  // not reached
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    EXPECT_EQ(dirty_pages_seen_by_next_tenant(emu.socket_dir()), 0u)
        << "pages of slice 0 still held the departed tenant's bytes";
    EXPECT_EQ(emu.stop(), "");
}

TEST(TenantMemory, OneClientCannotTakeMoreThanItsShare)
{
    jal::test::EmuOptions options;
    options.extra_args = {"--max-memory-per-client", "1"};  // GiB: 512 pages
    jal::test::EmuProcess emu(options);
    Device greedy(0, emu.socket_dir());
    Context a(greedy), b(greedy);
    Memory half(a, 256 * kPage, JAL_PLACE_REPLICATED, 0b11);  // 512 pages with its replicas
    try {
        Memory more(b, kPage, JAL_PLACE_SLICE, kSlice0);
        ADD_FAILURE() << "a page beyond the client's share was given";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_NO_MEMORY) << e.what();
    }
    // Another client has its own share, and giving memory back makes room again.
    Device other(0, emu.socket_dir());
    Context c(other);
    EXPECT_NO_THROW(Memory(c, 512 * kPage, JAL_PLACE_INTERLEAVED, ~uint64_t{0}));
    half.free();
    EXPECT_NO_THROW(Memory(b, 512 * kPage, JAL_PLACE_SLICE, kSlice0));
    EXPECT_EQ(emu.stop(), "");
}

}  // namespace
