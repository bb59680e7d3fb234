// Pins: output-name tokens (long, short, %q{VAR}, %env{VAR}%, %%), rank precedence, errors for
// unknown tokens and unset variables, the per-process test, and the claim rule for processes
// that would write the same name (rocm-systems#7472).
#include "config/output_path.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace kreplay::config {
namespace {

ExpansionContext context(std::map<std::string, std::string> env = {}) {
  ExpansionContext c;
  c.hostname = "node7";
  c.pid = 4242;
  c.ppid = 17;
  c.getenv = [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  return c;
}

std::string expand(std::string_view text, const ExpansionContext& c = context()) {
  auto r = expand_output_template(text, c);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? *r : "";
}

std::string error(std::string_view text, const ExpansionContext& c = context()) {
  auto r = expand_output_template(text, c);
  EXPECT_FALSE(r.ok()) << text << " expanded to " << (r.ok() ? *r : "");
  return r.ok() ? "" : r.status().message();
}

TEST(OutputTemplate, LongTokens) {
  EXPECT_EQ(expand("%hostname%/%pid%"), "node7/4242");
  EXPECT_EQ(expand("p%ppid%"), "p17");
  EXPECT_EQ(expand("plain/name"), "plain/name");
  EXPECT_EQ(expand(""), "");
  EXPECT_EQ(expand("%hostname%%pid%"), "node74242");
}

TEST(OutputTemplate, ShortFormsAndPercent) {
  EXPECT_EQ(expand("%h_%p"), "node7_4242");
  EXPECT_EQ(expand("%h%p"), "node74242");
  EXPECT_EQ(expand("report.%p.out"), "report.4242.out");
  EXPECT_EQ(expand("100%%"), "100%");
  EXPECT_EQ(expand("%%pid%%"), "%pid%");
  EXPECT_EQ(expand("%hx"), "node7x");  // ncu: %h followed by text
}

TEST(OutputTemplate, EnvironmentVariables) {
  auto c = context({{"OMPI_COMM_WORLD_RANK", "3"}, {"JOB", "run42"}});
  EXPECT_EQ(expand("report.%q{OMPI_COMM_WORLD_RANK}", c), "report.3");
  EXPECT_EQ(expand("%env{JOB}%/%q{JOB}", c), "run42/run42");
}

TEST(OutputTemplate, UnsetVariableIsAnError) {
  std::string m = error("report.%q{NOPE}");
  EXPECT_NE(m.find("environment variable NOPE is not set"), std::string::npos) << m;
  m = error("%env{NOPE}%");
  EXPECT_NE(m.find("NOPE is not set"), std::string::npos) << m;
  // The syntax is fine: only expansion needs the variable.
  EXPECT_TRUE(validate_output_template("report.%q{NOPE}").ok());
}

TEST(OutputTemplate, UnknownTokenIsAnErrorWithSuggestion) {
  std::string m = error("%hostnme%/%pid%");
  EXPECT_NE(m.find("unknown token %hostnme%"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean %hostname%?"), std::string::npos) << m;
  EXPECT_NE(m.find("known tokens are"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_NE(error("%foo%").find("unknown token %foo%"), std::string::npos);
  EXPECT_FALSE(validate_output_template("%foo%").ok());
}

TEST(OutputTemplate, MalformedTokens) {
  EXPECT_NE(error("out%").find("a lone '%' at the end"), std::string::npos);
  EXPECT_NE(error("%q{VAR").find("%q{ has no closing }"), std::string::npos);
  EXPECT_NE(error("%env{VAR}").find("%env{ has no closing }%"), std::string::npos);
  EXPECT_NE(error("%q{}").find("names no variable"), std::string::npos);
  EXPECT_NE(error("%q{A B}").find("is not an environment variable name"), std::string::npos);
  EXPECT_NE(error("%pid_x").find("%pid has no closing % (write %pid%)"), std::string::npos);
  EXPECT_NE(error("%x").find("'%x' starts no token"), std::string::npos);
  EXPECT_NE(error("%-").find("starts no token"), std::string::npos);
}

TEST(OutputTemplate, ControlCharactersAreRefused) {
  EXPECT_NE(error("a\nb").find("contains a control character"), std::string::npos);
  EXPECT_NE(error(std::string("a\0b", 3)).find("control character"), std::string::npos);
  EXPECT_EQ(error("a\tb").find('\t'), std::string::npos);  // shown as '?'
}

TEST(OutputTemplate, RankPrecedence) {
  // The pid when no rank variable is set.
  EXPECT_EQ(expand("r%rank%"), "r4242");
  EXPECT_FALSE(mpi_rank(context()).has_value());
  // Each variable alone.
  for (const char* var : kRankVariables) {
    EXPECT_EQ(expand("%rank%", context({{var, "5"}})), "5") << var;
  }
  // Every one set to its index: the first in the list wins.
  std::map<std::string, std::string> all;
  for (size_t i = 0; i < kRankVariables.size(); ++i)
    all[kRankVariables[i]] = std::to_string(i + 10);
  EXPECT_EQ(expand("%rank%", context(all)), "10");
  // Open MPI inside a Slurm allocation: Open MPI wins.
  EXPECT_EQ(expand("%rank%", context({{"SLURM_PROCID", "0"}, {"OMPI_COMM_WORLD_RANK", "7"}})), "7");
  // The user override beats everything.
  EXPECT_EQ(expand("%rank%", context({{"KREPLAY_RANK", "2"}, {"OMPI_COMM_WORLD_RANK", "7"}})), "2");
  // A value that is not a non-negative integer is skipped.
  EXPECT_EQ(expand("%rank%", context({{"OMPI_COMM_WORLD_RANK", "x"}, {"PMI_RANK", "4"}})), "4");
  EXPECT_EQ(expand("%rank%", context({{"OMPI_COMM_WORLD_RANK", "-1"}})), "4242");
}

TEST(OutputTemplate, PerProcess) {
  EXPECT_TRUE(template_is_per_process("%hostname%/%pid%"));
  EXPECT_TRUE(template_is_per_process("out_%p"));
  EXPECT_TRUE(template_is_per_process("r%rank%"));
  EXPECT_TRUE(template_is_per_process("report.%q{OMPI_COMM_WORLD_RANK}"));
  EXPECT_FALSE(template_is_per_process("results"));
  EXPECT_FALSE(template_is_per_process("%hostname%/results"));
  EXPECT_FALSE(template_is_per_process("%env{JOB}%"));
  EXPECT_FALSE(template_is_per_process("%%pid%%"));
}

TEST(OutputTemplate, BasePath) {
  OutputOptions o;
  auto c = context();
  EXPECT_EQ(*output_base_path(o, c), "./node7/4242");
  o.directory = "out/%rank%/";
  o.file = "r";
  EXPECT_EQ(*output_base_path(o, c), "out/4242/r");
  o.file = "/abs/name";
  EXPECT_EQ(*output_base_path(o, c), "/abs/name");
  o.file = "%bad%";
  EXPECT_FALSE(output_base_path(o, c).ok());
}

TEST(OutputTemplate, CurrentProcess) {
  ExpansionContext c = ExpansionContext::current();
  EXPECT_EQ(c.pid, static_cast<int64_t>(::getpid()));
  EXPECT_EQ(c.ppid, static_cast<int64_t>(::getppid()));
  EXPECT_FALSE(c.hostname.empty());
  EXPECT_EQ(expand("%p", c), std::to_string(::getpid()));
}

class ClaimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kreplay_claim_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// A forking application writing with -o results: the first process gets the name, the next
// finds it taken and writes results.<pid>; nothing is overwritten.
TEST_F(ClaimTest, SecondProcessGetsPidSuffix) {
  std::string base = (dir_ / "sub" / "results").string();
  auto first = claim_output_base(base, "_results.db", 100);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(*first, base);
  EXPECT_TRUE(std::filesystem::exists(base + "_results.db"));

  auto second = claim_output_base(base, "_results.db", 200);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(*second, base + ".200");
  EXPECT_TRUE(std::filesystem::exists(base + ".200_results.db"));

  auto third = claim_output_base(base, "_results.db", 200);  // same pid again (pid reuse)
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(*third, base + ".200.2");
}

TEST_F(ClaimTest, UnwritableDirectoryIsClear) {
  auto r = claim_output_base("/proc/kreplay_no/results", "_results.db", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot create"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace kreplay::config
