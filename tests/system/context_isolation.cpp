// Context isolation (issue 17, part 7): one context cannot read or write another context's
// device memory, by copy packets or by tile programs it crafts (TLOAD, TSTORE, TGATHER,
// scalar LD and ST, a code object or an argument buffer in the other context), and neither
// can another process. The same program runs against jal-emu directly (a ctest of label
// security) and, in the guest of the system test, through jal.ko.
//
//   jal-system-isolation            context A holds a secret; context B and a second
//                                   process try to reach it; one line per check
//   jal-system-isolation --probe VA (the second process) its own context tries VA
//
// Prints "isolation <check>: PASS" or "isolation <check>: FAIL (<why>)" per check and exits
// 0 only if every check passed.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <jal/error.hpp>
#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>

extern char** environ;

namespace {

using jal::kernels::Args;
using jal::kernels::Builder;
using jal::kernels::CodeObject;
using jal::kernels::DispatchOptions;
using jal::kernels::Launcher;
using jal::kernels::Program;
using jal::kernels::Q;
using jal::kernels::T;
using jal::kernels::X;
using jal::runtime::Context;
using jal::runtime::Device;
using jal::runtime::HostBuffer;
using jal::runtime::Memory;
using jal::runtime::Queue;
using jal::runtime::Signal;

constexpr uint64_t kBytes = 4096;
constexpr uint32_t kCols = 64;  // one F32 row of 256 bytes: what the tile programs move
constexpr unsigned char kSecret = 0x5a, kMine = 0x11;

int failures = 0;

void report(const std::string& check, bool ok, const std::string& why = {})
{
    if (ok) {
        std::printf("isolation %s: PASS\n", check.c_str());
    } else {
        std::printf("isolation %s: FAIL (%s)\n", check.c_str(), why.c_str());
        failures++;
    }
    std::fflush(stdout);
}

std::string status_name(uint32_t st)
{
    return jal_status_string(static_cast<jal_status_t>(st));
}

// A tile of one F32 row at L1 offset 0, its DMA semaphore and a packed stride.
struct RowTile {
    T t;
    Q q;
    X stride;
};
RowTile row_tile(Builder& b)
{
    RowTile r{b.t(), b.q(), b.x()};
    b.l1_alloc(kCols * 4 + 64);
    X l1 = b.x(), rows = b.x(), cols = b.x();
    b.li(l1, 0), b.li(rows, 1), b.li(cols, kCols), b.li(r.stride, 0);
    b.tdesc(r.t, l1, rows, cols, JAL_DT_F32);
    b.free(l1), b.free(rows), b.free(cols);
    return r;
}

// The tile's row TSTOREd to `dst`, waited for, and the kernel's end.
CodeObject store_and_finish(Builder& b, const RowTile& r, X dst)
{
    b.tstore(r.t, dst, r.stride, r.q);
    b.wait(r.q);
    b.end();
    return b.finish();
}

// TLOAD from `src` into L1, TSTORE to `dst`.
CodeObject tload_kernel()
{
    Builder b("iso_tload");
    X src = b.arg("src", JAL_ARG_ADDRESS), dst = b.arg("dst", JAL_ARG_ADDRESS);
    RowTile r = row_tile(b);
    b.tload(r.t, src, r.stride, r.q);
    b.wait(r.q);
    return store_and_finish(b, r, dst);
}

// A row of 1.0 from L1, TSTOREd to `dst`.
CodeObject tstore_kernel()
{
    Builder b("iso_tstore");
    X dst = b.arg("dst", JAL_ARG_ADDRESS);
    RowTile r = row_tile(b);
    b.vfill(r.t, 1.0f);
    return store_and_finish(b, r, dst);
}

// Row 0 of the table at `table` gathered into L1 (TGATHER), then TSTOREd to `dst`.
CodeObject tgather_kernel()
{
    Builder b("iso_tgather");
    X table = b.arg("table", JAL_ARG_ADDRESS), dst = b.arg("dst", JAL_ARG_ADDRESS);
    RowTile r = row_tile(b);
    T idx = b.t();
    X at = b.x(), one = b.x(), row_bytes = b.x();
    b.li(at, b.l1_alloc(64)), b.li(one, 1), b.li(row_bytes, kCols * 4);
    b.tdesc(idx, at, one, one, JAL_DT_I32);
    b.vfill_i32(idx, 0);
    b.tgather(r.t, table, row_bytes, idx, r.q);
    b.wait(r.q);
    return store_and_finish(b, r, dst);
}

// Scalar: *dst = *src.
CodeObject ld_kernel()
{
    Builder b("iso_ld");
    X src = b.arg("src", JAL_ARG_ADDRESS), dst = b.arg("dst", JAL_ARG_ADDRESS);
    X v = b.x();
    b.ld(v, src, 0);
    b.st(v, dst, 0);
    b.end();
    return b.finish();
}

// Scalar: *dst = 0x1234.
CodeObject st_kernel()
{
    Builder b("iso_st");
    X dst = b.arg("dst", JAL_ARG_ADDRESS);
    X v = b.x();
    b.li(v, 0x1234);
    b.st(v, dst, 0);
    b.end();
    return b.finish();
}

// The status a dispatch on one slice ends with (jal::Error's, or OK).
uint32_t run_status(Launcher& l, const Program& p, const Args& args)
{
    DispatchOptions one;
    one.slice_mask = 1;
    try {
        return l.run(p, args, one).status;
    } catch (const jal::Error& e) {
        return e.status();
    }
}

// A context with a queue, a launcher, a buffer of its own and a host buffer.
struct Side {
    explicit Side(Device& dev)
        : ctx(dev), queue(ctx, 64), launcher(dev, ctx, queue),
          mine(ctx, kBytes, JAL_PLACE_SLICE, 1), host(dev, kBytes)
    {}
    // Fills `va` (of this context) with `byte` by a copy; the copy's status.
    uint32_t fill(Device& dev, uint64_t va, unsigned char byte)
    {
        std::memset(host.data(), byte, kBytes);
        Signal s(dev, 1);
        queue.copy_to_device(va, host, 0, kBytes, &s);
        return s.wait_zero().status;
    }
    // Reads `va` into the host buffer (zeroed first); the copy's status.
    uint32_t read(Device& dev, uint64_t va)
    {
        std::memset(host.data(), 0, kBytes);
        Signal s(dev, 1);
        queue.copy_to_host(host, 0, va, kBytes, &s);
        return s.wait_zero().status;
    }
    bool host_holds(unsigned char byte, size_t n = kBytes) const
    {
        const auto* p = reinterpret_cast<const unsigned char*>(host.data());
        for (size_t i = 0; i < n; i++)
            if (p[i] != byte) return false;
        return true;
    }
    Context ctx;
    Queue queue;
    Launcher launcher;
    Memory mine;
    HostBuffer host;
};

void expect_fault(const std::string& check, uint32_t st)
{
    report(check, st == JAL_STATUS_PAGE_FAULT,
           "ended with " + status_name(st) + ", expected PAGE_FAULT");
}

// The tile-program and copy attacks of context `b` on `va`, which it never mapped. After
// each, b's own buffer must not hold the secret.
void attack(Device& dev, Side& b, uint64_t va, const std::string& who)
{
    expect_fault(who + "copy-read", b.read(dev, va));
    report(who + "copy-read-leaks-nothing", b.host_holds(0), "host buffer changed");
    expect_fault(who + "copy-write", b.fill(dev, va, 0xee));

    auto leaked = [&] {
        b.read(dev, b.mine.va());
        return !b.host_holds(kMine);
    };
    const Args src_dst = Args().addr(va).addr(b.mine.va());
    struct Attack {
        const char* name;
        CodeObject (*kernel)();
        Args args;
    };
    const Attack attacks[] = {
        {"tload", tload_kernel, src_dst},   {"tgather", tgather_kernel, src_dst},
        {"ld", ld_kernel, src_dst},         {"tstore", tstore_kernel, Args().addr(va)},
        {"st", st_kernel, Args().addr(va)},
    };
    for (const Attack& a : attacks) {
        b.fill(dev, b.mine.va(), kMine);
        Program p(dev, b.ctx, b.queue, a.kernel());
        expect_fault(who + a.name, run_status(b.launcher, p, a.args));
        report(who + a.name + "-leaks-nothing", !leaked(), "its own buffer changed");
    }
}

int probe(uint64_t va)
{
    Device dev(0);
    Side b(dev);
    attack(dev, b, va, "other-process-");
    return failures ? 1 : 0;
}

// The second process: this program again with --probe VA; its exit status.
void run_probe(uint64_t va)
{
    char va_text[32];
    std::snprintf(va_text, sizeof va_text, "%#" PRIx64, va);
    std::string self = "/proc/self/exe";
    char* argv[] = {self.data(), const_cast<char*>("--probe"), va_text, nullptr};
    pid_t pid = -1;
    int rc = posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, environ);
    int status = 0;
    if (rc == 0) waitpid(pid, &status, 0);
    report("other-process", rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           rc ? std::strerror(rc) : "its checks failed (lines above)");
}

// Dispatches from b whose code object or argument buffer is a's memory (`secret`: an
// address b never mapped for itself).
void foreign_code_and_args(Device& dev, Side& a, Side& b, uint64_t secret)
{
    Program in_a(dev, a.ctx, a.queue, ld_kernel());
    Memory args_b(b.ctx, 64, JAL_PLACE_SLICE, 1);
    auto dispatch = [&](uint64_t code, uint64_t args) {
        jal_dispatch_desc d{};
        d.code_object = code;
        d.slice_mask = 1;
        d.args = args;
        Signal s(dev, 1);
        b.queue.dispatch(d, &s);
        return s.wait_zero().status;
    };
    expect_fault("code-object-of-another-context", dispatch(in_a.address(), args_b.va()));
    Program in_b(dev, b.ctx, b.queue, ld_kernel());
    expect_fault("arguments-of-another-context", dispatch(in_b.address(), secret));
}

int run_all()
{
    Device dev(0);
    Side a(dev), b(dev);
    // A's secret sits past a pad, above every address B maps for itself.
    Memory pad(a.ctx, 64ull << 20, JAL_PLACE_SLICE, 1);
    Memory secret(a.ctx, kBytes, JAL_PLACE_SLICE, 1);
    report("setup", a.fill(dev, secret.va(), kSecret) == JAL_STATUS_OK, "A's own copy failed");
    std::printf("isolation: context A's secret at %#" PRIx64 "\n", secret.va());

    attack(dev, b, secret.va(), "");
    foreign_code_and_args(dev, a, b, secret.va());
    run_probe(secret.va());

    // A's bytes are intact, and every queue still works after the faults.
    report("secret-intact", a.read(dev, secret.va()) == JAL_STATUS_OK && a.host_holds(kSecret),
           "A's secret changed or A's queue stopped");
    Program p(dev, b.ctx, b.queue, tload_kernel());
    b.fill(dev, b.mine.va(), kMine);
    report("attacker-queue-works",
           run_status(b.launcher, p, Args().addr(b.mine.va()).addr(b.mine.va())) == JAL_STATUS_OK,
           "B's own dispatch failed after the faults");
    return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv)
{
    try {
        if (argc == 3 && std::strcmp(argv[1], "--probe") == 0)
            return probe(std::strtoull(argv[2], nullptr, 0));
        if (argc != 1) {
            std::fprintf(stderr, "usage: jal-system-isolation [--probe VA]\n");
            return 2;
        }
        return run_all();
    } catch (const std::exception& e) {
        std::printf("isolation: FAIL (%s)\n", e.what());
        return 1;
    }
}
