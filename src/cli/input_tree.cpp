#include "cli/input_tree.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "config/text.hpp"

namespace kreplay::cli::input_tree {

using config::printable;
using config::valid_utf8;

namespace {

// Input nesting deeper than this is refused: no valid file comes close, and it bounds recursion.
constexpr int kMaxDepth = 64;
// YAML aliases can make a small file expand to a huge tree; refuse more nodes than this.
constexpr size_t kMaxNodes = 1 << 20;

class LineIndex {
 public:
  explicit LineIndex(std::string_view text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') starts_.push_back(i + 1);
    }
  }
  Mark at(size_t offset) const {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    size_t line = static_cast<size_t>(it - starts_.begin());
    return Mark{static_cast<int>(line), static_cast<int>(offset - starts_[line - 1] + 1)};
  }

 private:
  std::vector<size_t> starts_;
};

// ----- JSON ---------------------------------------------------------------------------------

// An input iterator over the text that records how far nlohmann's lexer has read, so the SAX
// callbacks below know where each token ends.
class TrackingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator() = default;
  TrackingIterator(const char* base, size_t pos, size_t* read)
      : base_(base), pos_(pos), read_(read) {}
  reference operator*() const {
    if (read_ && pos_ + 1 > *read_) *read_ = pos_ + 1;
    return base_[pos_];
  }
  TrackingIterator& operator++() {
    ++pos_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++pos_;
    return old;
  }
  bool operator==(const TrackingIterator& other) const { return pos_ == other.pos_; }
  bool operator!=(const TrackingIterator& other) const { return pos_ != other.pos_; }

 private:
  const char* base_ = nullptr;
  size_t pos_ = 0;
  size_t* read_ = nullptr;
};

class JsonTreeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  JsonTreeBuilder(std::string_view text, const LineIndex& lines, std::string_view name)
      : text_(text), lines_(lines), name_(name) {}

  size_t* read_counter() { return &read_; }
  Node take_root() { return std::move(root_); }
  const std::string& error() const { return error_; }

  bool null() override {
    return add_scalar(Node::Kind::kNull, Node::Scalar::kString, "", mark_of_token());
  }
  bool boolean(bool value) override {
    return add_scalar(Node::Kind::kScalar, Node::Scalar::kBool, value ? "true" : "false",
                      mark_of_token());
  }
  bool number_integer(number_integer_t value) override {
    return add_scalar(Node::Kind::kScalar, Node::Scalar::kNumber, std::to_string(value),
                      mark_of_token());
  }
  bool number_unsigned(number_unsigned_t value) override {
    return add_scalar(Node::Kind::kScalar, Node::Scalar::kNumber, std::to_string(value),
                      mark_of_token());
  }
  bool number_float(number_float_t, const string_t& text) override {
    return add_scalar(Node::Kind::kScalar, Node::Scalar::kNumber, text, mark_of_token());
  }
  bool string(string_t& value) override {
    return add_scalar(Node::Kind::kScalar, Node::Scalar::kString, value, mark_of_string());
  }
  bool binary(binary_t&) override { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) override { return open(Node::Kind::kMap); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(Node::Kind::kSeq); }
  bool end_array() override { return close(); }
  bool key(string_t& value) override {
    Node* map = stack_.back();
    for (const auto& member : map->members) {
      if (member.key == value) {
        Mark m = mark_of_string();
        return fail(fmt::format("{}:{}:{}: duplicate key \"{}\"; give each key once", name_, m.line,
                                m.column, printable(value)));
      }
    }
    pending_key_ = value;
    pending_key_mark_ = mark_of_string();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // nlohmann counts bytes read; the offending byte is the last one read.
    size_t offset = position == 0 ? 0 : std::min(position - 1, text_.size());
    Mark m = lines_.at(offset);
    std::string message = ex.what();
    size_t column = message.find("column ");
    size_t colon = column == std::string::npos ? std::string::npos : message.find(": ", column);
    if (colon != std::string::npos) message = message.substr(colon + 2);
    error_ = fmt::format("{}:{}:{}: {}; fix the JSON syntax", name_, m.line, m.column,
                         printable(message, 300));
    return false;
  }

 private:
  Mark mark_of_token() const { return lines_.at(read_ == 0 ? 0 : read_ - 1); }
  // The lexer has just read a string's closing quote: find its opening quote.
  Mark mark_of_string() const {
    if (read_ < 2) return lines_.at(0);
    size_t i = read_ - 1;
    while (i-- > 0) {
      if (text_[i] != '"') continue;
      size_t backslashes = 0;
      for (size_t j = i; j-- > 0 && text_[j] == '\\';) ++backslashes;
      if (backslashes % 2 == 0) return lines_.at(i);
    }
    return lines_.at(0);
  }

  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  Node* place(Node node) {
    if (stack_.empty()) {
      root_ = std::move(node);
      has_root_ = true;
      return &root_;
    }
    Node* parent = stack_.back();
    if (parent->kind == Node::Kind::kSeq) {
      parent->items.push_back(std::move(node));
      return &parent->items.back();
    }
    parent->members.push_back(Member{std::move(pending_key_), pending_key_mark_, std::move(node)});
    return &parent->members.back().value;
  }

  bool add_scalar(Node::Kind kind, Node::Scalar scalar, std::string text, Mark mark) {
    Node node;
    node.kind = kind;
    node.scalar = scalar;
    node.text = std::move(text);
    node.mark = mark;
    place(std::move(node));
    return true;
  }

  bool open(Node::Kind kind) {
    if (stack_.size() >= static_cast<size_t>(kMaxDepth)) {
      Mark m = mark_of_token();
      return fail(fmt::format("{}:{}:{}: nested more than {} levels deep; an input file needs 3",
                              name_, m.line, m.column, kMaxDepth));
    }
    Node node;
    node.kind = kind;
    node.mark = mark_of_token();
    stack_.push_back(place(std::move(node)));
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  std::string_view text_;
  const LineIndex& lines_;
  std::string_view name_;
  size_t read_ = 0;
  Node root_;
  bool has_root_ = false;
  std::vector<Node*> stack_;
  std::string pending_key_;
  Mark pending_key_mark_;
  std::string error_;
};

// ----- YAML ---------------------------------------------------------------------------------

class YamlTreeBuilder {
 public:
  explicit YamlTreeBuilder(std::string_view name) : name_(name) {}

  Status build(const YAML::Node& in, Node* out, int depth) {
    if (++nodes_ > kMaxNodes) {
      return InvalidArgument(
          fmt::format("{}: the document expands to more than {} nodes (YAML aliases?); "
                      "write the jobs out",
                      name_, kMaxNodes));
    }
    const YAML::Mark m = in.Mark();
    out->mark = m.is_null() ? Mark{} : Mark{m.line + 1, m.column + 1};
    if (depth > kMaxDepth) {
      return InvalidArgument(
          fmt::format("{}:{}:{}: nested more than {} levels deep; an input file "
                      "needs 3",
                      name_, out->mark.line, out->mark.column, kMaxDepth));
    }
    switch (in.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out->kind = Node::Kind::kNull;
        return Status::Ok();
      case YAML::NodeType::Scalar:
        out->kind = Node::Kind::kScalar;
        out->text = in.Scalar();
        if (!valid_utf8(out->text)) return not_utf8(out->mark);
        out->scalar = in.Tag() == "?" ? Node::Scalar::kPlain : Node::Scalar::kString;
        return Status::Ok();
      case YAML::NodeType::Sequence:
        out->kind = Node::Kind::kSeq;
        for (const YAML::Node& item : in) {
          out->items.emplace_back();
          RETURN_IF_ERROR(build(item, &out->items.back(), depth + 1));
        }
        return Status::Ok();
      case YAML::NodeType::Map:
        out->kind = Node::Kind::kMap;
        for (const auto& kv : in) {
          const YAML::Mark km = kv.first.Mark();
          Mark key_mark = km.is_null() ? out->mark : Mark{km.line + 1, km.column + 1};
          if (!kv.first.IsScalar()) {
            return InvalidArgument(
                fmt::format("{}:{}:{}: a key must be a name, not a list or mapping", name_,
                            key_mark.line, key_mark.column));
          }
          std::string key = kv.first.Scalar();
          if (!valid_utf8(key)) return not_utf8(key_mark);
          for (const auto& member : out->members) {
            if (member.key == key) {
              return InvalidArgument(
                  fmt::format("{}:{}:{}: duplicate key \"{}\"; give each key once", name_,
                              key_mark.line, key_mark.column, printable(key)));
            }
          }
          out->members.push_back(Member{key, key_mark, Node{}});
          RETURN_IF_ERROR(build(kv.second, &out->members.back().value, depth + 1));
        }
        return Status::Ok();
    }
    return Status::Ok();
  }

 private:
  Status not_utf8(const Mark& m) const {
    return InvalidArgument(fmt::format(
        "{}:{}:{}: the text is not valid UTF-8; save the file as UTF-8", name_, m.line, m.column));
  }

  std::string_view name_;
  size_t nodes_ = 0;
};

}  // namespace

std::string kind_name(const Node& node) {
  switch (node.kind) {
    case Node::Kind::kNull:
      return "nothing";
    case Node::Kind::kSeq:
      return "a list";
    case Node::Kind::kMap:
      return "a mapping";
    case Node::Kind::kScalar:
      break;
  }
  switch (node.scalar) {
    case Node::Scalar::kBool:
      return node.text;
    case Node::Scalar::kNumber:
      return fmt::format("the number {}", printable(node.text));
    default:
      return fmt::format("\"{}\"", printable(node.text));
  }
}

// Byte offsets to 1-based line and column.

Result<Node> parse_json_tree(std::string_view text, std::string_view name) {
  LineIndex lines(text);
  JsonTreeBuilder builder(text, lines, name);
  TrackingIterator first(text.data(), 0, builder.read_counter());
  TrackingIterator last(text.data(), text.size(), builder.read_counter());
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(first, last, &builder);
  } catch (const std::exception& e) {
    return InvalidArgument(
        fmt::format("{}: cannot parse JSON: {}", name, printable(e.what(), 300)));
  }
  if (!ok) {
    if (builder.error().empty()) return InvalidArgument(fmt::format("{}: cannot parse JSON", name));
    return InvalidArgument(builder.error());
  }
  return builder.take_root();
}

Result<Node> parse_yaml_tree(std::string_view text, std::string_view name) {
  try {
    YAML::Node doc = YAML::Load(std::string(text));
    Node root;
    YamlTreeBuilder builder(name);
    RETURN_IF_ERROR(builder.build(doc, &root, 0));
    return root;
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) {
      return InvalidArgument(
          fmt::format("{}: {}; fix the YAML syntax", name, printable(e.msg, 300)));
    }
    return InvalidArgument(fmt::format("{}:{}:{}: {}; fix the YAML syntax", name, e.mark.line + 1,
                                       e.mark.column + 1, printable(e.msg, 300)));
  } catch (const std::exception& e) {
    return InvalidArgument(
        fmt::format("{}: cannot parse YAML: {}", name, printable(e.what(), 300)));
  }
}

}  // namespace kreplay::cli::input_tree
