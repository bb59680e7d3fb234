#include "config/nvtx_filter.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "config/regex.hpp"
#include "config/text.hpp"

namespace kreplay::config {
namespace {

constexpr std::string_view kRegex = "regex:";
constexpr const char* kExamples =
    R"("step/" (push/pop range step), "A/B/" (B pushed inside A), "A/*/B", "A]" (A innermost), )"
    R"("A" (a start/end range), "D@A/" (domain D), "regex:step_[0-9]+/")";

bool is_special(char c) { return c == '/' || c == '@' || c == ',' || c == '[' || c == ']'; }

// One piece of an expression with its escapes resolved; `raw` keeps which characters were
// escaped, so that separators are found only where they were not.
struct Piece {
  std::string text;
  std::vector<bool> escaped;  // per character of text
};

Piece unescape(std::string_view s) {
  Piece p;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && is_special(s[i + 1])) {
      p.text += s[++i];
      p.escaped.push_back(true);
    } else {
      p.text += s[i];
      p.escaped.push_back(false);
    }
  }
  return p;
}

size_t find_unescaped(const Piece& p, char c, size_t from = 0) {
  for (size_t i = from; i < p.text.size(); ++i) {
    if (p.text[i] == c && !p.escaped[i]) return i;
  }
  return std::string::npos;
}

Piece sub(const Piece& p, size_t pos, size_t n = std::string::npos) {
  Piece out;
  n = std::min(n, p.text.size() - std::min(pos, p.text.size()));
  out.text = p.text.substr(pos, n);
  out.escaped.assign(p.escaped.begin() + static_cast<long>(pos),
                     p.escaped.begin() + static_cast<long>(pos + n));
  return out;
}

std::vector<Piece> split(const Piece& p, char sep) {
  std::vector<Piece> out;
  size_t start = 0;
  for (;;) {
    size_t at = find_unescaped(p, sep, start);
    if (at == std::string::npos) {
      out.push_back(sub(p, start));
      return out;
    }
    out.push_back(sub(p, start, at - start));
    start = at + 1;
  }
}

// A range or domain name: exact, or an RE2 pattern (partial match).
struct Name {
  std::string exact;
  std::shared_ptr<RE2> re;
  bool matches(std::string_view s) const {
    return re ? partial_match(*re, s) : s == exact;
  }
};

enum class ElemKind { kName, kStar, kPlus };
struct Elem {
  ElemKind kind = ElemKind::kName;
  Name name;
};

}  // namespace

struct NvtxExpression::Impl {
  std::string text;
  Name domain;  // exact "" = the default domain
  bool push_pop = false;
  bool bottom = false, top = false;  // push/pop anchors
  std::vector<Elem> elems;           // push/pop, bottom first
  std::vector<Name> open;            // start/end: all must be open

  // Does elems[i..] match stack[pos..] (respecting the top anchor)?
  bool match_from(const std::vector<std::string>& stack, size_t i, size_t pos) const {
    if (i == elems.size()) return !top || pos == stack.size();
    const Elem& e = elems[i];
    if (e.kind == ElemKind::kName) {
      return pos < stack.size() && e.name.matches(stack[pos]) && match_from(stack, i + 1, pos + 1);
    }
    for (size_t skip = e.kind == ElemKind::kPlus ? 1 : 0; pos + skip <= stack.size(); ++skip) {
      if (match_from(stack, i + 1, pos + skip)) return true;
    }
    return false;
  }

  bool matches(const NvtxView& view) const {
    if (push_pop) {
      if (view.stacks == nullptr) return false;
      for (const auto& [d, stack] : *view.stacks) {
        if (!domain.matches(d)) continue;
        size_t last_start = bottom ? 0 : stack.size();
        for (size_t s = 0; s <= last_start; ++s) {
          if (match_from(stack, 0, s)) return true;
        }
      }
      return false;
    }
    if (view.start_end == nullptr) return false;
    return std::all_of(open.begin(), open.end(), [&](const Name& want) {
      for (const auto& [d, names] : *view.start_end) {
        if (!domain.matches(d)) continue;
        for (const auto& n : names) {
          if (want.matches(n)) return true;
        }
      }
      return false;
    });
  }
};

Result<NvtxExpression> NvtxExpression::Parse(std::string_view text, std::string_view option) {
  auto impl = std::make_unique<Impl>();
  impl->text = std::string(text);
  auto fail = [&](std::string_view what) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("{} \"{}\": {}; write it like {}", option, printable(text, 120), what,
                             kExamples));
  };
  std::string_view body = text;
  bool all_regex = false;
  if (body.starts_with(kRegex)) {
    all_regex = true;
    body.remove_prefix(kRegex.size());
  }
  if (body.empty()) return fail("the expression names no range");
  std::string error;
  auto make_name = [&](const Piece& p, Name* out) -> bool {
    std::string_view s = p.text;
    bool re = all_regex;
    if (s.starts_with(kRegex)) {
      re = true;
      s.remove_prefix(kRegex.size());
    }
    if (s.empty()) {
      error = re ? "\"regex:\" has no pattern" : "a range name is empty";
      return false;
    }
    if (!re) {
      for (size_t i = 0; i < p.text.size(); ++i) {
        if (p.escaped[i]) continue;
        char c = p.text[i];
        if (c == '[' || c == ']') {
          error = "'[' may only start and ']' only end a push/pop expression (write \\[ or \\] "
                  "for one in a name)";
          return false;
        }
        if (c == ',') {
          error = "',' joins start/end ranges and cannot stand in a push/pop expression (write "
                  "\\, for one in a name)";
          return false;
        }
      }
      out->exact = std::string(s);
      return true;
    }
    std::string reason;
    std::shared_ptr<RE2> compiled = compile_regex(s, &reason);
    if (!compiled) {
      error = fmt::format("\"{}\" is not a valid regular expression ({})", printable(s, 80),
                          printable(reason, 80));
      return false;
    }
    out->re = std::move(compiled);
    return true;
  };

  Piece whole = unescape(body);
  if (size_t at = find_unescaped(whole, '@'); at != std::string::npos) {
    if (find_unescaped(whole, '@', at + 1) != std::string::npos)
      return fail("more than one '@' (one domain per expression; write \\@ for an '@' in a name)");
    if (at == 0) return fail("the domain before '@' is empty (leave out \"@\" for the default domain)");
    if (find_unescaped(sub(whole, 0, at), ',') != std::string::npos ||
        find_unescaped(sub(whole, 0, at), '/') != std::string::npos)
      return fail("the domain applies to the whole expression and comes first (write D@A,B for "
                  "start/end ranges A and B of domain D)");
    if (!make_name(sub(whole, 0, at), &impl->domain)) return fail(error);
    whole = sub(whole, at + 1);
    if (whole.text.empty()) return fail("no range after the domain's '@'");
  }
  const bool bottom = !whole.text.empty() && whole.text.front() == '[' && !whole.escaped.front();
  const bool top = !whole.text.empty() && whole.text.back() == ']' && !whole.escaped.back();
  if (bottom || top || find_unescaped(whole, '/') != std::string::npos) {
    impl->push_pop = true;
    impl->bottom = bottom;
    impl->top = top;
    Piece p = sub(whole, bottom ? 1 : 0, whole.text.size() - (bottom ? 1 : 0) - (top ? 1 : 0));
    if (!p.text.empty() && p.text.back() == '/' && !p.escaped.back()) p = sub(p, 0, p.text.size() - 1);
    if (p.text.empty()) return fail("the push/pop expression names no range");
    for (const Piece& e : split(p, '/')) {
      Elem elem;
      if (e.text == "*" && !e.escaped[0]) {
        elem.kind = ElemKind::kStar;
      } else if (e.text == "+" && !e.escaped[0]) {
        elem.kind = ElemKind::kPlus;
      } else if (e.text.empty()) {
        return fail("a range name between two '/' is empty");
      } else if (!make_name(e, &elem.name)) {
        return fail(error);
      }
      impl->elems.push_back(std::move(elem));
    }
    if (std::none_of(impl->elems.begin(), impl->elems.end(),
                     [](const Elem& e) { return e.kind == ElemKind::kName; }))
      return fail("the push/pop expression names no range, only wildcards");
  } else {
    for (const Piece& e : split(whole, ',')) {
      if (e.text.empty()) return fail("a start/end range name between ',' is empty");
      Name n;
      if (!make_name(e, &n)) return fail(error);
      impl->open.push_back(std::move(n));
    }
  }
  return NvtxExpression(std::move(impl));
}

NvtxExpression::NvtxExpression(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NvtxExpression::NvtxExpression(NvtxExpression&&) noexcept = default;
NvtxExpression& NvtxExpression::operator=(NvtxExpression&&) noexcept = default;
NvtxExpression::~NvtxExpression() = default;
bool NvtxExpression::matches(const NvtxView& view) const { return impl_->matches(view); }
bool NvtxExpression::push_pop() const { return impl_->push_pop; }
const std::string& NvtxExpression::text() const { return impl_->text; }

Result<NvtxFilter> NvtxFilter::Create(const std::vector<std::string>& include,
                                      const std::vector<std::string>& exclude) {
  NvtxFilter f;
  for (const auto& e : include) {
    ASSIGN_OR_RETURN(auto x, NvtxExpression::Parse(e, "--nvtx-include"));
    f.include_.push_back(std::move(x));
  }
  for (const auto& e : exclude) {
    ASSIGN_OR_RETURN(auto x, NvtxExpression::Parse(e, "--nvtx-exclude"));
    f.exclude_.push_back(std::move(x));
  }
  return f;
}

bool NvtxFilter::selects(const NvtxView& view) const {
  auto hit = [&](const NvtxExpression& e) { return e.matches(view); };
  if (!include_.empty() && std::none_of(include_.begin(), include_.end(), hit)) return false;
  return std::none_of(exclude_.begin(), exclude_.end(), hit);
}

Status validate_nvtx_expressions(const std::vector<std::string>& include,
                                 const std::vector<std::string>& exclude) {
  auto f = NvtxFilter::Create(include, exclude);
  return f.ok() ? Status::Ok() : f.status();
}

void NvtxState::push(uint64_t thread, std::string_view domain, std::string_view name) {
  std::lock_guard lock(mu_);
  auto& stacks = threads_[thread];
  auto it = stacks.find(domain);
  if (it == stacks.end()) it = stacks.emplace(std::string(domain), std::vector<std::string>{}).first;
  it->second.emplace_back(name);
}

void NvtxState::pop(uint64_t thread, std::string_view domain) {
  std::lock_guard lock(mu_);
  auto t = threads_.find(thread);
  if (t == threads_.end()) return;
  auto it = t->second.find(domain);
  if (it == t->second.end() || it->second.empty()) return;
  it->second.pop_back();
  if (it->second.empty()) t->second.erase(it);
  if (t->second.empty()) threads_.erase(t);
}

void NvtxState::start(uint64_t id, std::string_view domain, std::string_view name) {
  std::lock_guard lock(mu_);
  by_id_[id] = Open{std::string(domain), std::string(name)};
  auto it = open_.find(domain);
  if (it == open_.end()) it = open_.emplace(std::string(domain), std::vector<std::string>{}).first;
  it->second.emplace_back(name);
}

void NvtxState::end(uint64_t id) {
  std::lock_guard lock(mu_);
  auto o = by_id_.find(id);
  if (o == by_id_.end()) return;
  auto it = open_.find(o->second.domain);
  if (it != open_.end()) {
    auto n = std::find(it->second.begin(), it->second.end(), o->second.name);
    if (n != it->second.end()) it->second.erase(n);
    if (it->second.empty()) open_.erase(it);
  }
  by_id_.erase(o);
}

bool NvtxState::selects(const NvtxFilter& filter, uint64_t thread) const {
  if (filter.empty()) return true;
  std::lock_guard lock(mu_);
  NvtxView view;
  if (auto t = threads_.find(thread); t != threads_.end()) view.stacks = &t->second;
  view.start_end = &open_;
  return filter.selects(view);
}

std::string NvtxState::describe(uint64_t thread) const {
  std::lock_guard lock(mu_);
  auto t = threads_.find(thread);
  if (t == threads_.end()) return {};
  auto it = t->second.find(std::string_view());
  if (it == t->second.end()) return {};
  std::string out;
  for (const auto& n : it->second) out += (out.empty() ? "" : " > ") + n;
  return out;
}

}  // namespace kreplay::config
