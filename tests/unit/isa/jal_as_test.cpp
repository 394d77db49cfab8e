// jal-as, run as a program: jal-objdump's listing of an object assembles back to the same
// file; bad input exits 1 with FILE:line:column; --json reports both outcomes.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "good_object.hpp"

namespace {

struct Result {
    int exit_code = -1;
    std::string out;  // stdout and stderr
};

Result run(const std::string& program, const std::string& args)
{
    Result r;
    const std::string cmd = program + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

class JalAsTest : public testing::Test {
protected:
    void SetUp() override
    {
        dir_ = std::filesystem::temp_directory_path() /
               ("jal-as-test-" + std::to_string(getpid()) + "-" +
                testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    void write(const std::string& name, const std::string& bytes) const
    {
        std::ofstream(path(name), std::ios::binary) << bytes;
    }
    std::string read(const std::string& name) const
    {
        std::ifstream in(path(name), std::ios::binary);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }
    std::filesystem::path dir_;
};

TEST_F(JalAsTest, ObjdumpListingAssemblesBackToTheSameFile)
{
    const std::vector<uint8_t> object = jal::test::good_object();
    write("in.jalo", std::string(object.begin(), object.end()));
    const Result dump = run(JAL_OBJDUMP, path("in.jalo"));
    ASSERT_EQ(dump.exit_code, 0) << dump.out;
    write("in.s", dump.out);
    const Result as = run(JAL_AS, path("in.s") + " -o " + path("out.jalo"));
    ASSERT_EQ(as.exit_code, 0) << as.out;
    EXPECT_EQ(read("out.jalo"), read("in.jalo"));

    const Result json = run(JAL_AS, path("in.s") + " -o " + path("out2.jalo") + " --json");
    ASSERT_EQ(json.exit_code, 0) << json.out;
    const auto j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["ok"], true);
    EXPECT_EQ(j["kernel"], "count_up");
    EXPECT_EQ(j["instructions"], 9);
    EXPECT_EQ(j["bytes"], object.size());
}

TEST_F(JalAsTest, BadInputNamesFileLineAndColumn)
{
    write("bad.s", "kernel k\n  add x1, x2, q3\n  end\n");
    const Result r = run(JAL_AS, path("bad.s") + " -o " + path("bad.jalo"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find(path("bad.s") + ":2:15: expected a scalar register (x0..x31), found 'q3'"),
              std::string::npos)
        << r.out;
    EXPECT_FALSE(std::filesystem::exists(path("bad.jalo")));

    const Result j = run(JAL_AS, path("bad.s") + " -o " + path("bad.jalo") + " --json 2>/dev/null");
    EXPECT_EQ(j.exit_code, 1);
    const auto doc = nlohmann::json::parse(j.out.substr(0, j.out.rfind('}') + 1));
    EXPECT_EQ(doc["ok"], false);
    EXPECT_EQ(doc["line"], 2);
    EXPECT_EQ(doc["column"], 15);

    const Result missing = run(JAL_AS, path("none.s") + " -o " + path("x.jalo"));
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.out.find("cannot read"), std::string::npos) << missing.out;
}

}  // namespace
