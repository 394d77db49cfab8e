#include "emu/fabric/domain.hpp"

#include "emu/fabric/domain_internal.hpp"

#include <algorithm>
#include <cstring>

namespace jal::emu::fabric {

const char* state_name(DomainState s)
{
    switch (s) {
    case DomainState::joining:
        return "joining";
    case DomainState::joined:
        return "joined";
    case DomainState::failed:
        return "failed";
    }
    return "?";
}

const char* state_name(PeerState s)
{
    switch (s) {
    case PeerState::joining:
        return "joining";
    case PeerState::joined:
        return "joined";
    case PeerState::left:
        return "left";
    case PeerState::dead:
        return "dead";
    }
    return "?";
}

namespace {

std::string address_of(const TopologyProcess& p)
{
    return p.service.empty() ? p.node : p.node + ":" + p.service;
}

std::size_t find_self(const Topology& t, const std::string& name)
{
    for (std::size_t i = 0; i < t.processes.size(); ++i)
        if (t.processes[i].name == name) return i;
    std::string names;
    for (const auto& p : t.processes) names += (names.empty() ? "" : ", ") + p.name;
    throw DomainError("domain: no process \"" + name + "\" in the topology (it names: " + names +
                      ")");
}

}  // namespace

Domain::Domain(Topology topology, const DomainOptions& options, std::vector<LocalChipMemory> chips)
    : topology_(std::move(topology)), options_(options)
{
    self_ = find_self(topology_, options.process);
    const TopologyProcess& me = self();
    if (chips.size() != me.chips.size())
        throw DomainError("domain: process \"" + me.name + "\" holds " +
                          std::to_string(me.chips.size()) + " chip(s) in the topology but serves " +
                          std::to_string(chips.size()));
    if (sizeof(WireHeader) + chips.size() * sizeof(WireRegion) > kMessageBytes)
        throw DomainError("domain: too many chips in one process");
    EndpointOptions eo;
    eo.provider = topology_.provider;
    eo.node = me.node;
    eo.service = me.service;
    eo.timeout = options.op_timeout;
    eo.completion_queue = 4 * (kReceives + kSends + kChunks);
    try {
        ep_ = std::make_unique<FabricEndpoint>(eo);
    } catch (const FabricError& e) {
        throw DomainError("domain: cannot open this process's endpoint at " + address_of(me) +
                          " (" + topology_.provider + "): " + e.what());
    }
    local_memory_ = chips;
    for (const LocalChipMemory& c : chips)
        local_regions_.push_back(ep_->register_memory(c.base, c.size, true));
    message_buffers_.resize((kReceives + kSends) * kMessageBytes);
    staging_.resize(kChunks * kChunkBytes);
    ep_->register_memory(message_buffers_.data(), message_buffers_.size(), false);
    ep_->register_memory(staging_.data(), staging_.size(), false);
    for (std::size_t i = 0; i < topology_.processes.size(); ++i) {
        auto p = std::make_unique<Peer>();
        p->index = i;
        if (i != self_) {
            const TopologyProcess& tp = topology_.processes[i];
            p->addr = ep_->add_peer(tp.node, tp.service);
        }
        peers_.push_back(std::move(p));
    }
    std::byte* b = message_buffers_.data();
    for (std::size_t i = 0; i < kReceives + kSends; ++i, b += kMessageBytes) {
        auto op = std::make_unique<Op>();
        op->kind = i < kReceives ? Op::receive : Op::send;
        op->buffer = b;
        if (op->kind == Op::send) free_sends_.push_back(op.get());
        (i < kReceives ? receive_ops_ : send_ops_).push_back(std::move(op));
    }
    for (std::size_t i = 0; i < kChunks; ++i) {
        auto op = std::make_unique<Op>();
        op->kind = Op::chunk;
        op->buffer = staging_.data() + i * kChunkBytes;
        free_chunks_.push_back(op.get());
        chunk_ops_.push_back(std::move(op));
    }
    // Posted before any peer can know this process exists: no message finds no buffer.
    for (auto& op : receive_ops_)
        if (!ep_->post_recv(op->buffer, kMessageBytes, op.get()))
            throw DomainError("domain: the provider refused the receive buffers");
    join_deadline_ = Clock::now() + options_.join_timeout;
    if (topology_.processes.size() == 1) state_ = DomainState::joined;
    thread_ = std::thread([this] { run(); });
}

Domain::~Domain()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    ep_.reset();  // before the buffers it may still have operations on
}

bool Domain::holds(unsigned chip) const
{
    const auto& c = self().chips;
    return std::find(c.begin(), c.end(), chip) != c.end();
}

bool Domain::reachable(unsigned chip) const
{
    if (holds(chip)) return true;
    const TopologyProcess* holder = topology_.holder(chip);
    if (!holder) return false;
    std::lock_guard lock(mutex_);
    return peers_[static_cast<std::size_t>(holder - topology_.processes.data())]->state ==
           PeerState::joined;
}

DomainStatus Domain::status() const
{
    std::lock_guard lock(mutex_);
    DomainStatus s;
    s.state = state_;
    s.error = error_;
    s.provider = topology_.provider;
    s.process = self().name;
    for (const auto& p : peers_) {
        if (p->index == self_) continue;
        const TopologyProcess& tp = topology_.processes[p->index];
        s.peers.push_back({tp.name, address_of(tp), p->state, p->error, tp.chips});
    }
    return s;
}

DomainState Domain::wait_joined(std::chrono::milliseconds timeout) const
{
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return state_ != DomainState::joining; });
    return state_;
}

void Domain::run()
{
    try {
        for (;;) {
            {
                std::lock_guard lock(mutex_);
                if (stopping_) break;
            }
            bool busy;
            {
                std::lock_guard driving(drive_mutex_);
                busy = step();
            }
            if (!busy) idle();
        }
        std::lock_guard driving(drive_mutex_);
        leave();
    } catch (const std::exception& e) {
        std::lock_guard lock(mutex_);
        state_ = DomainState::failed;
        broken_ = true;
        error_ = std::string("the fabric failed: ") + e.what();
        for (Request* r : active_) r->finished = true, r->error = error_;
        for (Request* r : queue_) r->finished = true, r->error = error_;
        active_.clear();
        queue_.clear();
        changed_.notify_all();
    }
}

// Nothing happened this round: yield while transfers are under way or a peer said WAKE,
// else sleep until a request is queued (or kIdleSleep, for the provider's and the
// heartbeats' sake).
void Domain::idle()
{
    std::unique_lock lock(mutex_);
    if (!active_.empty() || !queue_.empty() || Clock::now() < hot_until_) {
        lock.unlock();
        std::this_thread::yield();
        return;
    }
    wake_.wait_for(lock, kIdleSleep, [&] { return stopping_ || !queue_.empty(); });
}

bool Domain::step()
{
    bool busy = collect();
    std::lock_guard lock(mutex_);
    if (state_ == DomainState::joining) busy |= join_step();
    busy |= heartbeat_step();
    busy |= start_requests();
    check_deadlines();
    return busy;
}

bool Domain::collect()
{
    std::vector<Completion> done;
    ep_->poll(done, 32);
    if (done.empty()) return false;
    std::lock_guard lock(mutex_);
    // More is likely to follow (a caller's next request): stay awake a moment.
    hot_until_ = std::max(hot_until_, Clock::now() + std::chrono::milliseconds(1));
    for (const Completion& c : done) complete(static_cast<Op*>(c.context), c);
    return true;
}

void Domain::complete(Op* op, const Completion& c)
{
    switch (op->kind) {
    case Op::receive:
        if (!c.error) on_message(op, c.length);
        if (!ep_->post_recv(op->buffer, kMessageBytes, op))
            throw DomainError("domain: the provider refused a receive buffer");
        return;
    case Op::send: {
        Peer& p = *op->peer;
        if (op->type == kHello || op->type == kHelloReply) p.hello_in_flight = false;
        if (op->type == kPing) p.ping_in_flight = false;
        free_sends_.push_back(op);
        // A peer not up yet refuses the handshake: that is what joining waits out.
        if (c.error && p.state == PeerState::joined)
            peer_lost(p, PeerState::dead, "unreachable: " + c.text);
        return;
    }
    case Op::chunk:
        complete_chunk(op, c);
        return;
    }
}

void Domain::on_message(Op* op, std::size_t length)
{
    WireHeader h{};
    if (length < sizeof h) return;
    std::memcpy(&h, op->buffer, sizeof h);
    if (h.magic != kWireMagic || h.version != kWireVersion || h.from >= peers_.size() ||
        h.from == self_ || length < sizeof h + h.count * sizeof(WireRegion))
        return;  // not one of ours: a stray datagram cannot disturb the domain
    Peer& p = *peers_[h.from];
    if (p.state == PeerState::left || p.state == PeerState::dead) return;  // no rejoining
    p.last_heard = Clock::now();
    if (h.type == kBye) {
        peer_lost(p, PeerState::left, "left the domain");
        return;
    }
    if (h.type == kWake) {
        hot_until_ = p.last_heard + kHotWindow;
        return;
    }
    if (h.type != kHello && h.type != kHelloReply) return;
    if (!p.have_theirs) {
        for (std::uint32_t i = 0; i < h.count; ++i) {
            WireRegion w{};
            std::memcpy(&w, op->buffer + sizeof h + i * sizeof w, sizeof w);
            p.regions.push_back(
                {static_cast<unsigned>(w.chip), RemoteRegion{w.addr, w.key, w.size}});
        }
        p.have_theirs = true;
    }
    if (h.type == kHelloReply) p.they_have_ours = true;
    if (h.type == kHello) send_control(p, kHelloReply);
    if (p.have_theirs && p.they_have_ours && p.state == PeerState::joining) {
        p.state = PeerState::joined;
        p.next_ping = p.last_heard;
        changed_.notify_all();
    }
}

// Posts a control message to `p`; false when no send buffer is free or the provider is busy.
bool Domain::send_control(Peer& p, std::uint16_t type)
{
    if (free_sends_.empty()) return false;
    Op* op = free_sends_.back();
    WireHeader h{kWireMagic, kWireVersion, type, static_cast<std::uint32_t>(self_), 0};
    std::size_t length = sizeof h;
    if (type == kHello || type == kHelloReply) {
        h.count = static_cast<std::uint32_t>(local_regions_.size());
        for (std::size_t i = 0; i < local_regions_.size(); ++i) {
            const RemoteRegion& r = local_regions_[i];
            const WireRegion w{self().chips[i], r.addr, r.key, r.size};
            std::memcpy(op->buffer + length, &w, sizeof w);
            length += sizeof w;
        }
    }
    std::memcpy(op->buffer, &h, sizeof h);
    op->peer = &p;
    op->type = type;
    if (!ep_->post_send(p.addr, op->buffer, length, op)) return false;
    free_sends_.pop_back();
    if (type == kHello || type == kHelloReply) p.hello_in_flight = true;
    if (type == kPing) p.ping_in_flight = true;
    return true;
}

bool Domain::join_step()
{
    const auto now = Clock::now();
    bool busy = false, all = true;
    std::string missing;
    for (auto& pp : peers_) {
        Peer& p = *pp;
        if (p.index == self_) continue;
        if (p.state == PeerState::joined) continue;
        all = false;
        const TopologyProcess& tp = topology_.processes[p.index];
        missing += (missing.empty() ? "" : ", ") + tp.name + " (" + address_of(tp) + ")";
        if (p.state != PeerState::joining || p.hello_in_flight || now < p.next_hello) continue;
        if (send_control(p, kHello)) busy = true;
        p.next_hello = now + kHelloInterval;
    }
    if (all) {
        state_ = DomainState::joined;
        changed_.notify_all();
    } else if (now > join_deadline_) {
        state_ = DomainState::failed;
        error_ = "the domain did not form within " + std::to_string(options_.join_timeout.count()) +
                 " ms: no answer from " + missing;
        changed_.notify_all();
    }
    return busy;
}

// Joined peers hear from this process every kPingInterval and must be heard from within
// the operation timeout; a process that died without a word is found either way (its
// provider refuses the ping, or it falls silent).
bool Domain::heartbeat_step()
{
    const auto now = Clock::now();
    bool busy = false;
    for (auto& pp : peers_) {
        Peer& p = *pp;
        if (p.index == self_ || p.state != PeerState::joined) continue;
        if (now - p.last_heard > options_.op_timeout) {
            peer_lost(p, PeerState::dead,
                      "silent for " + std::to_string(options_.op_timeout.count()) + " ms");
            continue;
        }
        if (p.ping_in_flight || now < p.next_ping) continue;
        if (send_control(p, kPing)) busy = true;
        p.next_ping = now + kPingInterval;
    }
    return busy;
}

void Domain::peer_lost(Peer& p, PeerState state, const std::string& why)
{
    p.state = state;
    p.error = why;
    std::vector<Request*> ended;
    for (Request* r : active_)
        if (r->peer == &p) ended.push_back(r);
    const TopologyProcess& tp = topology_.processes[p.index];
    for (Request* r : ended)
        finish(*r, "chip " + std::to_string(r->chip) + " is unreachable: process " + tp.name +
                       " (" + address_of(tp) + ") " + why);
    changed_.notify_all();
}

// Says goodbye to every joined peer, so that theirs see "left" rather than "dead", and
// waits a moment for the messages to go.
void Domain::leave()
{
    std::unique_lock lock(mutex_);
    const std::string why = "this process is leaving the domain";
    while (!active_.empty()) finish(*active_.back(), why);
    for (Request* r : queue_) r->finished = true, r->error = why;
    queue_.clear();
    changed_.notify_all();
    std::size_t sent = 0;
    for (auto& p : peers_)
        if (p->index != self_ && p->state == PeerState::joined && send_control(*p, kBye)) ++sent;
    lock.unlock();
    const auto until = Clock::now() + std::chrono::milliseconds(500);
    while (free_sends_.size() < kSends && Clock::now() < until) {
        if (!collect()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

}  // namespace jal::emu::fabric
