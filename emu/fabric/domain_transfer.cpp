// Transfers to and from remote chips' memory: a caller's request is cut into chunks of
// kChunkBytes that go through registered staging buffers (so a caller's buffer never has to
// be registered, and a chunk still in the provider's hands when its request has ended
// touches only staging), kChunks of them in flight at once; from and to a local chip's
// registered memory, chunks of kDirectChunkBytes go straight from there.
#include "emu/fabric/domain.hpp"

#include "emu/fabric/domain_internal.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace jal::emu::fabric {

void Domain::write(unsigned chip, std::uint64_t offset, const void* data, std::size_t size)
{
    transfer(true, chip, offset, static_cast<std::byte*>(const_cast<void*>(data)), size);
}

void Domain::read(unsigned chip, std::uint64_t offset, void* data, std::size_t size)
{
    transfer(false, chip, offset, static_cast<std::byte*>(data), size);
}

void Domain::transfer(bool write, unsigned chip, std::uint64_t offset, std::byte* data,
                      std::size_t size)
{
    const std::string what =
        std::string(write ? "write to" : "read from") + " chip " + std::to_string(chip) + ": ";
    const TopologyProcess* holder = topology_.holder(chip);
    if (!holder) throw DomainError(what + "no such chip in the domain");
    if (holder == &self()) {
        // A chip of this process (a tray's neighbour): its memory is right here.
        const auto& mine = self().chips;
        const auto i =
            static_cast<std::size_t>(std::find(mine.begin(), mine.end(), chip) - mine.begin());
        const LocalChipMemory& m = local_memory_[i];
        if (offset > m.size || size > m.size - offset)
            throw DomainError(what + "[" + std::to_string(offset) + ", +" + std::to_string(size) +
                              ") is outside its memory");
        auto* base = static_cast<std::byte*>(m.base) + offset;
        if (size) std::memcpy(write ? base : data, write ? data : base, size);
        return;
    }
    Request r;
    r.write = write;
    r.chip = chip;
    r.offset = offset;
    r.data = data;
    r.size = size;
    std::unique_lock lock(mutex_);
    if (broken_) throw DomainError(what + error_);
    Peer& p = *peers_[static_cast<std::size_t>(holder - topology_.processes.data())];
    if (p.state != PeerState::joined)
        throw DomainError(
            what + "process " + holder->name + " " +
                (p.state == PeerState::joining ? "has not joined the domain yet" : p.error),
            p.state != PeerState::joining);
    auto it = std::find_if(p.regions.begin(), p.regions.end(),
                           [&](const auto& e) { return e.first == chip; });
    if (it == p.regions.end()) throw DomainError(what + "its process did not register it");
    r.peer = &p;
    r.region = it->second;
    if (offset > r.region.size || size > r.region.size - offset)
        throw DomainError(what + "[" + std::to_string(offset) + ", +" + std::to_string(size) +
                          ") is outside its memory");
    if (size == 0) return;
    if (stopping_) throw DomainError(what + "this process is leaving the domain");
    r.deadline = Clock::now() + options_.op_timeout;
    r.direct = in_local_memory(data, size);
    queue_.push_back(&r);
    wake_.notify_one();
    // A small transfer ends within microseconds: the caller drives the endpoint itself
    // meanwhile (the progress thread waits for it: one thread to schedule, not two, and no
    // wake-up); a longer one is left to the progress thread and waited for asleep.
    const auto awake_until = Clock::now() + kAwakeWait;
    while (!r.finished && Clock::now() < awake_until) {
        lock.unlock();
        drive();
        lock.lock();
    }
    changed_.wait(lock, [&] { return r.finished; });
    if (!r.error.empty()) throw DomainError(what + r.error, true);
}

// One round of the progress thread's work on the caller's thread, if nobody else drives the
// endpoint right now. A failure is left for the progress thread to meet and report.
void Domain::drive()
{
    std::unique_lock driving(drive_mutex_, std::try_to_lock);
    bool busy = false;
    if (driving.owns_lock()) {
        try {
            busy = step();
        } catch (const std::exception&) {}
    }
    if (!busy) std::this_thread::yield();
}

// A local chip's memory is registered with the endpoint: RMA can go from and to it
// directly (no copy through staging). A chunk still in flight when its request ended
// then touches that chip's memory, never a buffer of the caller's.
bool Domain::in_local_memory(const std::byte* p, std::size_t size) const
{
    for (const LocalChipMemory& m : local_memory_) {
        const auto* base = static_cast<const std::byte*>(m.base);
        if (p >= base && p <= base + m.size && size <= static_cast<std::size_t>(base + m.size - p))
            return true;
    }
    return false;
}

bool Domain::start_requests()
{
    while (!queue_.empty()) {
        active_.push_back(queue_.front());
        queue_.pop_front();
    }
    // Keep every peer we transfer with awake for as long as the transfers last.
    const auto now = Clock::now();
    for (Request* r : active_)
        if (now - r->peer->last_wake > kWakeInterval && send_control(*r->peer, kWake))
            r->peer->last_wake = now;
    bool busy = false;
    for (std::size_t i = 0; i < active_.size();) {
        Request& r = *active_[i];
        const bool moved = issue_chunks(r);
        busy |= moved;
        if (!r.finished) ++i;  // finish() took it out of active_
    }
    return busy;
}

bool Domain::issue_chunks(Request& r)
{
    if (r.peer->state != PeerState::joined) {
        finish(r, "process " + topology_.processes[r.peer->index].name + " " + r.peer->error);
        return true;
    }
    bool busy = false;
    while (r.issued < r.size && !free_chunks_.empty()) {
        Op* op = free_chunks_.back();
        op->peer = r.peer;
        op->request = &r;
        op->at = r.issued;
        op->length = std::min(r.direct ? kDirectChunkBytes : kChunkBytes, r.size - r.issued);
        const std::uint64_t at = r.offset + op->at;
        std::byte* local = r.direct ? r.data + op->at : op->buffer;
        bool posted;
        if (r.write) {
            if (!r.direct) std::memcpy(op->buffer, r.data + op->at, op->length);
            posted = ep_->post_write(r.peer->addr, local, op->length, r.region, at, op);
        } else {
            posted = ep_->post_read(r.peer->addr, local, op->length, r.region, at, op);
        }
        if (!posted) break;
        free_chunks_.pop_back();
        r.issued += op->length;
        busy = true;
    }
    return busy;
}

void Domain::complete_chunk(Op* op, const Completion& c)
{
    Request* r = op->request;
    op->request = nullptr;
    free_chunks_.push_back(op);
    if (c.error) {
        // The providers end a peer's connection on any RMA error: the peer is lost to us.
        Peer& p = *op->peer;
        const std::string why = "failed a transfer: " + c.text;
        if (p.state == PeerState::joined)
            peer_lost(p, PeerState::dead, why);  // ends r too
        else if (r)
            finish(*r, "process " + topology_.processes[p.index].name + " " + why);
        return;
    }
    if (!r) return;  // its request ended (timed out, its peer lost) while it was in flight
    if (!r->write && !r->direct) std::memcpy(r->data + op->at, op->buffer, op->length);
    r->done += op->length;
    if (r->done == r->size) finish(*r, "");
}

void Domain::check_deadlines()
{
    const auto now = Clock::now();
    for (std::size_t i = 0; i < active_.size();) {
        Request& r = *active_[i];
        if (now > r.deadline)
            finish(r,
                   "no completion within " + std::to_string(options_.op_timeout.count()) + " ms");
        else
            ++i;
    }
}

// Ends `r` (under mutex_): chunks still in flight are detached from it and its caller wakes.
void Domain::finish(Request& r, const std::string& error)
{
    for (auto& op : chunk_ops_)
        if (op->request == &r) op->request = nullptr;
    active_.erase(std::remove(active_.begin(), active_.end(), &r), active_.end());
    r.error = error;
    r.finished = true;
    changed_.notify_all();
}

}  // namespace jal::emu::fabric
