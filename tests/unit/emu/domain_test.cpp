// Fabric domains of two members over libfabric's tcp provider on loopback, both in this
// test's process (each with its own endpoint and progress thread, as two jal-emu processes
// would have): they join, move bytes into each other's registered memory, and every way a
// peer can fail to be there ends in a clear error, not a wait.
#include "emu/fabric/domain.hpp"

#include "tools/common/emu_process.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace jal::emu::fabric;
using namespace std::chrono_literals;

// A TCP port nothing listens on right now (the kernel's choice for an ephemeral bind).
std::string free_port()
{
    return std::to_string(jal::tools::free_loopback_port());
}

Topology two_processes()
{
    const std::string text = R"({"provider": "tcp", "processes": [
        {"name": "a", "address": "127.0.0.1:)" +
                             free_port() +
                             R"(", "chips": [0]},
        {"name": "b", "address": "127.0.0.1:)" +
                             free_port() +
                             R"(", "chips": [1, 2]}],
        "links": [{"kind": "scale-up", "a": [0, 0], "b": [1, 0]}]})";
    return parse_topology(text);
}

struct Member {
    Member(const Topology& t, const std::string& name, std::size_t chips,
           std::chrono::milliseconds join = 20s)
        : memory(chips, std::vector<std::uint8_t>(kBytes))
    {
        std::vector<LocalChipMemory> m;
        for (auto& v : memory) m.push_back({v.data(), v.size()});
        DomainOptions o;
        o.process = name;
        o.join_timeout = join;
        o.op_timeout = 5s;
        domain = std::make_unique<Domain>(t, o, m);
    }
    static constexpr std::size_t kBytes = 8u << 20;
    std::vector<std::vector<std::uint8_t>> memory;
    std::unique_ptr<Domain> domain;
};

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::vector<std::uint8_t> v(n);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

TEST(Domain, JoinsAndMovesBytesBothWays)
{
    const Topology t = two_processes();
    Member a(t, "a", 1);
    Member b(t, "b", 2);  // started after a: a's handshake waits for it
    ASSERT_EQ(a.domain->wait_joined(20s), DomainState::joined) << a.domain->status().error;
    ASSERT_EQ(b.domain->wait_joined(20s), DomainState::joined) << b.domain->status().error;

    // a writes into b's second chip (more than the staging holds, at an odd offset); it
    // lands there, and a reads it back.
    const auto data = random_bytes((5u << 20) + 13, 1);
    a.domain->write(2, 77, data.data(), data.size());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), b.memory[1].begin() + 77));
    std::vector<std::uint8_t> back(data.size());
    a.domain->read(2, 77, back.data(), back.size());
    EXPECT_EQ(back, data);
    // b reads what a's chip holds.
    const auto mine = random_bytes(4099, 2);
    std::copy(mine.begin(), mine.end(), a.memory[0].begin() + 5);
    std::vector<std::uint8_t> got(mine.size());
    b.domain->read(0, 5, got.data(), got.size());
    EXPECT_EQ(got, mine);
}

TEST(Domain, RefusesWhatIsNotThere)
{
    const Topology t = two_processes();
    Member a(t, "a", 1);
    Member b(t, "b", 2);
    ASSERT_EQ(a.domain->wait_joined(20s), DomainState::joined);
    std::uint8_t byte = 0;
    EXPECT_THROW(a.domain->read(9, 0, &byte, 1), DomainError);  // no chip 9
    a.domain->read(0, 0, &byte, 1);                             // its own chip: served from here
    EXPECT_THROW(a.domain->read(0, Member::kBytes, &byte, 1), DomainError);
    try {
        a.domain->read(1, Member::kBytes, &byte, 1);
        ADD_FAILURE() << "a read past the chip's memory went through";
    } catch (const DomainError& e) {
        EXPECT_NE(std::string(e.what()).find("outside its memory"), std::string::npos) << e.what();
    }
    EXPECT_THROW(Member(t, "c", 1), DomainError);  // no such process
    EXPECT_THROW(Member(t, "a", 2), DomainError);  // a holds one chip
}

TEST(Domain, AMissingPeerFailsTheJoinAndNamesIt)
{
    const Topology t = two_processes();
    Member a(t, "a", 1, 300ms);
    ASSERT_EQ(a.domain->wait_joined(20s), DomainState::failed);
    const DomainStatus s = a.domain->status();
    EXPECT_NE(s.error.find("no answer from b (127.0.0.1:"), std::string::npos) << s.error;
    std::uint8_t byte = 0;
    try {
        a.domain->read(1, 0, &byte, 1);
        ADD_FAILURE() << "a read from a peer that never joined went through";
    } catch (const DomainError& e) {
        EXPECT_NE(std::string(e.what()).find("has not joined"), std::string::npos) << e.what();
    }
}

TEST(Domain, APeerThatLeavesIsSeenToLeave)
{
    const Topology t = two_processes();
    Member a(t, "a", 1);
    auto b = std::make_unique<Member>(t, "b", 2);
    ASSERT_EQ(a.domain->wait_joined(20s), DomainState::joined);
    b.reset();
    // Reads fail from the moment a has heard b leave (or found it gone).
    std::uint8_t byte = 0;
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    bool failed = false;
    while (!failed && std::chrono::steady_clock::now() < give_up) {
        try {
            a.domain->read(1, 0, &byte, 1);
        } catch (const DomainError& e) {
            EXPECT_NE(std::string(e.what()).find("process b"), std::string::npos) << e.what();
            EXPECT_TRUE(e.peer_lost());
            failed = true;
        }
    }
    ASSERT_TRUE(failed) << "reads from a peer that left kept succeeding";
    const DomainStatus s = a.domain->status();
    ASSERT_EQ(s.peers.size(), 1u);
    EXPECT_NE(s.peers[0].state, PeerState::joined);
}

}  // namespace
