// Pins: NVTX expressions with Nsight Compute's syntax (push/pop nesting, wildcards, anchors,
// start/end ranges, domains, regex, escapes) against thread stacks and open start/end ranges;
// include/exclude together; the state kept per thread (push/pop) and per process (start/end);
// every malformed expression is one line that names the problem and shows the forms.
#include "config/nvtx_filter.hpp"

#include <gtest/gtest.h>

namespace kreplay::config {
namespace {

using Stacks = NvtxView::Stacks;

bool match(std::string_view expr, const Stacks& stacks, const Stacks& open = {}) {
  auto e = NvtxExpression::Parse(expr, "--nvtx-include");
  EXPECT_TRUE(e.ok()) << expr << ": " << e.status().message();
  if (!e.ok()) return false;
  return e->matches(NvtxView{&stacks, &open});
}

std::string parse_error(std::string_view expr) {
  auto e = NvtxExpression::Parse(expr, "--nvtx-include");
  EXPECT_FALSE(e.ok()) << expr << " parsed";
  return e.ok() ? "" : e.status().message();
}

TEST(NvtxExpression, PushPopRangeAnywhereOnTheStack) {
  EXPECT_TRUE(match("step/", {{"", {"step"}}}));
  EXPECT_TRUE(match("step/", {{"", {"train", "step", "fwd"}}}));
  EXPECT_FALSE(match("step/", {{"", {"train", "fwd"}}}));
  EXPECT_FALSE(match("step/", {}));
  // Names match exactly.
  EXPECT_FALSE(match("step/", {{"", {"step2"}}}));
}

TEST(NvtxExpression, NestingIsDirectUnlessAWildcardSaysOtherwise) {
  Stacks direct = {{"", {"A", "B"}}};
  Stacks between = {{"", {"A", "X", "B"}}};
  EXPECT_TRUE(match("A/B/", direct));
  EXPECT_TRUE(match("A/B", direct));
  EXPECT_FALSE(match("A/B/", between));
  EXPECT_TRUE(match("A/*/B", direct));
  EXPECT_TRUE(match("A/*/B", between));
  EXPECT_FALSE(match("A/+/B", direct));
  EXPECT_TRUE(match("A/+/B", between));
  EXPECT_FALSE(match("B/A/", direct));  // order matters
}

TEST(NvtxExpression, AnchorsAtTheBottomAndTheTop) {
  Stacks s = {{"", {"A", "B", "C"}}};
  EXPECT_TRUE(match("[A/", s));
  EXPECT_FALSE(match("[B/", s));
  EXPECT_TRUE(match("C]", s));
  EXPECT_FALSE(match("B]", s));
  EXPECT_TRUE(match("B/C]", s));
  EXPECT_TRUE(match("[A/*/C]", s));
  EXPECT_TRUE(match("[A/B/C]", s));
  EXPECT_FALSE(match("[A/C]", s));
}

TEST(NvtxExpression, StartEndRangesAreTheProcesses) {
  Stacks open = {{"", {"warmup", "epoch"}}};
  EXPECT_TRUE(match("epoch", {}, open));
  EXPECT_TRUE(match("epoch,warmup", {}, open));
  EXPECT_FALSE(match("epoch,eval", {}, open));
  // A start/end expression does not look at push/pop stacks, nor the other way round.
  EXPECT_FALSE(match("epoch", {{"", {"epoch"}}}));
  EXPECT_FALSE(match("epoch/", {}, open));
}

TEST(NvtxExpression, DomainsSelectTheirOwnRangesOnly) {
  Stacks s = {{"torch", {"step"}}, {"", {"other"}}};
  EXPECT_TRUE(match("torch@step/", s));
  EXPECT_FALSE(match("step/", s));  // no domain: NVTX's default domain
  EXPECT_FALSE(match("cuda@step/", s));
  EXPECT_TRUE(match("other/", s));
  EXPECT_TRUE(match("torch@ep", {}, {{"torch", {"ep"}}}));
  EXPECT_FALSE(match("ep", {}, {{"torch", {"ep"}}}));
  EXPECT_TRUE(match("regex:^to@step/", s));
}

TEST(NvtxExpression, RegexForTheWholeExpressionOrOneName) {
  Stacks s = {{"", {"train", "step_12", "fwd"}}};
  EXPECT_TRUE(match("regex:step_[0-9]+/", s));
  EXPECT_FALSE(match("regex:^step_[0-9]$/", s));
  EXPECT_TRUE(match("train/regex:step_1.*/", s));
  EXPECT_FALSE(match("train/regex:fwd/", s));  // fwd is not directly inside train
  EXPECT_TRUE(match("regex:^tr/*/fw", s));
}

TEST(NvtxExpression, EscapesMakeSeparatorsPartOfAName) {
  EXPECT_TRUE(match("a\\/b/", {{"", {"a/b"}}}));
  EXPECT_TRUE(match("x\\@y/", {{"", {"x@y"}}}));
  EXPECT_TRUE(match("list\\]", {}, {{"", {"list]"}}}));
  EXPECT_TRUE(match("p\\,q", {}, {{"", {"p,q"}}}));
}

TEST(NvtxExpression, MalformedExpressionsAreOneLineEach) {
  for (std::string_view bad : {"", "regex:", "A//B", "@A/", "D@", "A@B@C/", "[/", "*/",
                               "A/regex:(/", "regex:(", "A],B", "A]/B/", "A,,B", "A,B/",
                               "A,D@B", "A/D@B/"}) {
    std::string m = parse_error(bad);
    EXPECT_NE(m.find("--nvtx-include"), std::string::npos) << bad << ": " << m;
    EXPECT_NE(m.find("write it like"), std::string::npos) << bad << ": " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << bad << ": " << m;
  }
  EXPECT_NE(parse_error("A//B").find("empty"), std::string::npos);
  EXPECT_NE(parse_error("regex:(").find("not a valid regular expression"), std::string::npos);
}

TEST(NvtxFilter, IncludesAreAlternativesAndExcludesWin) {
  auto f = NvtxFilter::Create({"step/", "eval/"}, {"step/warmup/"});
  ASSERT_TRUE(f.ok()) << f.status().message();
  Stacks step = {{"", {"step"}}}, eval = {{"", {"eval"}}}, warm = {{"", {"step", "warmup"}}},
         none;
  EXPECT_TRUE(f->selects({&step, nullptr}));
  EXPECT_TRUE(f->selects({&eval, nullptr}));
  EXPECT_FALSE(f->selects({&warm, nullptr}));
  EXPECT_FALSE(f->selects({&none, nullptr}));
  auto only_exclude = NvtxFilter::Create({}, {"warmup/"});
  ASSERT_TRUE(only_exclude.ok());
  EXPECT_TRUE(only_exclude->selects({&none, nullptr}));
  EXPECT_FALSE(only_exclude->selects({&warm, nullptr}));
  auto bad = NvtxFilter::Create({"ok/"}, {"A//B"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--nvtx-exclude"), std::string::npos);
}

TEST(NvtxState, PushPopPerThreadStartEndPerProcess) {
  auto f = NvtxFilter::Create({"step/"}, {});
  auto g = NvtxFilter::Create({"epoch"}, {});
  ASSERT_TRUE(f.ok() && g.ok());
  NvtxState s;
  s.push(1, "", "step");
  EXPECT_TRUE(s.selects(*f, 1));
  EXPECT_FALSE(s.selects(*f, 2));  // another thread's stack is its own
  EXPECT_EQ(s.describe(1), "step");
  s.push(1, "", "fwd");
  EXPECT_EQ(s.describe(1), "step > fwd");
  s.pop(1, "");
  s.pop(1, "");
  EXPECT_FALSE(s.selects(*f, 1));
  s.pop(1, "");  // one pop too many is ignored
  s.push(1, "other", "step");
  EXPECT_FALSE(s.selects(*f, 1));  // another domain
  s.pop(1, "other");

  s.start(7, "", "epoch");
  EXPECT_TRUE(s.selects(*g, 1));
  EXPECT_TRUE(s.selects(*g, 2));  // start/end ranges are the process's
  s.end(8);                       // unknown id: ignored
  EXPECT_TRUE(s.selects(*g, 2));
  s.end(7);
  EXPECT_FALSE(s.selects(*g, 2));
}

}  // namespace
}  // namespace kreplay::config
