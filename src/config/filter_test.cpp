// Pins: the iteration-range grammar (good and bad), kernel-name forms, and the filter pipeline:
// include then exclude then -k, iteration counts per kernel per logical launch, launch-skip and
// launch-count over what passed, statistics, thread safety, and the exit's line for a filter that
// selected nothing, with the closest kernel names by edit distance.
#include "config/filter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace kreplay::config {
namespace {

using Intervals = std::vector<std::pair<uint64_t, uint64_t>>;

Intervals parse_ok(std::string_view text) {
  auto r = IterationRange::Parse(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? r->intervals() : Intervals{};
}

std::string parse_error(std::string_view text) {
  auto r = IterationRange::Parse(text);
  EXPECT_FALSE(r.ok()) << text << " parsed";
  return r.ok() ? "" : r.status().message();
}

TEST(IterationRange, EmptyMeansAll) {
  for (std::string_view text : {"", "   "}) {
    auto r = IterationRange::Parse(text);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->all());
    EXPECT_TRUE(r->contains(1));
    EXPECT_TRUE(r->contains(1000000));
    EXPECT_EQ(r->to_string(), "");
  }
}

TEST(IterationRange, GrammarForms) {
  EXPECT_EQ(parse_ok("3"), (Intervals{{3, 3}}));
  EXPECT_EQ(parse_ok("2-4"), (Intervals{{2, 4}}));
  EXPECT_EQ(parse_ok("[1-3, 5]"), (Intervals{{1, 3}, {5, 5}}));
  EXPECT_EQ(parse_ok("[1, 2, [5-8]]"), (Intervals{{1, 2}, {5, 8}}));
  EXPECT_EQ(parse_ok("[1-2]"), (Intervals{{1, 2}}));
  EXPECT_EQ(parse_ok(" [ 7 , 1 - 2 ] "), (Intervals{{1, 2}, {7, 7}}));
  EXPECT_EQ(parse_ok("[[[4]]]"), (Intervals{{4, 4}}));
  EXPECT_EQ(parse_ok("5-5"), (Intervals{{5, 5}}));
}

TEST(IterationRange, MergesOverlapsAndNeighbours) {
  EXPECT_EQ(parse_ok("[1-3, 2-6, 7, 10]"), (Intervals{{1, 7}, {10, 10}}));
  EXPECT_EQ(parse_ok("[5, 4, 3]"), (Intervals{{3, 5}}));
}

TEST(IterationRange, Contains) {
  auto r = IterationRange::Parse("[1-3, 5, [8-9]]");
  ASSERT_TRUE(r.ok());
  for (uint64_t n : {1, 2, 3, 5, 8, 9}) EXPECT_TRUE(r->contains(n)) << n;
  for (uint64_t n : {0, 4, 6, 7, 10, 100}) EXPECT_FALSE(r->contains(n)) << n;
  EXPECT_EQ(r->to_string(), "[1-3, 5, 8-9]");
}

TEST(IterationRange, LargeNumbers) {
  EXPECT_EQ(parse_ok("18446744073709551615"),
            (Intervals{{18446744073709551615ull, 18446744073709551615ull}}));
  EXPECT_NE(parse_error("18446744073709551616").find("too large"), std::string::npos);
}

TEST(IterationRange, ErrorsNameTextPositionAndGrammar) {
  std::string m = parse_error("[1-");
  EXPECT_NE(m.find("\"[1-\""), std::string::npos) << m;
  EXPECT_NE(m.find("expected a launch number at the end"), std::string::npos) << m;
  EXPECT_NE(m.find("\"[1-3, 5]\""), std::string::npos) << m;  // the example
  EXPECT_EQ(m.find('\n'), std::string::npos);

  m = parse_error("[1-3; 5]");
  EXPECT_NE(m.find("expected ',' or ']', found ';' at column 5"), std::string::npos) << m;
  EXPECT_NE(parse_error("0").find("launch numbers start at 1"), std::string::npos);
  EXPECT_NE(parse_error("4-2").find("4-2 is reversed (write 2-4)"), std::string::npos);
  EXPECT_NE(parse_error("[]").find("empty list"), std::string::npos);
  EXPECT_NE(parse_error("[1, 2").find("missing ']'"), std::string::npos);
  EXPECT_NE(parse_error("[1,]").find("expected a launch number"), std::string::npos);
  EXPECT_NE(parse_error("1 2").find("unexpected '2'"), std::string::npos);
  EXPECT_NE(parse_error("-3").find("expected a launch number, found '-'"), std::string::npos);
  EXPECT_NE(parse_error("first").find("found 'f'"), std::string::npos);
  EXPECT_NE(parse_error("3-").find("at the end"), std::string::npos);
  EXPECT_NE(
      parse_error(std::string(40, '[') + "1" + std::string(40, ']')).find("nested too deeply"),
      std::string::npos);
}

TEST(KernelNames, FunctionName) {
  EXPECT_EQ(kernel_function_name("square(float*, int)"), "square");
  EXPECT_EQ(kernel_function_name("void ns::gemm<float, 4>(float const*, float*, int)"),
            "ns::gemm<float, 4>");
  EXPECT_EQ(kernel_function_name("void (anonymous namespace)::k<int>(int)"),
            "(anonymous namespace)::k<int>");
  EXPECT_EQ(kernel_function_name("void at::native::elementwise_kernel<128, 4, "
                                 "at::native::gpu_kernel_impl<at::native::AbsFunctor<float> >("
                                 "at::TensorIteratorBase&, at::native::AbsFunctor<float> const&)::"
                                 "{lambda(int)#1}>(int, at::native::gpu_kernel_impl<at::native::"
                                 "AbsFunctor<float> >(at::TensorIteratorBase&, at::native::"
                                 "AbsFunctor<float> const&)::{lambda(int)#1})"),
            "at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::"
            "AbsFunctor<float> >(at::TensorIteratorBase&, at::native::AbsFunctor<float> const&)::"
            "{lambda(int)#1}>");
  EXPECT_EQ(kernel_function_name("plain_c_kernel"), "plain_c_kernel");
  EXPECT_EQ(kernel_function_name(""), "");
  EXPECT_EQ(kernel_function_name("Foo::operator()(int)"), "Foo::operator()");
}

TEST(KernelNames, Forms) {
  auto forms = kernel_name_forms("", "_ZN2ns4gemmIfEEvPfi");
  EXPECT_EQ(forms,
            (std::vector<std::string>{"_ZN2ns4gemmIfEEvPfi", "void ns::gemm<float>(float*, int)",
                                      "ns::gemm<float>", "ns::gemm", "gemm"}));
  forms = kernel_name_forms("k", "");
  EXPECT_EQ(forms, (std::vector<std::string>{"k"}));
}

KernelFilter make(const FilterOptions& o) {
  auto f = KernelFilter::Create(o);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return std::move(f).value();
}

constexpr const char* kGemmMangled = "_ZN2ns4gemmIfEEvPfi";
constexpr const char* kGemm = "void ns::gemm<float>(float*, int)";
constexpr const char* kNaiveMangled = "_Z10gemm_naivePfi";
constexpr const char* kNaive = "gemm_naive(float*, int)";
constexpr const char* kConvMangled = "_Z4convPf";
constexpr const char* kConv = "conv(float*)";

TEST(KernelFilter, NoFilterSelectsEverything) {
  KernelFilter f = make({});
  EXPECT_TRUE(f.selects_everything());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(f.select(kConv, kConvMangled));
  EXPECT_EQ(f.stats().selected, 5u);
  EXPECT_EQ(f.stats().kernels_seen, 1u);
  EXPECT_FALSE(f.exhausted());
}

TEST(KernelFilter, IncludeIsPartialMatchOnDemangledName) {
  KernelFilter f = make(FilterOptions{.include_regex = "gemm"});
  EXPECT_FALSE(f.selects_everything());
  EXPECT_TRUE(f.select(kGemm, kGemmMangled));
  EXPECT_TRUE(f.select(kNaive, kNaiveMangled));
  EXPECT_FALSE(f.select(kConv, kConvMangled));
  // The demangled name is matched, so a pattern on its parameter list works.
  KernelFilter params = make(FilterOptions{.include_regex = "\\(float\\*, int\\)"});
  EXPECT_TRUE(params.select(kGemm, kGemmMangled));
  EXPECT_FALSE(params.select(kConv, kConvMangled));
}

TEST(KernelFilter, ExcludeAppliesAfterInclude) {
  KernelFilter f = make(FilterOptions{.include_regex = "gemm", .exclude_regex = "naive"});
  EXPECT_TRUE(f.select(kGemm, kGemmMangled));
  EXPECT_FALSE(f.select(kNaive, kNaiveMangled));
  EXPECT_FALSE(f.select(kConv, kConvMangled));
  // Exclude alone: everything but the matches.
  KernelFilter g = make(FilterOptions{.exclude_regex = "naive"});
  EXPECT_TRUE(g.select(kConv, kConvMangled));
  EXPECT_FALSE(g.select(kNaive, kNaiveMangled));
}

TEST(KernelFilter, DemangledNameDerivedWhenMissing) {
  KernelFilter f = make(FilterOptions{.include_regex = "^void ns::gemm<float>"});
  EXPECT_TRUE(f.select("", kGemmMangled));
  EXPECT_TRUE(f.matches_name("", kGemmMangled));
}

TEST(KernelFilter, KernelNameIsExact) {
  for (std::string name : {"gemm", "ns::gemm", "ns::gemm<float>", kGemm, kGemmMangled}) {
    KernelFilter f = make(FilterOptions{.kernel_name = name});
    EXPECT_TRUE(f.select(kGemm, kGemmMangled)) << name;
    EXPECT_FALSE(f.select(kNaive, kNaiveMangled)) << name;  // gemm_naive is not gemm
  }
  for (std::string name : {"gem", "ns::gemm<int>", "void ns::gemm<float>"}) {
    KernelFilter f = make(FilterOptions{.kernel_name = name});
    EXPECT_FALSE(f.select(kGemm, kGemmMangled)) << name;
  }
}

TEST(KernelFilter, KernelNameRegex) {
  KernelFilter f = make(FilterOptions{.kernel_name = "regex:^gemm"});
  EXPECT_TRUE(f.select(kGemm, kGemmMangled));    // the bare name "gemm" starts with gemm
  EXPECT_TRUE(f.select(kNaive, kNaiveMangled));  // so does gemm_naive
  EXPECT_FALSE(f.select(kConv, kConvMangled));
  KernelFilter anchored = make(FilterOptions{.kernel_name = "regex:^gemm$"});
  EXPECT_TRUE(anchored.select(kGemm, kGemmMangled));
  EXPECT_FALSE(anchored.select(kNaive, kNaiveMangled));
}

TEST(KernelFilter, NameStagesCombine) {
  KernelFilter f = make(FilterOptions{.include_regex = "gemm", .kernel_name = "gemm_naive"});
  EXPECT_FALSE(f.select(kGemm, kGemmMangled));
  EXPECT_TRUE(f.select(kNaive, kNaiveMangled));
}

TEST(KernelFilter, IterationsCountPerKernelPerLogicalLaunch) {
  KernelFilter f = make(FilterOptions{.iteration_range = "[2-3, 5]"});
  std::vector<bool> gemm, conv;
  for (int launch = 1; launch <= 6; ++launch) {
    gemm.push_back(f.select(kGemm, kGemmMangled));
    conv.push_back(f.select(kConv, kConvMangled));
  }
  std::vector<bool> expected = {false, true, true, false, true, false};
  EXPECT_EQ(gemm, expected);
  EXPECT_EQ(conv, expected);  // each kernel has its own count
  FilterStats s = f.stats();
  EXPECT_EQ(s.selected, 6u);
  EXPECT_EQ(s.rejected_by_iteration, 6u);
  EXPECT_EQ(s.kernels_seen, 2u);
}

TEST(KernelFilter, IterationsCountOnlyNameMatches) {
  KernelFilter f = make(FilterOptions{.include_regex = "gemm", .iteration_range = "2"});
  EXPECT_FALSE(f.select(kConv, kConvMangled));
  EXPECT_FALSE(f.select(kGemm, kGemmMangled));  // gemm launch 1
  EXPECT_FALSE(f.select(kConv, kConvMangled));
  EXPECT_TRUE(f.select(kGemm, kGemmMangled));  // gemm launch 2
  EXPECT_EQ(f.stats().rejected_by_name, 2u);
}

// The tool calls select() once per logical launch (at CONFIG); replay passes never call it. A
// launch replayed three times therefore advances the iteration count once: simulate a tool that
// plans 3 passes per selected launch and check the counts follow launches, not passes.
TEST(KernelFilter, ReplayPassesDoNotAdvanceIterations) {
  KernelFilter f = make(FilterOptions{.iteration_range = "[1, 3]"});
  int passes_run = 0;
  std::vector<int> selected_launches;
  for (int launch = 1; launch <= 4; ++launch) {
    bool selected = f.select(kGemm, kGemmMangled);  // CONFIG: once
    int passes = selected ? 3 : 1;
    for (int p = 0; p < passes; ++p) ++passes_run;  // the passes: no select() here
    if (selected) selected_launches.push_back(launch);
  }
  EXPECT_EQ(selected_launches, (std::vector<int>{1, 3}));
  EXPECT_EQ(passes_run, 3 + 1 + 3 + 1);
  EXPECT_EQ(f.stats().selected + f.stats().not_selected, 4u);
}

TEST(KernelFilter, LaunchSkipAndCountFollowNcu) {
  KernelFilter f = make(FilterOptions{.launch_skip = 2, .launch_count = 3});
  std::vector<bool> got;
  for (int i = 0; i < 7; ++i)
    got.push_back(f.select(i % 2 ? kGemm : kConv, i % 2 ? kGemmMangled : kConvMangled));
  EXPECT_EQ(got, (std::vector<bool>{false, false, true, true, true, false, false}));
  EXPECT_TRUE(f.exhausted());
  EXPECT_EQ(f.stats().rejected_by_window, 4u);
}

TEST(KernelFilter, LaunchSkipCountsOnlyNameMatches) {
  KernelFilter f = make(FilterOptions{.kernel_name = "gemm", .launch_skip = 1, .launch_count = 1});
  EXPECT_FALSE(f.select(kConv, kConvMangled));  // not a match: not counted
  EXPECT_FALSE(f.select(kGemm, kGemmMangled));  // match 1: skipped
  EXPECT_FALSE(f.select(kConv, kConvMangled));
  EXPECT_TRUE(f.select(kGemm, kGemmMangled));   // match 2: profiled
  EXPECT_FALSE(f.select(kGemm, kGemmMangled));  // count reached
  FilterStats s = f.stats();
  EXPECT_EQ(s.selected, 1u);
  EXPECT_EQ(s.rejected_by_name, 2u);
  EXPECT_EQ(s.rejected_by_window, 2u);
  EXPECT_EQ(s.not_selected, 4u);
}

TEST(KernelFilter, WindowCountsLaunchesInsideTheIterationRange) {
  KernelFilter f = make(FilterOptions{.iteration_range = "2-10", .launch_count = 1});
  EXPECT_FALSE(f.select(kGemm, kGemmMangled));  // iteration 1: outside the range
  EXPECT_TRUE(f.select(kGemm, kGemmMangled));   // iteration 2: the first in range
  EXPECT_FALSE(f.select(kGemm, kGemmMangled));
}

TEST(KernelFilter, ErrorsAreOneClearLine) {
  auto bad_include = KernelFilter::Create(FilterOptions{.include_regex = "gemm("});
  ASSERT_FALSE(bad_include.ok());
  std::string m = bad_include.status().message();
  EXPECT_NE(m.find("--kernel-include-regex \"gemm(\" is not a valid regular expression"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("missing )"), std::string::npos) << m;  // RE2's own words
  EXPECT_NE(m.find("RE2 syntax"), std::string::npos) << m;

  auto bad_exclude = KernelFilter::Create(FilterOptions{.exclude_regex = "[a-"});
  ASSERT_FALSE(bad_exclude.ok());
  EXPECT_NE(bad_exclude.status().message().find("--kernel-exclude-regex"), std::string::npos);

  auto bad_k = KernelFilter::Create(FilterOptions{.kernel_name = "regex:*x"});
  ASSERT_FALSE(bad_k.ok());
  EXPECT_NE(bad_k.status().message().find("--kernel-name regex:"), std::string::npos);

  auto empty_k = KernelFilter::Create(FilterOptions{.kernel_name = "regex:"});
  ASSERT_FALSE(empty_k.ok());
  EXPECT_NE(empty_k.status().message().find("has no expression"), std::string::npos);

  auto bad_range = KernelFilter::Create(FilterOptions{.iteration_range = "[1-"});
  ASSERT_FALSE(bad_range.ok());
  EXPECT_NE(bad_range.status().message().find("bad kernel iteration range"), std::string::npos);

  EXPECT_TRUE(validate_filter_options(FilterOptions{.include_regex = "a|b"}).ok());
  EXPECT_FALSE(validate_filter_options(FilterOptions{.include_regex = std::string(1, '(')}).ok());
  EXPECT_FALSE(check_kernel_regex("(", "kernel_include_regex").ok());
  EXPECT_NE(check_kernel_regex("(", "kernel_include_regex").message().find("kernel_include_regex"),
            std::string::npos);
}

TEST(KernelFilter, ThreadSafeAndCountsEveryLaunchOnce) {
  KernelFilter f = make(FilterOptions{.include_regex = "gemm", .launch_count = 1000});
  constexpr int kThreads = 8;
  constexpr int kLaunches = 500;
  std::atomic<int> selected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kLaunches; ++i) {
        bool gemm = (i + t) % 2 == 0;
        if (f.select(gemm ? kGemm : kConv, gemm ? kGemmMangled : kConvMangled)) ++selected;
      }
    });
  }
  for (auto& th : threads) th.join();
  FilterStats s = f.stats();
  EXPECT_EQ(s.selected + s.not_selected, static_cast<uint64_t>(kThreads * kLaunches));
  EXPECT_EQ(s.selected, 1000u);
  EXPECT_EQ(selected.load(), 1000);
  EXPECT_EQ(s.rejected_by_name, static_cast<uint64_t>(kThreads * kLaunches / 2));
  EXPECT_EQ(s.kernels_seen, 2u);
  EXPECT_TRUE(f.exhausted());
}

TEST(KernelFilter, IsMovable) {
  KernelFilter f = make(FilterOptions{.launch_count = 1});
  KernelFilter g = std::move(f);
  EXPECT_TRUE(g.select(kConv, kConvMangled));
  EXPECT_FALSE(g.select(kConv, kConvMangled));
}

TEST(ClosestKernelNames, NearestFirstHoweverFar) {
  const std::vector<std::vector<std::string>> kernels = {
      {"scale_add(float*, float, float, unsigned int)", "scale_add"},
      {"sum_reduce(unsigned int const*, unsigned long long*, unsigned int)", "sum_reduce"}};
  EXPECT_EQ(closest_kernel_names("scale_ad", kernels),
            (std::vector<std::string>{"scale_add", "sum_reduce"}));
  EXPECT_EQ(closest_kernel_names("sum_reduc", kernels),
            (std::vector<std::string>{"sum_reduce", "scale_add"}));
  // However far: a name unlike every kernel still gets the nearest ones.
  EXPECT_EQ(closest_kernel_names("nosuchkernel", kernels).size(), 2u);
  EXPECT_EQ(closest_kernel_names("x", kernels, 1).size(), 1u);
  EXPECT_TRUE(closest_kernel_names("x", kernels, 0).empty());
  EXPECT_TRUE(closest_kernel_names("x", {}).empty());
  EXPECT_TRUE(closest_kernel_names("x", {{}, {""}}).empty());
}

TEST(ClosestKernelNames, AtMostMaxOneNamePerKernelTiesByName) {
  const std::vector<std::vector<std::string>> kernels = {
      {"gemm_b"}, {"gemm_a"}, {"gemm_c"}, {"gemm_d"}, {"conv"}};
  // All four gemm_* are 1 away from "gemm_x": the first three by name.
  EXPECT_EQ(closest_kernel_names("gemm_x", kernels),
            (std::vector<std::string>{"gemm_a", "gemm_b", "gemm_c"}));
  // A kernel offers its nearest form (ties: the shorter); the same name from two kernels once.
  const std::vector<std::vector<std::string>> templates = {
      {"void ns::gemm<float>(float*, int)", "ns::gemm<float>", "ns::gemm", "gemm"},
      {"void ns::gemm<double>(double*, int)", "ns::gemm<double>", "ns::gemm", "gemm"},
      {"conv(float*)", "conv"}};
  EXPECT_EQ(closest_kernel_names("gem", templates), (std::vector<std::string>{"gemm", "conv"}));
  EXPECT_EQ(closest_kernel_names("ns::gemm<flot>", templates, 1),
            (std::vector<std::string>{"ns::gemm<float>"}));
}

TEST(ClosestKernelNames, LongNamesDoNotHideShortOnes) {
  // A template name of 200 KiB: its length alone rules it out once nearer names are found, and
  // its own short form still competes.
  const std::string huge = "void big<" + std::string(200 * 1024, 'T') + ">(int)";
  const std::vector<std::vector<std::string>> kernels = {
      {"a_kernel"}, {"b_kernel"}, {"c_kernel"}, {huge, "big"}, {huge + "x"}};
  EXPECT_EQ(closest_kernel_names("bog", kernels, 1), (std::vector<std::string>{"big"}));
  EXPECT_EQ(closest_kernel_names("a_kernel", kernels),
            (std::vector<std::string>{"a_kernel", "b_kernel", "c_kernel"}));
}

// Launches of gemm (2), gemm_naive (1) and conv (1), in that order.
void launch_all(KernelFilter& f) {
  f.select(kGemm, kGemmMangled);
  f.select(kGemm, kGemmMangled);
  f.select(kNaive, kNaiveMangled);
  f.select(kConv, kConvMangled);
}

std::string nothing_line(const FilterOptions& o) {
  KernelFilter f = make(o);
  launch_all(f);
  return f.nothing_selected_line();
}

TEST(KernelFilter, NothingSelectedNamesTheFilterAndTheClosestKernels) {
  EXPECT_EQ(nothing_line(FilterOptions{.kernel_name = "gemm_naiv"}),
            "-k gemm_naiv selected none of 4 launches of 3 kernels; the closest kernel names: "
            "gemm_naive, gemm, conv");
  // The names are the demangled ones -k matches, never the mangled one.
  EXPECT_EQ(nothing_line(FilterOptions{.kernel_name = "_Z4conv"}),
            "-k _Z4conv selected none of 4 launches of 3 kernels; the closest kernel names: "
            "conv, gemm, gemm_naive");
  // A regex is compared without its prefix.
  EXPECT_EQ(nothing_line(FilterOptions{.kernel_name = "regex:^conv2d"}),
            "-k regex:^conv2d selected none of 4 launches of 3 kernels; the closest kernel names: "
            "conv, gemm, gemm_naive");
  EXPECT_EQ(nothing_line(FilterOptions{.include_regex = "cnv"}),
            "--kernel-include-regex cnv selected none of 4 launches of 3 kernels; the closest "
            "kernel names: conv, gemm, gemm_naive");
  // Exclude alone: the closest names would be the ones it excluded.
  EXPECT_EQ(nothing_line(FilterOptions{.exclude_regex = "."}),
            "--kernel-exclude-regex . selected none of 4 launches of 3 kernels");
  // Each name option that rejected a kernel is named, in pipeline order.
  EXPECT_EQ(nothing_line(FilterOptions{.include_regex = "gemm", .kernel_name = "conv"}),
            "--kernel-include-regex gemm and -k conv selected none of 4 launches of 3 kernels; "
            "the closest kernel names: conv, gemm, gemm_naive");
}

TEST(KernelFilter, NothingSelectedByIterationsOrWindow) {
  EXPECT_EQ(nothing_line(FilterOptions{.iteration_range = "[20, 30]"}),
            "--kernel-iteration-range \"[20, 30]\" selected none of 4 launches of 3 kernels");
  EXPECT_EQ(nothing_line(FilterOptions{.iteration_range = "3"}),
            "--kernel-iteration-range 3 selected none of 4 launches of 3 kernels");
  EXPECT_EQ(nothing_line(FilterOptions{.launch_skip = 1000}),
            "--launch-skip 1000 selected none of 4 launches of 3 kernels");
  EXPECT_EQ(nothing_line(FilterOptions{.launch_skip = 1000, .launch_count = 5}),
            "--launch-skip 1000 selected none of 4 launches of 3 kernels");
  // A name that matched, then a range past its launches: both named, no names suggested.
  EXPECT_EQ(nothing_line(FilterOptions{.kernel_name = "gemm", .iteration_range = "5"}),
            "-k gemm and --kernel-iteration-range 5 selected none of 4 launches of 3 kernels");
  EXPECT_EQ(nothing_line(FilterOptions{.kernel_name = "gemm", .launch_skip = 2}),
            "-k gemm and --launch-skip 2 selected none of 4 launches of 3 kernels");
  KernelFilter one = make(FilterOptions{.launch_skip = 1});
  one.select(kConv, kConvMangled);
  EXPECT_EQ(one.nothing_selected_line(), "--launch-skip 1 selected none of 1 launch of 1 kernel");
}

TEST(KernelFilter, NothingSelectedIsSaidOnlyWhenNothingWas) {
  EXPECT_EQ(nothing_line({}), "");                                   // no filter
  EXPECT_EQ(nothing_line(FilterOptions{.kernel_name = "conv"}), "");  // one selected
  EXPECT_EQ(nothing_line(FilterOptions{.launch_skip = 3}), "");
  EXPECT_EQ(make(FilterOptions{.kernel_name = "x"}).nothing_selected_line(), "");  // no launch
  // The stats break the name stage's rejections down by option.
  KernelFilter f = make(FilterOptions{.include_regex = "gemm", .exclude_regex = "naive",
                                      .kernel_name = "regex:nomatch"});
  launch_all(f);
  FilterStats s = f.stats();
  EXPECT_EQ(s.rejected_by_name, 4u);
  EXPECT_EQ(s.rejected_by_include, 1u);
  EXPECT_EQ(s.rejected_by_exclude, 1u);
  EXPECT_EQ(s.rejected_by_kernel_name, 2u);
  EXPECT_EQ(f.nothing_selected_line(),
            "--kernel-include-regex gemm, --kernel-exclude-regex naive and -k regex:nomatch "
            "selected none of 4 launches of 3 kernels; the closest kernel names: conv, gemm, "
            "gemm_naive");
}

// ---- markers (stage 0), --kernel-id, --kernel-name-base ----

using Launch = KernelFilter::Launch;
using Markers = KernelFilter::Markers;

TEST(KernelFilter, MarkerRejectionsAreNotCountedByTheWindow) {
  // ncu: --launch-skip/--launch-count count inside the NVTX selection.
  KernelFilter f = make(FilterOptions{.launch_skip = 1, .launch_count = 2,
                                      .nvtx_include = {"step/"}});
  EXPECT_TRUE(f.uses_markers());
  EXPECT_FALSE(f.selects_everything());
  EXPECT_FALSE(f.select(Launch{kConv, kConvMangled, 0, 0, Markers::kNvtx}));
  EXPECT_FALSE(f.select(Launch{kConv, kConvMangled, 0, 0, Markers::kNvtx}));
  EXPECT_FALSE(f.select(Launch{kConv, kConvMangled}));  // skipped: the first inside
  EXPECT_TRUE(f.select(Launch{kConv, kConvMangled}));
  EXPECT_FALSE(f.select(Launch{kGemm, kGemmMangled, 0, 0, Markers::kNvtx}));
  EXPECT_TRUE(f.select(Launch{kGemm, kGemmMangled}));
  EXPECT_FALSE(f.select(Launch{kConv, kConvMangled}));  // count reached
  FilterStats st = f.stats();
  EXPECT_EQ(st.rejected_by_nvtx, 3u);
  EXPECT_EQ(st.rejected_by_window, 2u);
  EXPECT_EQ(st.selected, 2u);
  EXPECT_EQ(st.kernels_seen, 2u);
}

TEST(KernelFilter, NothingSelectedNamesTheMarkerFilters) {
  KernelFilter nvtx = make(FilterOptions{.nvtx_include = {"step/"}, .nvtx_exclude = {"warm up/"}});
  nvtx.select(Launch{kConv, kConvMangled, 0, 0, Markers::kNvtx});
  nvtx.select(Launch{kGemm, kGemmMangled, 0, 0, Markers::kNvtx});
  EXPECT_EQ(nvtx.nothing_selected_line(),
            "--nvtx-include step/ and --nvtx-exclude \"warm up/\" selected none of 2 launches of "
            "2 kernels");
  KernelFilter prof = make(FilterOptions{.profile_from_start = false});
  EXPECT_TRUE(prof.uses_markers());
  prof.select(Launch{kConv, kConvMangled, 0, 0, Markers::kProfilerStopped});
  EXPECT_EQ(prof.nothing_selected_line(),
            "--profile-from-start off (no launch came between cudaProfilerStart and "
            "cudaProfilerStop) selected none of 1 launch of 1 kernel");
  KernelFilter id = make(FilterOptions{.kernel_id = "::conv:9"});
  id.select(Launch{kConv, kConvMangled});
  EXPECT_EQ(id.nothing_selected_line(), "--kernel-id ::conv:9 selected none of 1 launch of 1 kernel");
}

TEST(KernelId, PartsAreOptionalAndTheNameMayHoldColons) {
  auto id = KernelId::Parse("0:7:ns::gemm:3");
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(id->context, 0u);
  EXPECT_EQ(id->stream, 7u);
  EXPECT_EQ(id->name, "ns::gemm");
  EXPECT_EQ(id->invocation, 3u);
  auto any = KernelId::Parse(":::");
  ASSERT_TRUE(any.ok());
  EXPECT_FALSE(any->context || any->stream || any->invocation);
  EXPECT_TRUE(any->any_name());
  auto re = KernelId::Parse("::regex:^ns::ge:");
  ASSERT_TRUE(re.ok()) << re.status().message();
  EXPECT_TRUE(re->name_matches({"ns::gemm"}));
  EXPECT_FALSE(re->name_matches({"gemm"}));
  for (std::string_view bad : {"gemm", "::gemm", "x::gemm:1", ":y:gemm:1", "::gemm:z", "::gemm:0",
                               "::regex::", "::regex:(:"}) {
    auto r = KernelId::Parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("write context:stream:name:invocation"), std::string::npos)
        << r.status().message();
  }
}

TEST(KernelFilter, KernelIdCountsInvocationsPerContextStreamAndKernel) {
  KernelFilter f = make(FilterOptions{.kernel_id = ":5:gemm:2"});
  EXPECT_FALSE(f.select(Launch{kGemm, kGemmMangled, 0, 5}));   // gemm on stream 5: 1st
  EXPECT_FALSE(f.select(Launch{kGemm, kGemmMangled, 0, 6}));   // another stream
  EXPECT_FALSE(f.select(Launch{kConv, kConvMangled, 0, 5}));   // another kernel
  EXPECT_TRUE(f.select(Launch{kGemm, kGemmMangled, 0, 5}));    // 2nd
  EXPECT_FALSE(f.select(Launch{kGemm, kGemmMangled, 0, 5}));   // 3rd
  EXPECT_TRUE(f.select(Launch{kGemm, kGemmMangled, 1, 5}) == false);  // context 1: its 1st
  EXPECT_TRUE(f.select(Launch{kGemm, kGemmMangled, 1, 5}));    // context 1: its 2nd
  EXPECT_EQ(f.stats().rejected_by_kernel_id, 5u);
  KernelFilter all = make(FilterOptions{.kernel_id = "1:::"});
  EXPECT_FALSE(all.select(Launch{kConv, kConvMangled, 0, 3}));
  EXPECT_TRUE(all.select(Launch{kConv, kConvMangled, 1, 3}));
}

TEST(KernelFilter, NameBaseChoosesWhatKAndKernelIdCompare) {
  // function (the default): the function name's forms, and the full names as before.
  KernelFilter fn = make(FilterOptions{.kernel_name = "gemm"});
  EXPECT_TRUE(fn.select(kGemm, kGemmMangled));
  KernelFilter dem = make(FilterOptions{.kernel_name = "gemm", .kernel_name_base = "demangled"});
  EXPECT_FALSE(dem.select(kGemm, kGemmMangled));
  KernelFilter dem_full = make(FilterOptions{.kernel_name = kGemm, .kernel_name_base = "demangled"});
  EXPECT_TRUE(dem_full.select(kGemm, kGemmMangled));
  KernelFilter dem_re = make(FilterOptions{.kernel_name = "regex:\\(float\\*", .kernel_name_base = "demangled"});
  EXPECT_TRUE(dem_re.select(kGemm, kGemmMangled));
  KernelFilter mangled = make(FilterOptions{.kernel_name = "regex:^_ZN2ns", .kernel_name_base = "mangled"});
  EXPECT_TRUE(mangled.select(kGemm, kGemmMangled));
  EXPECT_FALSE(mangled.select(kConv, kConvMangled));
  KernelFilter mangled_fn = make(FilterOptions{.kernel_name = "gemm", .kernel_name_base = "mangled"});
  EXPECT_FALSE(mangled_fn.select(kGemm, kGemmMangled));
  KernelFilter id = make(FilterOptions{.kernel_id = "::_Z4convPf:", .kernel_name_base = "mangled"});
  EXPECT_TRUE(id.select(Launch{kConv, kConvMangled}));
  auto bad = KernelFilter::Create(FilterOptions{.kernel_name_base = "short"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("use function (the default), demangled or mangled"),
            std::string::npos);
  auto bad_nvtx = KernelFilter::Create(FilterOptions{.nvtx_include = {"a//b"}});
  ASSERT_FALSE(bad_nvtx.ok());
  EXPECT_NE(bad_nvtx.status().message().find("--nvtx-include \"a//b\""), std::string::npos);
}

}  // namespace
}  // namespace kreplay::config
