// The expression language of section files (share/kreplay/sections/*.yaml): derived values and
// rule conditions. python/kreplay/expr.py implements the same language; both are tested on the
// same cases (expr_test.cpp, python/tests/test_expr.py).
//
//   expr    := or
//   or      := and ("or" and)*
//   and     := not ("and" not)*
//   not     := "not" not | compare
//   compare := sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum)?
//   sum     := product (("+" | "-") product)*
//   product := unary (("*" | "/") unary)*
//   unary   := "-" unary | primary
//   primary := NUMBER | NAME | NAME "(" expr ("," expr)* ")" | "(" expr ")"
//   NAME    := [A-Za-z_][A-Za-z0-9_.]*  (metric names such as dram__bytes_read.sum, derived names,
//              and record fields such as launch.block_size)
//
// Functions: min, max (one or more arguments), floor, ceil, abs, sqrt, and
// if(condition, then, else). Comparisons and and/or/not give 1 or 0.
//
// Values are doubles. A name without a value, a division by zero, a NaN or an infinity makes the
// expression unavailable (std::nullopt), and so does every expression that uses it: a rule whose
// condition is unavailable does not fire. The exceptions are if(), which evaluates only the
// branch it takes, and "and"/"or", which give 0/1 when their left side decides.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.hpp"

namespace kreplay::report {

class Expr {
 public:
  /// Resolves a NAME; nullopt when it has no value.
  using Lookup = std::function<std::optional<double>(std::string_view name)>;

  /// Parse @p text. Errors name the position and what was expected.
  static Result<Expr> parse(std::string_view text);

  std::optional<double> eval(const Lookup& lookup) const;

  /// The NAMEs the expression reads, in first-use order (function names excluded).
  const std::vector<std::string>& names() const { return names_; }
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::vector<std::string> names_;
  std::string text_;
};

/// How reports print a value: integers (below 1e15) without decimals, otherwise 2 decimals up to
/// 1000, 1 decimal above; "n/a" for nullopt. python/kreplay/report.py: format_value().
std::string format_value(std::optional<double> value);

/// Replace each {NAME} in @p text by format_value(lookup(NAME)); "{{" and "}}" are braces.
std::string expand_placeholders(std::string_view text, const Expr::Lookup& lookup);

/// The NAMEs of the {NAME} placeholders in @p text.
std::vector<std::string> placeholder_names(std::string_view text);

}  // namespace kreplay::report
