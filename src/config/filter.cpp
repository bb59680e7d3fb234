#include "config/filter.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <mutex>
#include <unordered_map>

#include "common/util.hpp"
#include "config/nvtx_filter.hpp"
#include "config/regex.hpp"
#include "config/text.hpp"

namespace kreplay::config {
namespace {

constexpr const char* kRangeExamples = R"("[1-3, 5]", "[1, 2, [5-8]]", "3" or "2-4")";
constexpr int kMaxRangeDepth = 16;

class RangeParser {
 public:
  explicit RangeParser(std::string_view text) : s_(text) {}

  // Returns false and sets error_/error_pos_ on failure.
  bool parse(std::vector<std::pair<uint64_t, uint64_t>>* out, bool* all) {
    skip_blanks();
    if (pos_ == s_.size()) {
      *all = true;
      return true;
    }
    *all = false;
    bool ok = peek() == '[' ? parse_list(1) : parse_item();
    if (!ok) return false;
    skip_blanks();
    if (pos_ != s_.size())
      return fail(fmt::format("unexpected '{}'", printable(s_.substr(pos_, 1))));
    *out = std::move(intervals_);
    return true;
  }

  const std::string& error() const { return error_; }
  size_t error_column() const { return error_pos_ + 1; }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_blanks() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool fail(std::string what) {
    error_ = std::move(what);
    error_pos_ = pos_;
    return false;
  }

  bool parse_number(uint64_t* value) {
    skip_blanks();
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    if (pos_ == start) {
      if (pos_ == s_.size()) return fail("expected a launch number at the end");
      return fail(
          fmt::format("expected a launch number, found '{}'", printable(s_.substr(pos_, 1))));
    }
    auto [ptr, ec] = std::from_chars(s_.data() + start, s_.data() + pos_, *value);
    if (ec != std::errc() || ptr != s_.data() + pos_) {
      pos_ = start;
      return fail("launch number too large");
    }
    if (*value == 0) {
      pos_ = start;
      return fail("launch numbers start at 1");
    }
    return true;
  }

  bool parse_item() {
    uint64_t lo = 0;
    if (!parse_number(&lo)) return false;
    uint64_t hi = lo;
    skip_blanks();
    if (peek() == '-') {
      ++pos_;
      size_t hi_pos = pos_;
      if (!parse_number(&hi)) return false;
      if (hi < lo) {
        pos_ = hi_pos;
        return fail(fmt::format("{}-{} is reversed (write {}-{})", lo, hi, hi, lo));
      }
    }
    intervals_.emplace_back(lo, hi);
    return true;
  }

  bool parse_list(int depth) {
    if (depth > kMaxRangeDepth) return fail("lists nested too deeply");
    ++pos_;  // '['
    skip_blanks();
    if (peek() == ']') return fail("an empty list selects no launch (leave the range out for all)");
    for (;;) {
      skip_blanks();
      bool ok = peek() == '[' ? parse_list(depth + 1) : parse_item();
      if (!ok) return false;
      skip_blanks();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      if (pos_ == s_.size()) return fail("missing ']'");
      return fail(fmt::format("expected ',' or ']', found '{}'", printable(s_.substr(pos_, 1))));
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
  size_t error_pos_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> intervals_;
};

constexpr std::string_view kRegexPrefix = "regex:";

Status regex_error(std::string_view option, std::string_view pattern, const std::string& error) {
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
               fmt::format("{} \"{}\" is not a valid regular expression: {}; use RE2 syntax, "
                           "e.g. \"gemm|conv_.*\"",
                           option, printable(pattern), printable(error, 120)));
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Position of the bracket that opens the group ending at s[end] (which is @p close), scanning
// backwards; npos when unbalanced.
size_t matching_open(std::string_view s, size_t end, char open, char close) {
  int depth = 0;
  for (size_t i = end + 1; i-- > 0;) {
    if (s[i] == close) ++depth;
    if (s[i] == open && --depth == 0) return i;
  }
  return std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::string_view without_templates(std::string_view name) {
  name = trim(name);
  if (name.empty() || name.back() != '>') return name;
  size_t open = matching_open(name, name.size() - 1, '<', '>');
  if (open == std::string_view::npos || open == 0) return name;
  return trim(name.substr(0, open));
}

std::string_view without_scope(std::string_view name) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
    if ((c == '>' || c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(std::min(start, name.size()));
}

// "--option value", the value printable, bounded and quoted when it has blanks or is empty.
std::string option_text(std::string_view option, std::string_view value) {
  std::string v = printable(value, 80);
  bool quote = v.empty() || v.find_first_of(" \t") != std::string::npos;
  return quote ? fmt::format("{} \"{}\"", option, v) : fmt::format("{} {}", option, v);
}

// "a", "a and b", "a, b and c".
std::string join_and(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? " and " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// IterationRange
// ---------------------------------------------------------------------------------------------

Result<IterationRange> IterationRange::Parse(std::string_view text) {
  RangeParser parser(text);
  IterationRange range;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  if (!parser.parse(&intervals, &range.all_)) {
    return Error(
        KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
        fmt::format("bad kernel iteration range \"{}\": {} at column {}; write it like {}",
                    printable(text), parser.error(), parser.error_column(), kRangeExamples));
  }
  std::sort(intervals.begin(), intervals.end());
  for (const auto& iv : intervals) {
    if (!range.intervals_.empty() && (iv.first <= range.intervals_.back().second ||
                                      iv.first - 1 == range.intervals_.back().second)) {
      range.intervals_.back().second = std::max(range.intervals_.back().second, iv.second);
    } else {
      range.intervals_.push_back(iv);
    }
  }
  return range;
}

bool IterationRange::contains(uint64_t iteration) const {
  if (all_) return true;
  auto it = std::upper_bound(
      intervals_.begin(), intervals_.end(), iteration,
      [](uint64_t value, const std::pair<uint64_t, uint64_t>& iv) { return value < iv.first; });
  if (it == intervals_.begin()) return false;
  --it;
  return iteration <= it->second;
}

std::string IterationRange::to_string() const {
  if (all_) return "";
  std::string out = "[";
  for (size_t i = 0; i < intervals_.size(); ++i) {
    if (i > 0) out += ", ";
    const auto& [lo, hi] = intervals_[i];
    out += lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi);
  }
  return out + "]";
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

std::string_view kernel_function_name(std::string_view demangled) {
  std::string_view name = trim(demangled);
  // The parameter list: the balanced "(...)" group at the end.
  if (!name.empty() && name.back() == ')') {
    size_t open = matching_open(name, name.size() - 1, '(', ')');
    if (open != std::string_view::npos && open > 0) name = trim(name.substr(0, open));
  }
  // The return type (templates only): everything up to the last blank outside brackets.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
    if ((c == '>' || c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    if (depth == 0 && c == ' ') start = i + 1;
  }
  std::string_view fn = name.substr(std::min(start, name.size()));
  return fn.empty() ? name : fn;
}

std::vector<std::string> kernel_name_forms(std::string_view demangled, std::string_view mangled) {
  std::string full = demangled.empty() ? demangle(mangled) : std::string(demangled);
  std::string_view fn = kernel_function_name(full);
  std::string_view bare = without_templates(fn);
  std::vector<std::string> forms;
  for (std::string_view form : {mangled, std::string_view(full), fn, bare, without_scope(bare)}) {
    if (form.empty()) continue;
    if (std::find(forms.begin(), forms.end(), form) == forms.end()) forms.emplace_back(form);
  }
  return forms;
}

// ---------------------------------------------------------------------------------------------
// KernelFilter
// ---------------------------------------------------------------------------------------------

struct KernelFilter::Impl {
  FilterOptions options;
  std::unique_ptr<RE2> include;
  std::unique_ptr<RE2> exclude;
  std::unique_ptr<RE2> name_regex;  // -k regex:EXPR
  std::string exact_name;           // -k NAME
  IterationRange range;
  KernelNameBase base = KernelNameBase::kFunction;
  std::optional<KernelId> kernel_id;
  // --kernel-id: launches per (context, stream, kernel key) that reached it
  std::map<std::tuple<uint64_t, uint64_t, std::string>, uint64_t> invocations;

  // The name stage's verdict on a kernel: selected, or the option that rejected it.
  enum class Name : uint8_t { kOk, kInclude, kExclude, kKernelName };
  struct Kernel {
    Name name = Name::kOk;
    bool id_name = true;       // --kernel-id's name part matches
    bool mangled_key = false;  // the map's key is the mangled name (else the demangled one)
    uint64_t launches = 0;     // launches that passed the name stage
  };
  mutable std::mutex mu;
  std::unordered_map<std::string, Kernel, StringHash, std::equal_to<>> kernels;
  uint64_t window_launches = 0;  // launches that passed names and iterations
  // kernels whose launches stage 0 rejected (counted in kernels_seen once with `kernels`)
  std::set<std::string, std::less<>> seen_outside_names;
  FilterStats stats;

  Name check_name(std::string_view demangled, std::string_view mangled) const {
    std::string derived;
    if (demangled.empty() && !mangled.empty()) {
      derived = demangle(mangled);
      demangled = derived;
    }
    if (include && !partial_match(*include, demangled)) return Name::kInclude;
    if (exclude && partial_match(*exclude, demangled)) return Name::kExclude;
    if (name_regex || !exact_name.empty()) {
      std::vector<std::string> forms = kernel_names_for_base(base, demangled, mangled);
      if (forms.empty()) forms.emplace_back();
      auto hit = [&](const std::string& form) {
        return name_regex ? partial_match(*name_regex, form) : form == exact_name;
      };
      if (std::none_of(forms.begin(), forms.end(), hit)) return Name::kKernelName;
    }
    return Name::kOk;
  }
};

Status check_kernel_regex(std::string_view pattern, std::string_view option) {
  std::string error;
  if (!compile_regex(pattern, &error)) return regex_error(option, pattern, error);
  return Status::Ok();
}

Result<KernelFilter> KernelFilter::Create(const FilterOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  std::string error;
  if (!options.include_regex.empty()) {
    impl->include = compile_regex(options.include_regex, &error);
    if (!impl->include) return regex_error("--kernel-include-regex", options.include_regex, error);
  }
  if (!options.exclude_regex.empty()) {
    impl->exclude = compile_regex(options.exclude_regex, &error);
    if (!impl->exclude) return regex_error("--kernel-exclude-regex", options.exclude_regex, error);
  }
  std::string_view name = options.kernel_name;
  if (name.substr(0, kRegexPrefix.size()) == kRegexPrefix) {
    std::string_view expr = name.substr(kRegexPrefix.size());
    if (expr.empty()) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "--kernel-name \"regex:\" has no expression; write e.g. -k regex:gemm");
    }
    impl->name_regex = compile_regex(expr, &error);
    if (!impl->name_regex) return regex_error("--kernel-name regex:", expr, error);
  } else {
    impl->exact_name = std::string(name);
  }
  ASSIGN_OR_RETURN(impl->range, IterationRange::Parse(options.iteration_range));
  auto base = parse_kernel_name_base(options.kernel_name_base);
  if (!base) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("--kernel-name-base \"{}\" is not a name base; use function (the "
                             "default), demangled or mangled",
                             printable(options.kernel_name_base, 40)));
  }
  impl->base = *base;
  if (!options.kernel_id.empty()) {
    ASSIGN_OR_RETURN(impl->kernel_id, KernelId::Parse(options.kernel_id));
  }
  RETURN_IF_ERROR(validate_nvtx_expressions(options.nvtx_include, options.nvtx_exclude));
  return KernelFilter(std::move(impl));
}

KernelFilter::KernelFilter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KernelFilter::KernelFilter(KernelFilter&&) noexcept = default;
KernelFilter& KernelFilter::operator=(KernelFilter&&) noexcept = default;
KernelFilter::~KernelFilter() = default;

bool KernelFilter::select(std::string_view demangled, std::string_view mangled) {
  return select(Launch{demangled, mangled});
}

bool KernelFilter::select(const Launch& launch) {
  Impl& s = *impl_;
  const std::string_view demangled = launch.demangled, mangled = launch.mangled;
  std::string_view key = mangled.empty() ? demangled : mangled;
  std::unique_lock lock(s.mu);
  if (launch.markers != Markers::kSelected) {
    // Stage 0: not counted by any later stage (ncu counts --launch-skip inside the selection).
    ++(launch.markers == Markers::kNvtx ? s.stats.rejected_by_nvtx : s.stats.rejected_by_profiler);
    ++s.stats.not_selected;
    // The kernel is still one the run saw (its names are matched when a launch reaches them).
    if (s.seen_outside_names.insert(std::string(key)).second && s.kernels.find(key) == s.kernels.end())
      ++s.stats.kernels_seen;
    return false;
  }
  auto it = s.kernels.find(key);
  if (it == s.kernels.end()) {
    // Match the names outside the lock: regexes over long names are the slow part.
    lock.unlock();
    Impl::Name verdict = s.check_name(demangled, mangled);
    lock.lock();
    bool id_name = !s.kernel_id || s.kernel_id->name_matches(
                                       kernel_names_for_base(s.base, demangled, mangled));
    auto [inserted, fresh] = s.kernels.try_emplace(std::string(key));
    if (fresh) {
      inserted->second.name = verdict;
      inserted->second.id_name = id_name;
      inserted->second.mangled_key = !mangled.empty();
      if (!s.seen_outside_names.contains(key)) ++s.stats.kernels_seen;
    }
    it = inserted;
  }
  Impl::Kernel& kernel = it->second;
  bool selected = false;
  // --kernel-id: context, stream and name, then the invocation of this launch among those.
  bool id_ok = true;
  if (kernel.name == Impl::Name::kOk && s.kernel_id) {
    const KernelId& id = *s.kernel_id;
    id_ok = kernel.id_name && (!id.context || *id.context == launch.context) &&
            (!id.stream || *id.stream == launch.stream);
    if (id_ok && id.invocation) {
      uint64_t n = ++s.invocations[{launch.context, launch.stream, std::string(key)}];
      id_ok = n == *id.invocation;
    }
  }
  if (kernel.name != Impl::Name::kOk) {
    ++s.stats.rejected_by_name;
    ++(kernel.name == Impl::Name::kInclude   ? s.stats.rejected_by_include
       : kernel.name == Impl::Name::kExclude ? s.stats.rejected_by_exclude
                                             : s.stats.rejected_by_kernel_name);
  } else if (!id_ok) {
    ++s.stats.rejected_by_name;
    ++s.stats.rejected_by_kernel_id;
  } else if (!s.range.contains(++kernel.launches)) {
    ++s.stats.rejected_by_iteration;
  } else {
    uint64_t n = ++s.window_launches;
    const FilterOptions& o = s.options;
    bool in_window =
        n > o.launch_skip && (o.launch_count == 0 || n - o.launch_skip <= o.launch_count);
    if (in_window) {
      selected = true;
    } else {
      ++s.stats.rejected_by_window;
    }
  }
  ++(selected ? s.stats.selected : s.stats.not_selected);
  return selected;
}

bool KernelFilter::matches_name(std::string_view demangled, std::string_view mangled) const {
  return impl_->check_name(demangled, mangled) == Impl::Name::kOk;
}

bool KernelFilter::selects_everything() const {
  const Impl& s = *impl_;
  return !s.include && !s.exclude && !s.name_regex && s.exact_name.empty() && s.range.all() &&
         s.options.launch_skip == 0 && s.options.launch_count == 0 && !s.kernel_id &&
         !uses_markers();
}

bool KernelFilter::uses_markers() const {
  const FilterOptions& o = impl_->options;
  return !o.profile_from_start || !o.nvtx_include.empty() || !o.nvtx_exclude.empty();
}

bool KernelFilter::exhausted() const {
  std::lock_guard lock(impl_->mu);
  return impl_->options.launch_count != 0 && impl_->stats.selected >= impl_->options.launch_count;
}

FilterStats KernelFilter::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

std::string KernelFilter::nothing_selected_line() const {
  const Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  const FilterStats& st = s.stats;
  const uint64_t seen = st.selected + st.not_selected;
  if (st.selected > 0 || seen == 0) return {};
  const FilterOptions& o = s.options;
  // The options that rejected launches, in the order the pipeline applies them.
  std::vector<std::string> by;
  if (st.rejected_by_profiler > 0) {
    by.emplace_back(st.rejected_by_profiler == seen
                        ? "--profile-from-start off (no launch came between cudaProfilerStart and "
                          "cudaProfilerStop)"
                        : "--profile-from-start off");
  }
  if (st.rejected_by_nvtx > 0) {
    for (const auto& e : o.nvtx_include) by.push_back(option_text("--nvtx-include", e));
    for (const auto& e : o.nvtx_exclude) by.push_back(option_text("--nvtx-exclude", e));
  }
  if (st.rejected_by_include > 0)
    by.push_back(option_text("--kernel-include-regex", o.include_regex));
  if (st.rejected_by_exclude > 0)
    by.push_back(option_text("--kernel-exclude-regex", o.exclude_regex));
  if (st.rejected_by_kernel_name > 0) by.push_back(option_text("-k", o.kernel_name));
  if (st.rejected_by_kernel_id > 0) by.push_back(option_text("--kernel-id", o.kernel_id));
  if (st.rejected_by_iteration > 0)
    by.push_back(option_text("--kernel-iteration-range", o.iteration_range));
  if (st.rejected_by_window > 0) {
    by.push_back(o.launch_skip > 0 ? fmt::format("--launch-skip {}", o.launch_skip)
                                   : fmt::format("--launch-count {}", o.launch_count));
  }
  if (by.empty()) return {};
  std::string line =
      fmt::format("{} selected none of {} launch{} of {} kernel{}", join_and(by), seen,
                  seen == 1 ? "" : "es", st.kernels_seen, st.kernels_seen == 1 ? "" : "s");
  // Names help only when the names decided: the kernels the run has, nearest to what was asked.
  std::string_view wanted;
  if (st.rejected_by_name == seen) {
    if (st.rejected_by_kernel_name > 0) {
      wanted = o.kernel_name;
      if (wanted.substr(0, kRegexPrefix.size()) == kRegexPrefix)
        wanted.remove_prefix(kRegexPrefix.size());
    } else if (st.rejected_by_include > 0) {
      wanted = o.include_regex;
    }
  }
  if (wanted.empty()) return line;
  std::vector<std::vector<std::string>> kernels;
  kernels.reserve(s.kernels.size());
  for (const auto& [key, kernel] : s.kernels) {
    std::vector<std::string> forms =
        kernel.mangled_key ? kernel_name_forms("", key) : kernel_name_forms(key, "");
    // The mangled name is no name to suggest (-k takes it, but nobody types it).
    if (kernel.mangled_key && key.starts_with("_Z")) std::erase(forms, key);
    kernels.push_back(std::move(forms));
  }
  std::vector<std::string> close = closest_kernel_names(wanted, kernels);
  if (close.empty()) return line;
  for (auto& name : close) name = printable(name, 120);
  return fmt::format("{}; the closest kernel name{}: {}", line, close.size() == 1 ? "" : "s",
                     fmt::join(close, ", "));
}

std::vector<std::string> closest_kernel_names(std::string_view wanted,
                                              const std::vector<std::vector<std::string>>& kernels,
                                              size_t max) {
  struct Near {
    size_t distance;
    const std::string* name;
  };
  auto before = [](const Near& a, const Near& b) {
    return a.distance != b.distance ? a.distance < b.distance : *a.name < *b.name;
  };
  std::vector<Near> best;  // sorted by `before`, at most max, distinct names
  if (max == 0) return {};
  for (const auto& forms : kernels) {
    const std::string* pick = nullptr;
    size_t pick_distance = SIZE_MAX;
    for (const std::string& form : forms) {
      if (form.empty()) continue;
      // The lengths alone bound the distance from below: a long name that cannot beat what is
      // already found (this kernel's nearer form, or the max-th nearest so far) is not compared.
      size_t lower =
          form.size() > wanted.size() ? form.size() - wanted.size() : wanted.size() - form.size();
      size_t bound = pick_distance;
      if (best.size() == max) bound = std::min(bound, best.back().distance);
      if (lower > bound) continue;
      size_t d = edit_distance(form, wanted);
      if (d < pick_distance || (d == pick_distance && form.size() < pick->size())) {
        pick = &form;
        pick_distance = d;
      }
    }
    if (pick == nullptr) continue;
    if (std::any_of(best.begin(), best.end(), [&](const Near& n) { return *n.name == *pick; }))
      continue;
    Near n{pick_distance, pick};
    best.insert(std::upper_bound(best.begin(), best.end(), n, before), n);
    if (best.size() > max) best.pop_back();
  }
  std::vector<std::string> out;
  for (const Near& n : best) out.push_back(*n.name);
  return out;
}

Status validate_filter_options(const FilterOptions& options) {
  auto filter = KernelFilter::Create(options);
  return filter.ok() ? Status::Ok() : filter.status();
}

}  // namespace kreplay::config
