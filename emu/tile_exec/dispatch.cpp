#include "emu/tile_exec/dispatch.hpp"

#include "emu/tile_exec/message_fifo.hpp"
#include "emu/tile_exec/timing_rates.hpp"
#include "emu/util/cpu_relax.hpp"
#include "jal/hw/status.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

namespace jal::emu::exec {

namespace {

class Run final : public SliceFabric, public std::enable_shared_from_this<Run> {
public:
    Run(const DispatchSetup& setup, SliceBank& bank, WorkerPool& pool)
        : SliceFabric(setup.abort), params_(setup.params), pool_(pool), exec_(params_, *this)
    {
        for (std::uint32_t i = 0; i < setup.slices.size(); ++i) {
            const DispatchSlice& d = setup.slices[i];
            slices_.push_back(std::make_unique<SliceState>(i, d.logical, d.physical,
                                                           bank.l1(d.physical), setup.clock_mhz));
            SliceState& s = *slices_.back();
            s.spare_messages.swap(bank.spare_messages(d.physical));
            if (d.physical < 64 && (params_.log_ops >> d.physical & 1)) s.timing.log_to(&s.ops);
        }
        waiting_ = std::make_unique<std::atomic<bool>[]>(slices_.size());
    }
    ~Run() override
    {
        if (std::atomic<MessageFifo*>* p = pairs_.load()) {
            for (std::size_t i = 0; i < slices_.size() * slices_.size(); ++i) delete p[i].load();
            delete[] p;
        }
    }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    void start()
    {
        std::lock_guard lock(m_);
        active_ = static_cast<std::uint32_t>(slices_.size());
        for (std::uint32_t i = 0; i < slices_.size(); ++i) post(i);
    }

    // The calling thread runs ready slices too, until every slice has stopped: a one-slice
    // dispatch then never wakes a pool thread, and the caller's wakeup is not on its path.
    void wait()
    {
        std::unique_lock lock(m_);
        while (active_ != 0) {
            if (ready_.empty()) {
                caller_waiting_ = true;
                done_cv_.wait(lock);
                caller_waiting_ = false;
                continue;
            }
            const std::uint32_t i = ready_.front();
            ready_.pop_front();
            task(i, lock);
        }
    }

    DispatchResult result(std::uint32_t voltage_mv) const;

    // After wait(), before the slices are released: their spare buffers back to the bank.
    void return_spares(SliceBank& bank)
    {
        std::lock_guard lock(m_);
        for (const auto& s : slices_) bank.spare_messages(s->physical).swap(s->spare_messages);
    }

    // ---- SliceFabric ----
    // No lock unless the receiver sleeps: the push's seq_cst store and this load, against
    // task()'s store of waiting_ and its look at the FIFO, let one side see the other.
    void send(std::uint32_t from, std::uint32_t to, Message&& m) override
    {
        fifo_for_send(from, to).push(std::move(m));
        if (!waiting_[to].load(std::memory_order_seq_cst)) return;
        std::lock_guard lock(m_);
        if (waiting_[to].load(std::memory_order_relaxed) &&
            slices_[to]->block == BlockReason::recv && slices_[to]->block_peer == from)
            wake(to);
    }

    bool receive(std::uint32_t to, std::uint32_t from, Message& out) override
    {
        MessageFifo* f = fifo_if_any(from, to);
        return f && f->pop(out);
    }

    // Each group of slices (a stage's, or 0: the whole dispatch) has its own generation.
    bool barrier(SliceState& s, std::uint64_t group, double& release) override
    {
        std::lock_guard lock(m_);
        Barrier& b = barriers_[s.block == BlockReason::barrier ? s.barrier_group : group];
        if (s.block == BlockReason::barrier) {  // resumed: has the barrier it joined opened?
            if (s.barrier_gen < b.gen) {
                s.block = BlockReason::none;
                release = b.release;
                return true;
            }
            return false;
        }
        s.barrier_gen = b.gen;
        s.barrier_group = group;
        b.max_arrival = std::max(b.max_arrival, s.timing.now());
        const std::size_t members =
            group ? static_cast<std::size_t>(std::popcount(group)) : slices_.size();
        if (++b.arrived < members) return false;
        ++b.gen;
        b.release = s.timing.barrier_release(b.max_arrival);
        release = b.release;
        b.arrived = 0;
        b.max_arrival = 0;
        for (std::uint32_t i = 0; i < slices_.size(); ++i)
            if (waiting_[i].load(std::memory_order_relaxed) &&
                slices_[i]->block == BlockReason::barrier && slices_[i]->barrier_group == group)
                wake(i);
        return true;
    }

    std::uint32_t slices() const override { return static_cast<std::uint32_t>(slices_.size()); }

private:
    struct Barrier {
        std::uint64_t gen = 0;
        std::uint32_t arrived = 0;
        double max_arrival = 0, release = 0;
    };
    // The FIFO of a pair, indexed by sender and receiver, made by the pair's sender at its
    // first message (most dispatches send none, and 64 slices have 4096 pairs); the table
    // of them by the dispatch's first sender.
    MessageFifo& fifo_for_send(std::uint32_t from, std::uint32_t to)
    {
        const std::size_t n = slices_.size();
        std::atomic<MessageFifo*>* p = pairs_.load(std::memory_order_acquire);
        if (!p) {
            auto* made = new std::atomic<MessageFifo*>[n * n]();
            if (pairs_.compare_exchange_strong(p, made, std::memory_order_acq_rel))
                p = made;
            else
                delete[] made;  // another sender's table won; p is it
        }
        std::atomic<MessageFifo*>& slot = p[std::size_t{from} * n + to];
        MessageFifo* f = slot.load(std::memory_order_acquire);
        if (!f) {
            f = new MessageFifo;
            slot.store(f, std::memory_order_release);
        }
        return *f;
    }
    MessageFifo* fifo_if_any(std::uint32_t from, std::uint32_t to) const
    {
        std::atomic<MessageFifo*>* p = pairs_.load(std::memory_order_acquire);
        return p ? p[std::size_t{from} * slices_.size() + to].load(std::memory_order_acquire)
                 : nullptr;
    }
    bool fifo_empty(std::uint32_t from, std::uint32_t to) const
    {
        const MessageFifo* f = fifo_if_any(from, to);
        return !f || f->empty();
    }

    // Under m_. Slice i joins the ready queue (the back: a slice that yielded lets the others
    // go first). The caller runs ready slices itself; pool threads help when more slices are
    // ready than the caller (if idle) and the helpers already there will take, up to one
    // thread a host CPU with the caller.
    void post(std::uint32_t i)
    {
        ready_.push_back(i);
        if (caller_waiting_) done_cv_.notify_one();
        const std::uint32_t max_helpers = std::max(1u, pool_.size() - 1);
        if (helpers_ < max_helpers && helpers_ + (caller_waiting_ ? 1 : 0) < ready_.size()) {
            ++helpers_;
            pool_.post([self = shared_from_this()] { self->help(); });
        }
    }

    // A pool thread: runs ready slices until none is left, going to the back of the pool's
    // queue between two if other tasks wait there (so concurrent dispatches share the pool;
    // re-posting with nothing waiting would only hand the task to another, sleeping thread).
    void help()
    {
        std::unique_lock lock(m_);
        for (;;) {
            if (ready_.empty()) {
                --helpers_;
                return;
            }
            const std::uint32_t i = ready_.front();
            ready_.pop_front();
            task(i, lock);
            if (!ready_.empty() && pool_.queued() != 0) {
                pool_.post([self = shared_from_this()] { self->help(); });
                return;
            }
        }
    }
    void wake(std::uint32_t i)
    {
        waiting_[i].store(false, std::memory_order_relaxed);
        slices_[i]->state = SliceRunState::runnable;
        ++active_;
        post(i);
    }

    // Runs slice i until it ends, faults, yields or blocks. `lock` (on m_) is held on entry
    // and exit and released while the slice runs: the next slice is taken in the same
    // critical section as this one's bookkeeping, one lock a slice instead of two.
    void task(std::uint32_t i, std::unique_lock<std::mutex>& lock)
    {
        SliceState& s = *slices_[i];
        for (;;) {
            lock.unlock();
            const RunResult r = exec_.run(s);
            lock.lock();
            if (r == RunResult::yielded) {
                post(i);  // to the back of the ready queue: other slices get their turn
                return;
            }
            if (r == RunResult::blocked) {
                if (spin_until_unblocked(s, lock)) {
                    s.state = SliceRunState::runnable;
                    continue;
                }
                // The condition may have cleared between the executor's look and now. A
                // sender takes no lock: it sees waiting_ set, or this look sees its message.
                waiting_[i].store(true, std::memory_order_seq_cst);
                if (unblocked(s)) {
                    waiting_[i].store(false, std::memory_order_relaxed);
                    s.state = SliceRunState::runnable;
                    continue;
                }
            }
            if (r == RunResult::faulted) {
                const double t = s.fault_time;
                if (t < stop_time_.load()) stop_time_.store(t);
            }
            if (--active_ == 0) done_cv_.notify_all();
            return;
        }
    }

    // Under m_: the message a slice blocked in RECV waits for has come, or the barrier it
    // waits at has opened.
    bool unblocked(const SliceState& s)
    {
        return (s.block == BlockReason::recv && !fifo_empty(s.block_peer, s.index)) ||
               (s.block == BlockReason::barrier && s.barrier_gen < barriers_[s.barrier_group].gen);
    }

    // Under m_ (released while it polls). A slice blocked on another slice keeps its host
    // thread for up to kBlockedSpin while no other slice is ready to run, and goes on at
    // once if its message comes or its barrier opens: giving the thread up and being woken
    // costs a sleep and a wakeup (median 14 us, 40 us at the 90th percentile on a 2-CPU
    // guest), on the path of every exchange between slices that run at the same time. Not
    // with one host CPU, where the spin would only keep the other slice from running.
    bool spin_until_unblocked(const SliceState& s, std::unique_lock<std::mutex>& lock)
    {
        if (pool_.size() < 2 || (s.block != BlockReason::recv && s.block != BlockReason::barrier))
            return false;
        const auto deadline = std::chrono::steady_clock::now() + kBlockedSpin;
        while (ready_.empty() && !should_stop(s.timing.now())) {
            if (unblocked(s)) return true;
            lock.unlock();
            for (int k = 0;
                 k < 32 && (s.block != BlockReason::recv || fifo_empty(s.block_peer, s.index)); ++k)
                cpu_relax();
            const bool late = std::chrono::steady_clock::now() > deadline;
            lock.lock();
            if (late) return unblocked(s);
        }
        return false;
    }
    static constexpr std::chrono::microseconds kBlockedSpin{50};

    DispatchParams params_;
    WorkerPool& pool_;
    Executor exec_;
    std::vector<std::unique_ptr<SliceState>> slices_;

    mutable std::mutex m_;
    std::condition_variable done_cv_;
    std::unique_ptr<std::atomic<bool>[]> waiting_;  // blocked, not posted (set under m_)
    std::uint32_t active_ = 0;                      // slices posted or running
    std::deque<std::uint32_t> ready_;               // posted, not yet running
    std::uint32_t helpers_ = 0;    // pool tasks posted or running for this dispatch
    bool caller_waiting_ = false;  // the thread in wait() is asleep on done_cv_
    std::atomic<std::atomic<MessageFifo*>*> pairs_{nullptr};  // [from * slices + to]
    std::map<std::uint64_t, Barrier> barriers_;               // by the stage's slice mask (0: all)
};

DispatchResult Run::result(std::uint32_t voltage_mv) const
{
    std::lock_guard lock(m_);
    DispatchResult out;
    jal_dispatch_report& rep = out.report;
    rep.status = JAL_STATUS_OK;
    rep.fault_slice = ~0u;
    const SliceState* first = nullptr;
    const SliceState* stuck = nullptr;
    double end = 0, compute_pj = 0, hbm_pj = 0;
    for (const auto& p : slices_) {
        const SliceState& s = *p;
        if (s.state == SliceRunState::faulted && (!first || s.fault_time < first->fault_time))
            first = &s;
        if (s.state == SliceRunState::blocked && !stuck) stuck = &s;
        end = std::max(end, s.timing.end());
        rep.instructions += s.executed;
        rep.flops += s.timing.counters().flops;
        rep.hbm_bytes += s.timing.counters().hbm_bytes;
        compute_pj += s.timing.counters().energy_pj;
        hbm_pj += s.timing.counters().hbm_energy_pj;
        SliceSnapshot snap;
        snap.logical = s.logical;
        snap.physical = s.physical;
        snap.pc = s.pc;
        snap.state = static_cast<std::uint32_t>(s.state);
        snap.executed = s.executed;
        snap.end_ns = s.timing.end();
        snap.x = s.x;
        snap.q = s.q;
        snap.stages = std::move(p->stages);
        snap.ops = std::move(p->ops);
        out.slices.push_back(std::move(snap));
    }
    const SliceState* culprit = nullptr;
    if (first) {
        rep.status = first->status;
        culprit = first;
    } else if (abort_ && abort_->load()) {
        rep.status = JAL_STATUS_ABORTED;
    } else if (stuck) {
        rep.status = JAL_STATUS_DEADLOCK;
        culprit = stuck;
    }
    if (culprit) {
        rep.fault_slice = culprit->index;
        rep.fault_pc = culprit->pc;
        rep.fault_opcode =
            culprit->pc < params_.program->code.size() ? params_.program->code[culprit->pc].op : 0;
        rep.fault_address = culprit->fault_address;
    }
    rep.modelled_ns = static_cast<std::uint64_t>(rates::kDispatchOverheadNs + end);
    const double v = voltage_mv / static_cast<double>(JAL_VOLTAGE_MAX_MV);
    const double pj = compute_pj * v * v + hbm_pj;
    rep.energy_nj = static_cast<std::uint64_t>(pj / 1000.0);
    out.energy_j = pj * 1e-12;
    return out;
}

}  // namespace

DispatchResult run_dispatch(const DispatchSetup& setup, SliceBank& bank, WorkerPool& pool)
{
    std::uint64_t mask = 0;
    for (const DispatchSlice& s : setup.slices) mask |= 1ull << s.physical;
    if (!bank.claim(mask, setup.abort)) {
        DispatchResult r;
        r.report.status = JAL_STATUS_ABORTED;
        r.report.fault_slice = ~0u;
        return r;
    }
    auto run = std::make_shared<Run>(setup, bank, pool);
    run->start();
    run->wait();
    DispatchResult r = run->result(setup.voltage_mv);
    run->return_spares(bank);
    bank.release(mask);
    return r;
}

}  // namespace jal::emu::exec
