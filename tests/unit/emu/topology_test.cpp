// The fabric domain's topology file: a tray and a two-host domain parse; every kind of
// mistake is refused with the entry it is in and what is wrong.
#include "emu/fabric/topology.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using jal::emu::fabric::LinkKind;
using jal::emu::fabric::parse_topology;
using jal::emu::fabric::Topology;
using jal::emu::fabric::TopologyError;

// Two processes of two chips each, a ring of scale-up links and one scale-out link.
const char* kTwoHosts = R"({
  "provider": "tcp",
  "processes": [
    {"name": "host-a", "address": "10.0.0.1:7000", "chips": [0, 1]},
    {"name": "host-b", "address": "10.0.0.2:7000", "chips": [2, 3]}
  ],
  "links": [
    {"kind": "scale-up", "a": [0, 0], "b": [1, 0]},
    {"kind": "scale-up", "a": [1, 1], "b": [2, 0]},
    {"kind": "scale-up", "a": [2, 1], "b": [3, 0]},
    {"kind": "scale-up", "a": [3, 1], "b": [0, 1]},
    {"kind": "scale-out", "a": [0, 0], "b": [2, 0]}
  ]
})";

TEST(Topology, ATwoHostDomainParses)
{
    Topology t = parse_topology(kTwoHosts);
    EXPECT_EQ(t.provider, "tcp");
    ASSERT_EQ(t.processes.size(), 2u);
    EXPECT_EQ(t.processes[1].node, "10.0.0.2");
    EXPECT_EQ(t.processes[1].service, "7000");
    EXPECT_EQ(t.chip_count(), 4u);
    ASSERT_NE(t.holder(3), nullptr);
    EXPECT_EQ(t.holder(3)->name, "host-b");
    EXPECT_EQ(t.holder(4), nullptr);
    ASSERT_EQ(t.links.size(), 5u);
    EXPECT_EQ(t.links[4].kind, LinkKind::scale_out);
    EXPECT_EQ(t.links[1].chip_b, 2u);
}

TEST(Topology, ShmAddressesAreNames)
{
    Topology t = parse_topology(R"({"provider": "shm", "processes": [
        {"name": "a", "address": "jal-a", "chips": [0]},
        {"name": "b", "address": "jal-b", "chips": [1]}]})");
    EXPECT_EQ(t.processes[0].node, "jal-a");
    EXPECT_TRUE(t.processes[0].service.empty());
    EXPECT_TRUE(t.links.empty());
}

// The message of parse_topology(text), or "" when it parsed.
std::string error_of(const std::string& text)
{
    try {
        parse_topology(text);
        return "";
    } catch (const TopologyError& e) {
        return e.what();
    }
}

std::string with_processes(const std::string& processes, const std::string& links = "[]")
{
    return R"({"processes": )" + processes + R"(, "links": )" + links + "}";
}

TEST(Topology, MistakesNameTheirEntry)
{
    const std::string p2 = R"([{"name": "a", "address": "h:1", "chips": [0]},
                               {"name": "b", "address": "h:2", "chips": [1]}])";
    const struct {
        std::string text, expect;
    } cases[] = {
        {"{", "not JSON"},
        {"[]", "the document: must be an object"},
        {"{}", "missing \"processes\""},
        {with_processes("[]"), "processes: must be a non-empty array"},
        {with_processes(R"([{"address": "h:1", "chips": [0]}])"), "processes[0]: missing \"name\""},
        {with_processes(R"([{"name": "a", "address": "h", "chips": [0]}])"),
         "processes[0].address: \"h\" is not host:port"},
        {with_processes(R"([{"name": "a", "address": "h:70000", "chips": [0]}])"),
         "port \"70000\" is not 1..65535"},
        {with_processes(R"([{"name": "a", "address": "h:1", "chips": []}])"),
         "processes[0].chips: must be a non-empty array"},
        {with_processes(R"([{"name": "a", "address": "h:1", "chips": [-1]}])"),
         "processes[0].chips[0]: must be a whole number below 2048"},
        {with_processes(R"([{"name": "a", "address": "h:1", "chips": [0]},
                            {"name": "a", "address": "h:2", "chips": [1]}])"),
         "processes[1].name: \"a\" appears twice"},
        {with_processes(R"([{"name": "a", "address": "h:1", "chips": [0]},
                            {"name": "b", "address": "h:2", "chips": [0]}])"),
         "chip 0 is already held by \"a\""},
        {with_processes(R"([{"name": "a", "address": "h:1", "chips": [0, 2]}])"),
         "chip ids must be 0..1 without gaps; 1 is missing"},
        {with_processes(p2, R"([{"kind": "scale-sideways", "a": [0, 0], "b": [1, 0]}])"),
         "links[0].kind: \"scale-sideways\" is neither"},
        {with_processes(p2, R"([{"kind": "scale-up", "a": [0, 0], "b": [5, 0]}])"),
         "links[0].b: chip 5 is in no process"},
        {with_processes(p2, R"([{"kind": "scale-out", "a": [0, 4], "b": [1, 0]}])"),
         "links[0].a: a chip has 4 scale-out ports (0..3)"},
        {with_processes(p2, R"([{"kind": "scale-up", "a": [0, 0], "b": [1, 0]},
                               {"kind": "scale-up", "a": [0, 0], "b": [1, 1]}])"),
         "links[1].a: chip 0 port 0 is already linked"},
        {with_processes(p2, R"([{"kind": "scale-up", "a": [0, 0], "b": [0, 1]}])"),
         "links[0]: a link joins two different chips"},
        {with_processes(p2, R"([{"kind": "scale-up", "a": [0], "b": [1, 0]}])"),
         "links[0].a: must be [chip, port]"},
    };
    for (const auto& c : cases) {
        const std::string got = error_of(c.text);
        EXPECT_NE(got.find(c.expect), std::string::npos)
            << "input: " << c.text << "\nexpected: " << c.expect << "\ngot: " << got;
    }
}

TEST(Topology, AnUnreadableFileIsAClearError)
{
    try {
        jal::emu::fabric::load_topology("/nonexistent/topology.json");
        FAIL() << "no error";
    } catch (const TopologyError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot read /nonexistent/topology.json"),
                  std::string::npos);
    }
}

}  // namespace

namespace {

TEST(Topology, SwitchedPlanesReplaceLinksOfTheirKind)
{
    // Without the settings a file means what it always meant: point-to-point links.
    const Topology plain = parse_topology(kTwoHosts);
    EXPECT_FALSE(plain.scale_up_switched);
    EXPECT_FALSE(plain.scale_out_switched);
    EXPECT_EQ(plain.rack_chips, 128u);

    const Topology t = parse_topology(R"({"scale_up": "switched", "scale_out": "links",
        "rack_chips": 2,
        "processes": [{"name": "a", "address": "h:1", "chips": [0, 1]},
                      {"name": "b", "address": "h:2", "chips": [2, 3]}],
        "links": [{"kind": "scale-out", "a": [0, 0], "b": [2, 0]}]})");
    EXPECT_TRUE(t.scale_up_switched);
    EXPECT_FALSE(t.scale_out_switched);
    EXPECT_EQ(t.rack_chips, 2u);
    EXPECT_EQ(t.links.size(), 1u);
}

TEST(Topology, SwitchingMistakesAreNamed)
{
    const std::string procs = R"("processes": [{"name": "a", "address": "h:1", "chips": [0]},
                                               {"name": "b", "address": "h:2", "chips": [1]}])";
    const struct {
        std::string text, expect;
    } cases[] = {
        {R"({"scale_up": "fat-tree", )" + procs + "}",
         R"(topology: scale_up: "fat-tree" is neither "switched" nor "links")"},
        {R"({"scale_out": 3, )" + procs + "}",
         "topology: the document.scale_out: must be a non-empty string"},
        {R"({"rack_chips": 8, )" + procs + "}",
         R"(topology: rack_chips: needs "scale_up": "switched")"},
        {R"({"scale_up": "switched", "rack_chips": 129, )" + procs + "}",
         "topology: rack_chips: must be a whole number below 129"},
        {R"({"scale_up": "switched", "rack_chips": 0, )" + procs + "}",
         "topology: rack_chips: must be 1..128"},
        {R"({"scale_up": "switched", )" + procs +
             R"(, "links": [{"kind": "scale-up", "a": [0, 0], "b": [1, 0]}]})",
         R"(topology: links[0]: the scale-up ports are switched ("scale_up": "switched"): no )"
         "scale-up link may join them point to point"},
    };
    for (const auto& c : cases) {
        std::string got;
        try {
            parse_topology(c.text);
        } catch (const TopologyError& e) {
            got = e.what();
        }
        EXPECT_EQ(got, c.expect) << c.text;
    }
}

}  // namespace
