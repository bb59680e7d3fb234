#include "config/filter.hpp"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "common/util.hpp"
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

std::unique_ptr<RE2> compile(std::string_view pattern, std::string* error) {
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    *error = re->error();
    return nullptr;
  }
  return re;
}

bool partial_match(const RE2& re, std::string_view text) {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re);
}

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

  struct Kernel {
    bool name_ok = false;
    uint64_t launches = 0;  // launches that passed the name stage
  };
  mutable std::mutex mu;
  std::unordered_map<std::string, Kernel, StringHash, std::equal_to<>> kernels;
  uint64_t window_launches = 0;  // launches that passed names and iterations
  FilterStats stats;

  bool name_ok(std::string_view demangled, std::string_view mangled) const {
    std::string derived;
    if (demangled.empty() && !mangled.empty()) {
      derived = demangle(mangled);
      demangled = derived;
    }
    if (include && !partial_match(*include, demangled)) return false;
    if (exclude && partial_match(*exclude, demangled)) return false;
    if (name_regex || !exact_name.empty()) {
      std::vector<std::string> forms = kernel_name_forms(demangled, mangled);
      if (forms.empty()) forms.emplace_back();
      auto hit = [&](const std::string& form) {
        return name_regex ? partial_match(*name_regex, form) : form == exact_name;
      };
      if (std::none_of(forms.begin(), forms.end(), hit)) return false;
    }
    return true;
  }
};

Status check_kernel_regex(std::string_view pattern, std::string_view option) {
  std::string error;
  if (!compile(pattern, &error)) return regex_error(option, pattern, error);
  return Status::Ok();
}

Result<KernelFilter> KernelFilter::Create(const FilterOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  std::string error;
  if (!options.include_regex.empty()) {
    impl->include = compile(options.include_regex, &error);
    if (!impl->include) return regex_error("--kernel-include-regex", options.include_regex, error);
  }
  if (!options.exclude_regex.empty()) {
    impl->exclude = compile(options.exclude_regex, &error);
    if (!impl->exclude) return regex_error("--kernel-exclude-regex", options.exclude_regex, error);
  }
  std::string_view name = options.kernel_name;
  if (name.substr(0, kRegexPrefix.size()) == kRegexPrefix) {
    std::string_view expr = name.substr(kRegexPrefix.size());
    if (expr.empty()) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "--kernel-name \"regex:\" has no expression; write e.g. -k regex:gemm");
    }
    impl->name_regex = compile(expr, &error);
    if (!impl->name_regex) return regex_error("--kernel-name regex:", expr, error);
  } else {
    impl->exact_name = std::string(name);
  }
  ASSIGN_OR_RETURN(impl->range, IterationRange::Parse(options.iteration_range));
  return KernelFilter(std::move(impl));
}

KernelFilter::KernelFilter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KernelFilter::KernelFilter(KernelFilter&&) noexcept = default;
KernelFilter& KernelFilter::operator=(KernelFilter&&) noexcept = default;
KernelFilter::~KernelFilter() = default;

bool KernelFilter::select(std::string_view demangled, std::string_view mangled) {
  Impl& s = *impl_;
  std::string_view key = mangled.empty() ? demangled : mangled;
  std::unique_lock lock(s.mu);
  auto it = s.kernels.find(key);
  if (it == s.kernels.end()) {
    // Match the names outside the lock: regexes over long names are the slow part.
    lock.unlock();
    bool ok = s.name_ok(demangled, mangled);
    lock.lock();
    auto [inserted, fresh] = s.kernels.try_emplace(std::string(key));
    if (fresh) {
      inserted->second.name_ok = ok;
      ++s.stats.kernels_seen;
    }
    it = inserted;
  }
  Impl::Kernel& kernel = it->second;
  bool selected = false;
  if (!kernel.name_ok) {
    ++s.stats.rejected_by_name;
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
  return impl_->name_ok(demangled, mangled);
}

bool KernelFilter::selects_everything() const {
  const Impl& s = *impl_;
  return !s.include && !s.exclude && !s.name_regex && s.exact_name.empty() && s.range.all() &&
         s.options.launch_skip == 0 && s.options.launch_count == 0;
}

bool KernelFilter::exhausted() const {
  std::lock_guard lock(impl_->mu);
  return impl_->options.launch_count != 0 && impl_->stats.selected >= impl_->options.launch_count;
}

FilterStats KernelFilter::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

Status validate_filter_options(const FilterOptions& options) {
  auto filter = KernelFilter::Create(options);
  return filter.ok() ? Status::Ok() : filter.status();
}

}  // namespace kreplay::config
