#include "serve_scheduler.hpp"

#include <chrono>
#include <cstdio>
#include <deque>

#include <jal/model/runtime.hpp>

namespace jal::bench {

namespace {

using Clock = std::chrono::steady_clock;

// A request in the scheduler: times in modelled ns since the point began.
struct Live {
    size_t index = 0;
    int seq = -1;
    uint64_t arrival = 0, last = 0;
    uint32_t generated = 0;
    uint32_t prompt_left = 0;  // mixed: prompt tokens still to run
};

class Scheduler {
public:
    Scheduler(ChipCost& cost, uint32_t concurrency, const std::vector<BenchRequest>& requests,
              bool progress, bool mixed)
        : cost_(cost), concurrency_(concurrency), requests_(requests), progress_(progress),
          mixed_(mixed), timings_(requests.size())
    {}

    PointRun run()
    {
        for (uint32_t i = 0; i < concurrency_ && next_ < requests_.size(); i++) send(0);
        while (done_ < requests_.size()) {
            if (mixed_) {
                admit_unprefilled();
                mixed_step();
            } else {
                admit();
                step();
            }
            report(false);
        }
        report(true);
        PointRun out;
        out.requests = std::move(timings_);
        out.duration_s = now_ns_ / 1e9;
        out.chip.known = true;
        out.chip.modelled_s = now_ns_ / 1e9;
        out.chip.energy_j = energy_nj_ / 1e9 + jal::model::kStaticPowerW * out.chip.modelled_s;
        return out;
    }

private:
    // The client sends the next request (at modelled time `at`).
    void send(uint64_t at)
    {
        waiting_.push_back(Live{next_, -1, at, at, 0});
        timings_[next_].start_s = at / 1e9;
        timings_[next_].prompt_tokens = static_cast<uint32_t>(requests_[next_].prompt.size());
        next_++;
    }

    void admit()
    {
        while (!waiting_.empty() && running_.size() < concurrency_) {
            Live r = waiting_.front();
            waiting_.pop_front();
            StepCost c;
            r.seq = cost_.admit(requests_[r.index].prompt, c);
            advance(c);
            timings_[r.index].ttft_s = (now_ns_ - r.arrival) / 1e9;
            r.last = now_ns_;
            r.generated = 1;
            if (!finished(r)) running_.push_back(r);
        }
    }

    // Mixed: a slot each, the prompt left for the steps.
    void admit_unprefilled()
    {
        while (!waiting_.empty() && running_.size() < concurrency_) {
            Live r = waiting_.front();
            waiting_.pop_front();
            r.seq = cost_.start();
            r.prompt_left = static_cast<uint32_t>(requests_[r.index].prompt.size());
            running_.push_back(r);
        }
    }

    // Mixed: one pass of every decoding sequence and a chunk of the first prompt left.
    void mixed_step()
    {
        if (running_.empty()) return;
        std::vector<int> seqs;
        Live* filling = nullptr;
        for (Live& r : running_)
            if (!r.prompt_left)
                seqs.push_back(r.seq);
            else if (!filling)
                filling = &r;
        const uint32_t room = cost_.rows() - static_cast<uint32_t>(seqs.size());
        const uint32_t n = filling && room ? std::min(room, filling->prompt_left) : 0;
        advance(n ? cost_.mixed(seqs, filling->seq, n) : cost_.decode(seqs));
        std::vector<Live> still;
        for (Live& r : running_) {
            if (r.prompt_left && &r == filling) {
                r.prompt_left -= n;
                if (!r.prompt_left) first_token(r);
            } else if (!r.prompt_left) {
                timings_[r.index].itl_s.push_back((now_ns_ - r.last) / 1e9);
                r.last = now_ns_;
                r.generated++;
            }
            if (r.prompt_left || !finished(r)) still.push_back(r);
        }
        running_ = std::move(still);
    }

    void first_token(Live& r)
    {
        timings_[r.index].ttft_s = (now_ns_ - r.arrival) / 1e9;
        r.last = now_ns_;
        r.generated = 1;
    }

    void step()
    {
        if (running_.empty()) return;
        std::vector<int> seqs;
        for (const Live& r : running_) seqs.push_back(r.seq);
        advance(cost_.decode(seqs));
        std::vector<Live> still;
        for (Live& r : running_) {
            timings_[r.index].itl_s.push_back((now_ns_ - r.last) / 1e9);
            r.last = now_ns_;
            r.generated++;
            if (!finished(r)) still.push_back(r);
        }
        running_ = std::move(still);
    }

    // Retires `r` if it has all its tokens (ignore_eos: only the length ends it).
    bool finished(const Live& r)
    {
        if (r.generated < requests_[r.index].output_len) return false;
        RequestTiming& t = timings_[r.index];
        t.output_tokens = r.generated;
        t.e2e_s = (now_ns_ - r.arrival) / 1e9;
        cost_.release(r.seq);
        done_++;
        if (next_ < requests_.size()) send(now_ns_);
        return true;
    }

    void advance(const StepCost& c)
    {
        now_ns_ += c.ns;
        energy_nj_ += c.nj;
    }

    void report(bool last)
    {
        if (!progress_ || (!last && Clock::now() - last_report_ < std::chrono::seconds(5))) return;
        last_report_ = Clock::now();
        std::fprintf(stderr,
                     "jal-bench serve: concurrency %u: %zu/%zu requests done, %.3f s "
                     "modelled\n",
                     concurrency_, done_, requests_.size(), now_ns_ / 1e9);
    }

    ChipCost& cost_;
    const uint32_t concurrency_;
    const std::vector<BenchRequest>& requests_;
    const bool progress_;
    const bool mixed_;
    std::vector<RequestTiming> timings_;
    std::deque<Live> waiting_;
    std::vector<Live> running_;
    size_t next_ = 0, done_ = 0;
    uint64_t now_ns_ = 0, energy_nj_ = 0;
    Clock::time_point last_report_ = Clock::now();
};

}  // namespace

PointRun run_scheduler(ChipCost& cost, uint32_t concurrency,
                       const std::vector<BenchRequest>& requests, bool progress, bool mixed)
{
    return Scheduler(cost, concurrency, requests, progress, mixed).run();
}

}  // namespace jal::bench
