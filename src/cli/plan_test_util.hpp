// What the plan tests (plan_test.cpp, plan_sections_test.cpp) share: a command line parsed as
// kreplay's (with `-- ./app` added unless it lists sets or sections), a plan that must succeed or
// fail on one line naming bad input, and input files from text.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "cli/plan.hpp"

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

namespace kreplay::cli::plan_testing {

inline CliOptions parse_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "kreplay");
  const bool listing = std::find(args.begin(), args.end(), "--list-sets") != args.end() ||
                       std::find(args.begin(), args.end(), "--list-sections") != args.end();
  if (!listing && std::find(args.begin(), args.end(), "--") == args.end()) {
    args.push_back("--");
    args.push_back("./app");
  }
  auto r = parse_command_line(args);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : CliOptions{};
}

inline RunPlan plan_ok(const CliOptions& o, const InputFile* f = nullptr) {
  auto r = make_run_plan(o, f);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : RunPlan{};
}

inline std::string plan_error(const CliOptions& o, const InputFile* f = nullptr) {
  auto r = make_run_plan(o, f);
  EXPECT_FALSE(r.ok()) << "planned";
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  return r.status().message();
}

inline InputFile input_text(std::string_view text, InputFormat format, const char* name) {
  auto r = parse_input_text(text, format, name);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : InputFile{};
}
inline InputFile yaml(std::string_view text) {
  return input_text(text, InputFormat::kYaml, "jobs.yaml");
}
inline InputFile json(std::string_view text) {
  return input_text(text, InputFormat::kJson, "jobs.json");
}

}  // namespace kreplay::cli::plan_testing
