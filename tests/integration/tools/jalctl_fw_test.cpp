// `jalctl fw status` and `jalctl fw update` against a real jal-emu: a good image is
// installed and runs, each bad kind is refused with its reason and the chip keeps its
// image, an image that never boots falls back, and attached clients stop an update.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/fw_images.hpp"
#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

using jal::test::Bytes;
using jal::test::CommandResult;
using jal::test::signed_image;
using nlohmann::json;

const std::string kBootWait = std::to_string(jal::test::kBootTimeout.count());

class JalctlFwTest : public jal::test::EmuTest {
protected:
    void SetUp() override
    {
        EmuTest::SetUp();
        dir_ = std::filesystem::path(::testing::TempDir()) /
               ("jalctl-fw-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir_);
        jalctl({"info", "--wait", kBootWait});  // booted before anything is asked
    }
    void TearDown() override
    {
        std::filesystem::remove_all(dir_);
        EmuTest::TearDown();
    }

    CommandResult jalctl(std::vector<std::string> args)
    {
        args.insert(args.begin(), jal::test::bin_path("jalctl"));
        return jal::test::run_command(args, {emu().env()});
    }
    json parse(const CommandResult& r)
    {
        try {
            return json::parse(r.out);
        } catch (const json::parse_error& e) {
            ADD_FAILURE() << "not one JSON document: " << e.what() << "\n" << r.out << r.err;
            return json();
        }
    }
    std::string file(const std::string& name, const Bytes& bytes)
    {
        const std::string path = (dir_ / name).string();
        jal::test::write_bytes(path, bytes);
        return path;
    }
    Bytes body() { return jal::test::build_body(jal::test::bin_path("jal-fw.bin")); }
    unsigned boot_count() { return parse(jalctl({"info", "--json"}))["boot_count"]; }

    std::filesystem::path dir_;
};

TEST_F(JalctlFwTest, StatusShowsTheFactoryImageInSlotA)
{
    const CommandResult r = jalctl({"fw", "status", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json st = parse(r);
    EXPECT_EQ(st["running_slot"], "A");
    EXPECT_EQ(st["rollback_fuses"], 1);
    EXPECT_EQ(st["slots"][0]["state"], "valid");
    EXPECT_EQ(st["slots"][0]["build"], "jalfw-0.1.0");
    EXPECT_EQ(st["slots"][1]["state"], "empty");
    EXPECT_EQ(st["trial"], false);
    const CommandResult text = jalctl({"fw", "status"});
    EXPECT_NE(text.out.find("running slot A (version 0.1.0)"), std::string::npos) << text.out;
}

TEST_F(JalctlFwTest, UpdateInstallsAGoodImageAndReportsItRunning)
{
    // The build's own image first (same version and counter: allowed), then a newer one.
    const CommandResult same = jalctl({"fw", "update", jal::test::bin_path("jal-fw.bin")});
    ASSERT_EQ(same.exit_code, 0) << same.out << same.err;
    EXPECT_NE(same.out.find("updated: running slot B, version 0.1.0"), std::string::npos)
        << same.out;

    const std::string newer = file("newer.bin", signed_image(body(), "0.4.2", 3));
    const CommandResult r = jalctl({"fw", "update", newer, "--json", "--timeout", kBootWait});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const json doc = parse(r);
    EXPECT_EQ(doc["updated"], true);
    EXPECT_EQ(doc["firmware"]["running_slot"], "A");
    EXPECT_EQ(doc["firmware"]["running_version"], "0.4.2");
    EXPECT_EQ(doc["firmware"]["rollback_fuses"], 3);
    EXPECT_EQ(parse(jalctl({"fw", "status", "--json"}))["running_version"], "0.4.2");
    EXPECT_EQ(parse(jalctl({"info", "--json"}))["state"], "ready");
}

TEST_F(JalctlFwTest, EachBadImageIsRejectedWithItsReasonAndTheChipKeepsItsImage)
{
    const Bytes good = signed_image(body(), "0.5.0", 1);
    const std::vector<std::tuple<const char*, Bytes, const char*>> bad = {
        {"unsigned", body(), "not a signed firmware image"},
        {"corrupted-body", jal::test::flipped(good, good.size() - 100),
         "corrupted (body hash mismatch)"},
        {"corrupted-header", jal::test::flipped(good, offsetof(jal_fw_image_header, fw_version)),
         "bad signature"},
        {"truncated", Bytes(good.begin(), good.end() - 1000), "truncated"},
        {"other-key", signed_image(body(), "0.5.0", 1, jal::fwimage::generate_key_pem()),
         "bad signature"},
        {"rolled-back", signed_image(body(), "0.5.0", 0), "rolled back"}};
    const unsigned boots = boot_count();
    for (const auto& [kind, image, reason] : bad) {
        SCOPED_TRACE(kind);
        const std::string path = file(std::string(kind) + ".bin", image);
        const CommandResult r = jalctl({"fw", "update", path, "--json"});
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        const json doc = parse(r);
        EXPECT_EQ(doc["updated"], false);
        EXPECT_EQ(doc["reason"], reason);
        EXPECT_EQ(doc["firmware"]["running_slot"], "A");
        EXPECT_NE(r.err.find(std::string("rejected by the host check: ") + reason),
                  std::string::npos)
            << r.err;
        EXPECT_NE(r.err.find("the chip still runs slot A (version 0.1.0)"), std::string::npos)
            << r.err;
    }
    EXPECT_EQ(boot_count(), boots) << "no bad image reset the chip";
    EXPECT_EQ(parse(jalctl({"fw", "status", "--json"}))["slots"][1]["state"], "empty")
        << "nothing was written";
}

TEST_F(JalctlFwTest, AMissingFileIsAClearError)
{
    const CommandResult r = jalctl({"fw", "update", (dir_ / "nothing.bin").string()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("cannot read firmware image"), std::string::npos) << r.err;
}

TEST_F(JalctlFwTest, AnImageThatFailsItsFirstBootFallsBack)
{
    if (const char* args = std::getenv("JAL_TEST_EMU_ARGS");
        args && std::string(args).find("native") != std::string::npos)
        GTEST_SKIP() << "the native firmware does not run the image's body";
    const std::string hang = file("hang.bin", signed_image(jal::test::hanging_body(), "0.9.0", 1));
    const CommandResult r = jalctl({"fw", "update", hang, "--json", "--timeout", kBootWait});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const json doc = parse(r);
    EXPECT_EQ(doc["updated"], false);
    EXPECT_EQ(doc["fell_back"], true);
    EXPECT_EQ(doc["firmware"]["running_slot"], "A");
    EXPECT_EQ(doc["firmware"]["failed_slot"], "B");
    EXPECT_NE(std::string(doc["message"]).find("failed its first boot"), std::string::npos);
}

TEST_F(JalctlFwTest, UpdateRefusesWhileAnotherClientIsAttached)
{
    jal::ChipFunction other = open_ready();
    const CommandResult r = jalctl({"fw", "update", jal::test::bin_path("jal-fw.bin")});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.out.find("refusing to update"), std::string::npos) << r.out;
    EXPECT_EQ(parse(jalctl({"fw", "status", "--json"}))["slots"][1]["state"], "empty");
}

}  // namespace
