// Pins: Status/Result propagation, env parsing, demangling, edit distance, suggestions, and that
// errors print at every log level, quiet included.
#include <gtest/gtest.h>

#include "common/env.hpp"
#include "common/logging.hpp"
#include "common/status.hpp"
#include "common/util.hpp"

namespace kreplay {
namespace {

Result<int> half(int v) {
  if (v % 2) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "odd");
  return v / 2;
}

Result<int> quarter(int v) {
  ASSIGN_OR_RETURN(int h, half(v));
  ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

TEST(Status, ResultPropagates) {
  EXPECT_EQ(*quarter(8), 2);
  auto r = quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(r.status().message(), "odd");
}

TEST(Status, ResultFromOkStatusIsAnError) {
  Result<int> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), KREPLAY_STATUS_ERROR_INTERNAL);
}

TEST(Env, ParsesBytes) {
  uint64_t v = 0;
  ASSERT_TRUE(env::parse_bytes("64K", &v));
  EXPECT_EQ(v, 65536u);
  ASSERT_TRUE(env::parse_bytes("3G", &v));
  EXPECT_EQ(v, 3ull << 30);
  EXPECT_FALSE(env::parse_bytes("3X", &v));
  EXPECT_FALSE(env::parse_bytes("", &v));
}

TEST(Env, Splits) {
  EXPECT_EQ(env::split("a::b:c:", ':'), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(Util, Demangles) {
  EXPECT_EQ(demangle("_Z7inplacePfmi"), "inplace(float*, unsigned long, int)");
  EXPECT_EQ(demangle("plain_c_name"), "plain_c_name");
  EXPECT_EQ(demangle("_Zgarbage"), "_Zgarbage");
}

TEST(Util, EditDistanceIsLevenshtein) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("gemm", "gemm"), 0u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // 2 substitutions, 1 insertion
  EXPECT_EQ(edit_distance("sitting", "kitten"), 3u);  // symmetric
  EXPECT_EQ(edit_distance("scale_ad", "scale_add"), 1u);
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
  EXPECT_EQ(edit_distance("ab", "ba"), 2u);  // no transpositions: two substitutions
}

TEST(Logging, ErrorsPrintAtEveryLevelQuietIncluded) {
  const log::Level before = log::level();
  log::set_level(log::Level::kQuiet);  // -q: "print only errors"
  EXPECT_TRUE(log::enabled(log::Level::kError));
  EXPECT_FALSE(log::enabled(log::Level::kWarning));
  EXPECT_FALSE(log::enabled(log::Level::kInfo));
  log::set_level(log::Level::kError);
  EXPECT_TRUE(log::enabled(log::Level::kError));
  EXPECT_FALSE(log::enabled(log::Level::kWarning));
  log::set_level(log::Level::kInfo);
  EXPECT_TRUE(log::enabled(log::Level::kWarning));
  EXPECT_TRUE(log::enabled(log::Level::kInfo));
  EXPECT_FALSE(log::enabled(log::Level::kDebug));
  log::set_level(before);
}

TEST(Util, SuggestsCloseNames) {
  std::vector<std::string> names = {"smsp__inst_executed.sum", "dram__bytes_read.sum",
                                    "dram__bytes_write.sum", "sm__cycles_elapsed.max"};
  auto s = suggest("dram__byte_read.sum", names);
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s[0], "dram__bytes_read.sum");
  EXPECT_TRUE(suggest("completely_unrelated_thing", names).empty());
}

TEST(Util, FormatsBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(3ull << 30), "3.0 GiB");
}

}  // namespace
}  // namespace kreplay
