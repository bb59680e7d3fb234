#include "report/expr.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kreplay::report {

struct Expr::Node {
  enum class Kind { kNumber, kName, kUnary, kBinary, kCall };
  Kind kind = Kind::kNumber;
  double number = 0;
  std::string name;  // kName, kCall (function), kUnary/kBinary (operator)
  std::vector<std::shared_ptr<const Node>> args;
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Kind = Expr::Node::Kind;

Status bad(std::string_view text, size_t at, std::string_view what) {
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
               fmt::format("expression \"{}\": {} at column {}", text, what, at + 1));
}

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

constexpr const char* kFunctions[] = {"min", "max", "floor", "ceil", "abs", "sqrt", "if"};

class Parser {
 public:
  Parser(std::string_view text, std::vector<std::string>* names) : text_(text), names_(names) {}

  Result<NodePtr> parse_all() {
    ASSIGN_OR_RETURN(NodePtr root, parse_or());
    skip();
    if (pos_ != text_.size()) return bad(text_, pos_, fmt::format("unexpected '{}'", text_[pos_]));
    return root;
  }

 private:
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool peek(std::string_view token) {
    skip();
    return text_.substr(pos_, token.size()) == token;
  }
  // A keyword: the word itself, not the start of a longer name.
  bool keyword(std::string_view word) {
    skip();
    if (text_.substr(pos_, word.size()) != word) return false;
    size_t end = pos_ + word.size();
    if (end < text_.size() && name_char(text_[end])) return false;
    pos_ = end;
    return true;
  }

  static NodePtr make(Kind kind, std::string name, std::vector<NodePtr> args, double number = 0) {
    auto n = std::make_shared<Expr::Node>();
    n->kind = kind;
    n->name = std::move(name);
    n->args = std::move(args);
    n->number = number;
    return n;
  }

  Result<NodePtr> parse_or() {
    ASSIGN_OR_RETURN(NodePtr left, parse_and());
    while (keyword("or")) {
      ASSIGN_OR_RETURN(NodePtr right, parse_and());
      left = make(Kind::kBinary, "or", {left, right});
    }
    return left;
  }
  Result<NodePtr> parse_and() {
    ASSIGN_OR_RETURN(NodePtr left, parse_not());
    while (keyword("and")) {
      ASSIGN_OR_RETURN(NodePtr right, parse_not());
      left = make(Kind::kBinary, "and", {left, right});
    }
    return left;
  }
  Result<NodePtr> parse_not() {
    if (keyword("not")) {
      ASSIGN_OR_RETURN(NodePtr operand, parse_not());
      return make(Kind::kUnary, "not", {operand});
    }
    return parse_compare();
  }
  Result<NodePtr> parse_compare() {
    ASSIGN_OR_RETURN(NodePtr left, parse_sum());
    for (const char* op : {"<=", ">=", "==", "!=", "<", ">"}) {
      if (peek(op)) {
        pos_ += std::string_view(op).size();
        ASSIGN_OR_RETURN(NodePtr right, parse_sum());
        return make(Kind::kBinary, op, {left, right});
      }
    }
    return left;
  }
  Result<NodePtr> parse_sum() {
    ASSIGN_OR_RETURN(NodePtr left, parse_product());
    while (peek("+") || peek("-")) {
      std::string op(1, text_[pos_++]);
      ASSIGN_OR_RETURN(NodePtr right, parse_product());
      left = make(Kind::kBinary, op, {left, right});
    }
    return left;
  }
  Result<NodePtr> parse_product() {
    ASSIGN_OR_RETURN(NodePtr left, parse_unary());
    while (peek("*") || peek("/")) {
      std::string op(1, text_[pos_++]);
      ASSIGN_OR_RETURN(NodePtr right, parse_unary());
      left = make(Kind::kBinary, op, {left, right});
    }
    return left;
  }
  Result<NodePtr> parse_unary() {
    if (peek("-")) {
      ++pos_;
      ASSIGN_OR_RETURN(NodePtr operand, parse_unary());
      return make(Kind::kUnary, "-", {operand});
    }
    return parse_primary();
  }
  Result<NodePtr> parse_primary() {
    skip();
    if (pos_ >= text_.size()) return bad(text_, pos_, "a value is missing");
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      ASSIGN_OR_RETURN(NodePtr inner, parse_or());
      if (!peek(")")) return bad(text_, pos_, "')' expected");
      ++pos_;
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.'))
        ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
        size_t save = pos_++;
        if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
        if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
          while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
            ++pos_;
        } else {
          pos_ = save;
        }
      }
      std::string literal(text_.substr(start, pos_ - start));
      char* end = nullptr;
      double v = std::strtod(literal.c_str(), &end);
      if (end != literal.c_str() + literal.size())
        return bad(text_, start, fmt::format("bad number \"{}\"", literal));
      return make(Kind::kNumber, "", {}, v);
    }
    if (name_start(c)) {
      size_t start = pos_;
      while (pos_ < text_.size() && name_char(text_[pos_])) ++pos_;
      std::string name(text_.substr(start, pos_ - start));
      if (name == "and" || name == "or" || name == "not")
        return bad(text_, start, fmt::format("'{}' needs a value before it", name));
      if (peek("(")) {
        bool known = false;
        for (const char* f : kFunctions) known |= name == f;
        if (!known) {
          return bad(text_, start,
                     fmt::format("unknown function '{}' (min, max, floor, ceil, abs, sqrt, if)",
                                 name));
        }
        ++pos_;
        std::vector<NodePtr> args;
        while (true) {
          ASSIGN_OR_RETURN(NodePtr arg, parse_or());
          args.push_back(arg);
          if (peek(",")) {
            ++pos_;
            continue;
          }
          if (peek(")")) {
            ++pos_;
            break;
          }
          return bad(text_, pos_, "',' or ')' expected");
        }
        const size_t n = args.size();
        const bool many = name == "min" || name == "max";
        if ((name == "if" && n != 3) || (!many && name != "if" && n != 1)) {
          return bad(text_, start,
                     fmt::format("{}() takes {} argument{}", name, name == "if" ? 3 : 1,
                                 name == "if" ? "s" : ""));
        }
        return make(Kind::kCall, name, std::move(args));
      }
      bool seen = false;
      for (const auto& n : *names_) seen |= n == name;
      if (!seen) names_->push_back(name);
      return make(Kind::kName, name, {});
    }
    return bad(text_, pos_, fmt::format("unexpected '{}'", c));
  }

  std::string_view text_;
  std::vector<std::string>* names_;
  size_t pos_ = 0;
};

std::optional<double> finite(double v) {
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> eval_node(const Expr::Node& n, const Expr::Lookup& lookup) {
  switch (n.kind) {
    case Kind::kNumber:
      return n.number;
    case Kind::kName: {
      auto v = lookup(n.name);
      if (!v) return std::nullopt;
      return finite(*v);
    }
    case Kind::kUnary: {
      auto v = eval_node(*n.args[0], lookup);
      if (!v) return std::nullopt;
      if (n.name == "not") return *v == 0 ? 1.0 : 0.0;
      return -*v;
    }
    case Kind::kBinary: {
      auto a = eval_node(*n.args[0], lookup);
      if (n.name == "and" && a && *a == 0) return 0.0;
      if (n.name == "or" && a && *a != 0) return 1.0;
      if (!a) return std::nullopt;
      auto b = eval_node(*n.args[1], lookup);
      if (!b) return std::nullopt;
      const std::string& op = n.name;
      if (op == "and" || op == "or") return *b != 0 ? 1.0 : 0.0;
      if (op == "+") return finite(*a + *b);
      if (op == "-") return finite(*a - *b);
      if (op == "*") return finite(*a * *b);
      if (op == "/") return *b == 0 ? std::nullopt : finite(*a / *b);
      if (op == "<") return *a < *b ? 1.0 : 0.0;
      if (op == "<=") return *a <= *b ? 1.0 : 0.0;
      if (op == ">") return *a > *b ? 1.0 : 0.0;
      if (op == ">=") return *a >= *b ? 1.0 : 0.0;
      if (op == "==") return *a == *b ? 1.0 : 0.0;
      if (op == "!=") return *a != *b ? 1.0 : 0.0;
      return std::nullopt;
    }
    case Kind::kCall: {
      if (n.name == "if") {
        auto c = eval_node(*n.args[0], lookup);
        if (!c) return std::nullopt;
        return eval_node(*n.args[*c != 0 ? 1 : 2], lookup);
      }
      std::vector<double> v;
      for (const auto& arg : n.args) {
        auto x = eval_node(*arg, lookup);
        if (!x) return std::nullopt;
        v.push_back(*x);
      }
      if (n.name == "min") {
        double m = v[0];
        for (double x : v) m = x < m ? x : m;
        return m;
      }
      if (n.name == "max") {
        double m = v[0];
        for (double x : v) m = x > m ? x : m;
        return m;
      }
      if (n.name == "floor") return std::floor(v[0]);
      if (n.name == "ceil") return std::ceil(v[0]);
      if (n.name == "abs") return std::fabs(v[0]);
      if (n.name == "sqrt") return v[0] < 0 ? std::nullopt : finite(std::sqrt(v[0]));
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<Expr> Expr::parse(std::string_view text) {
  Expr e;
  e.text_ = std::string(text);
  Parser parser(e.text_, &e.names_);
  ASSIGN_OR_RETURN(e.root_, parser.parse_all());
  return e;
}

std::optional<double> Expr::eval(const Lookup& lookup) const {
  if (!root_) return std::nullopt;
  return eval_node(*root_, lookup);
}

std::string format_value(std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return "n/a";
  double v = *value;
  if (v == 0) return "0";
  double a = std::fabs(v);
  const char* format = "%.2f";
  if (v == std::trunc(v) && a < 1e15) {
    format = "%.0f";
  } else if (a < 0.01) {
    format = "%.3g";
  } else if (a >= 1000) {
    format = "%.1f";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

namespace {

// Calls @p on_name for each placeholder and @p on_text for the text between them.
template <typename OnText, typename OnName>
void scan_placeholders(std::string_view text, OnText on_text, OnName on_name) {
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      on_text(std::string_view(&text[i], 1));
      i += 2;
      continue;
    }
    if (c == '{') {
      size_t end = text.find('}', i + 1);
      if (end != std::string_view::npos) {
        on_name(text.substr(i + 1, end - i - 1));
        i = end + 1;
        continue;
      }
    }
    on_text(text.substr(i, 1));
    ++i;
  }
}

}  // namespace

std::string expand_placeholders(std::string_view text, const Expr::Lookup& lookup) {
  std::string out;
  scan_placeholders(
      text, [&](std::string_view t) { out += t; },
      [&](std::string_view name) { out += format_value(lookup(name)); });
  return out;
}

std::vector<std::string> placeholder_names(std::string_view text) {
  std::vector<std::string> out;
  scan_placeholders(
      text, [](std::string_view) {}, [&](std::string_view name) { out.emplace_back(name); });
  return out;
}

}  // namespace kreplay::report
