// jal-objdump, run as a program: a good object, a malformed one (exit 1, the validator's
// message, --force still dumps), and --json output that parses.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "good_object.hpp"

namespace {

struct Result {
    int exit_code = -1;
    std::string out;  // stdout and stderr
};

Result run(const std::string& args)
{
    Result r;
    std::string cmd = std::string(JAL_OBJDUMP) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

class ObjdumpTest : public testing::Test {
protected:
    std::filesystem::path write(const std::string& name, const std::vector<uint8_t>& bytes)
    {
        auto path = dir_ / name;
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()));
        return path;
    }
    void SetUp() override
    {
        dir_ = std::filesystem::temp_directory_path() /
               ("jal-objdump-test-" + std::to_string(getpid()) + "-" +
                testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::filesystem::path dir_;
};

TEST_F(ObjdumpTest, DisassemblesAGoodObject)
{
    auto path = write("good.jko", jal::test::good_object());
    Result r = run(path.string());
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("kernel count_up"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("      1: 1a08100000000000  ld x2, [x1]\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("jmp @4"), std::string::npos) << r.out;
}

TEST_F(ObjdumpTest, MalformedObjectPrintsTheValidatorsErrorAndExits1)
{
    auto bytes = jal::test::good_object();
    jal::test::rewrite_word(bytes, 4, JAL_INSN(JAL_OP_BGE, 4, 2, 0, 0, 50));
    auto path = write("bad.jko", bytes);
    Result r = run(path.string());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(
        r.out.find("instruction 4 (0x2310200000000032): branch target 54 is outside the code"),
        std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("kernel count_up"), std::string::npos)
        << "no dump without --force: " << r.out;

    Result forced = run("--force " + path.string());
    EXPECT_EQ(forced.exit_code, 1);
    EXPECT_NE(forced.out.find("branch target 54"), std::string::npos) << forced.out;
    EXPECT_NE(forced.out.find("bge x4, x2, @54"), std::string::npos) << forced.out;
}

TEST_F(ObjdumpTest, TruncatedObjectWithForceDumpsWhatIsThere)
{
    auto bytes = jal::test::good_object();
    bytes.resize(64 + 8 * 3 + 4);
    auto path = write("short.jko", bytes);
    Result r = run("--force " + path.string());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find("total_size is"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ld x3, [x1+8]"), std::string::npos) << r.out;
}

TEST_F(ObjdumpTest, JsonParsesAndHasHeaderArgsAndInstructions)
{
    auto path = write("good.jko", jal::test::good_object());
    Result r = run("--json " + path.string());
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j["valid"].get<bool>());
    EXPECT_EQ(j["name"], "count_up");
    EXPECT_EQ(j["header"]["code_words"], 9);
    EXPECT_EQ(j["header"]["args_size"], 16);
    ASSERT_EQ(j["args"].size(), 2u);
    EXPECT_EQ(j["args"][1]["name"], "out");
    EXPECT_EQ(j["args"][1]["kind"], "address");
    ASSERT_EQ(j["instructions"].size(), 9u);
    EXPECT_EQ(j["instructions"][4]["text"], "bge x4, x2, @8");
    EXPECT_EQ(j["instructions"][4]["mnemonic"], "bge");
    EXPECT_EQ(j["instructions"][4]["word"], "0x2310200000000004");
}

TEST_F(ObjdumpTest, JsonOfAMalformedObjectWithForceCarriesTheError)
{
    auto bytes = jal::test::good_object();
    bytes[36] = 1;  // flags
    auto path = write("flags.jko", bytes);
    Result r = run("--json --force " + path.string() + " 2>/dev/null");
    EXPECT_EQ(r.exit_code, 1);
    auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    EXPECT_FALSE(j["valid"].get<bool>());
    EXPECT_EQ(j["error"], "flags is 0x1, must be zero");
}

TEST_F(ObjdumpTest, HelpAndMissingFile)
{
    Result help = run("--help");
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("--json"), std::string::npos) << help.out;
    Result missing = run((dir_ / "nope.jko").string());
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.out.find("cannot open"), std::string::npos) << missing.out;
}

}  // namespace
