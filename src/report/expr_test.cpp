// The expression language on the shared cases of tests/report/testdata/expr_cases.json (the
// Python package runs the same file), plus names() and placeholders.
#include "report/expr.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace kreplay::report {
namespace {

nlohmann::json cases() {
  std::ifstream in(KREPLAY_REPORT_TESTDATA "/expr_cases.json");
  return nlohmann::json::parse(in);
}

TEST(Expr, SharedCases) {
  auto doc = cases();
  std::map<std::string, double> vars;
  for (auto& [k, v] : doc["vars"].items()) vars[k] = v.get<double>();
  Expr::Lookup lookup = [&](std::string_view name) -> std::optional<double> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  ASSERT_GT(doc["cases"].size(), 30u);
  for (const auto& c : doc["cases"]) {
    const std::string text = c["expr"];
    auto e = Expr::parse(text);
    if (c.contains("error")) {
      EXPECT_FALSE(e.ok()) << text;
      if (!e.ok()) {
        EXPECT_NE(e.status().message().find("column"), std::string::npos) << e.status().message();
      }
      continue;
    }
    ASSERT_TRUE(e.ok()) << text << ": " << e.status().message();
    auto v = e->eval(lookup);
    if (c["value"].is_null()) {
      EXPECT_FALSE(v.has_value()) << text << " gave " << (v ? *v : 0);
    } else {
      ASSERT_TRUE(v.has_value()) << text;
      EXPECT_DOUBLE_EQ(*v, c["value"].get<double>()) << text;
    }
  }
}

TEST(Expr, FormatValueSharedCases) {
  const nlohmann::json doc = cases();  // held: a range-for over cases()["format"] would dangle
  for (const auto& c : doc["format"]) {
    std::optional<double> v;
    if (!c[0].is_null()) v = c[0].get<double>();
    EXPECT_EQ(format_value(v), c[1].get<std::string>()) << c.dump();
  }
}

TEST(Expr, NamesInFirstUseOrderWithoutFunctions) {
  auto e = Expr::parse("max(b, a) + a * min(c.d, 1) / launch.threads");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->names(), (std::vector<std::string>{"b", "a", "c.d", "launch.threads"}));
}

TEST(Expr, Placeholders) {
  Expr::Lookup lookup = [](std::string_view n) -> std::optional<double> {
    if (n == "x") return 85.25;
    return std::nullopt;
  };
  EXPECT_EQ(expand_placeholders("DRAM at {x}% ({y}) {{literal}}", lookup),
            "DRAM at 85.25% (n/a) {literal}");
  EXPECT_EQ(placeholder_names("a {x} b {y.z} {{no}}"), (std::vector<std::string>{"x", "y.z"}));
  EXPECT_EQ(expand_placeholders("open { brace", lookup), "open { brace");
}

}  // namespace
}  // namespace kreplay::report
