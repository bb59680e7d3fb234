#include "cli/input_file.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "common/util.hpp"
#include "config/filter.hpp"
#include "config/output_path.hpp"
#include "config/text.hpp"

namespace kreplay::cli {

using config::check_kernel_regex;
using config::FilterOptions;
using config::IterationRange;
using config::printable;
using config::valid_utf8;
using config::validate_filter_options;
using config::validate_output_template;

namespace {

// Input nesting deeper than this is refused: no valid file comes close, and it bounds recursion.
constexpr int kMaxDepth = 64;
// YAML aliases can make a small file expand to a huge tree; refuse more nodes than this.
constexpr size_t kMaxNodes = 1 << 20;

// ---------------------------------------------------------------------------------------------
// A small document tree that both parsers fill, with the position of every key and value.
// ---------------------------------------------------------------------------------------------

struct Member;

struct Node {
  enum class Kind { kNull, kScalar, kSeq, kMap };
  // How a scalar was written: JSON string / YAML quoted scalar, YAML plain scalar, JSON true or
  // false, JSON number.
  enum class Scalar { kString, kPlain, kBool, kNumber };

  Kind kind = Kind::kNull;
  Scalar scalar = Scalar::kString;
  std::string text;
  Mark mark;
  std::vector<Node> items;      // kSeq
  std::vector<Member> members;  // kMap, in document order
};

struct Member {
  std::string key;
  Mark key_mark;
  Node value;
};

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

// ---------------------------------------------------------------------------------------------
// Tree -> InputFile
// ---------------------------------------------------------------------------------------------

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

template <size_t N>
std::vector<std::string> names_of(const std::array<std::string_view, N>& names) {
  return std::vector<std::string>(names.begin(), names.end());
}

// Converts one value; `what` is "file:line:col: jobs[i].key" for messages.
class ValueReader {
 public:
  ValueReader(const Node& node, std::string what) : node_(node), what_(std::move(what)) {}

  Status type_error(std::string_view expected) const {
    return InvalidArgument(
        fmt::format("{}: expected {}, found {}", what_, expected, kind_name(node_)));
  }

  Result<bool> boolean() const {
    if (node_.kind == Node::Kind::kScalar) {
      if (node_.scalar == Node::Scalar::kBool) return node_.text == "true";
      if (node_.scalar == Node::Scalar::kPlain) {
        std::string v = lower(node_.text);
        if (v == "true" || v == "yes" || v == "on") return true;
        if (v == "false" || v == "no" || v == "off") return false;
      }
    }
    return type_error("true or false");
  }

  Result<uint64_t> unsigned_integer(uint64_t minimum) const {
    if (node_.kind == Node::Kind::kScalar &&
        (node_.scalar == Node::Scalar::kNumber || node_.scalar == Node::Scalar::kPlain)) {
      const std::string& t = node_.text;
      uint64_t value = 0;
      auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
      if (!t.empty() && ec == std::errc() && ptr == t.data() + t.size()) {
        if (value < minimum) {
          return InvalidArgument(
              fmt::format("{}: must be at least {}, found {}", what_, minimum, value));
        }
        return value;
      }
    }
    return type_error(minimum > 0 ? "a positive integer" : "a non-negative integer");
  }

  // A string; numbers are taken as written (a YAML "3" is the text 3).
  Result<std::string> text() const {
    if (node_.kind == Node::Kind::kScalar && node_.scalar != Node::Scalar::kBool) {
      return node_.text;
    }
    return type_error("a string");
  }

  Result<std::string> non_empty_text(std::string_view example) const {
    ASSIGN_OR_RETURN(std::string value, text());
    if (value.empty()) {
      return InvalidArgument(fmt::format("{}: is empty; give a value such as {}", what_, example));
    }
    return value;
  }

  // A list of names, or one string of names separated by commas or blanks.
  Result<std::vector<std::string>> name_list() const {
    if (node_.kind == Node::Kind::kScalar && node_.scalar != Node::Scalar::kBool) {
      return split_list(node_.text);
    }
    if (node_.kind != Node::Kind::kSeq) return type_error("a list of names");
    std::vector<std::string> out;
    for (size_t i = 0; i < node_.items.size(); ++i) {
      const Node& item = node_.items[i];
      if (item.kind != Node::Kind::kScalar || item.scalar == Node::Scalar::kBool) {
        return InvalidArgument(
            fmt::format("{}[{}]: expected a name, found {}", what_, i, kind_name(item)));
      }
      for (std::string& name : split_list(item.text)) out.push_back(std::move(name));
    }
    return out;
  }

  // Strings taken whole (NVTX expressions hold commas): one string, or a list of strings.
  Result<std::vector<std::string>> text_list() const {
    if (node_.kind == Node::Kind::kScalar && node_.scalar != Node::Scalar::kBool)
      return std::vector<std::string>{node_.text};
    if (node_.kind != Node::Kind::kSeq) return type_error("a string or a list of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < node_.items.size(); ++i) {
      const Node& item = node_.items[i];
      if (item.kind != Node::Kind::kScalar || item.scalar == Node::Scalar::kBool) {
        return InvalidArgument(
            fmt::format("{}[{}]: expected a string, found {}", what_, i, kind_name(item)));
      }
      out.push_back(item.text);
    }
    return out;
  }

  // An iteration range, written as a string ("[1-3, 5]"), a number, or (YAML) a flow list.
  Result<std::string> range_text() const {
    if (node_.kind != Node::Kind::kSeq) return text();
    std::string out;
    append_seq(node_, &out);
    return out;
  }

 private:
  static void append_seq(const Node& node, std::string* out) {
    out->push_back('[');
    for (size_t i = 0; i < node.items.size(); ++i) {
      if (i > 0) out->append(", ");
      const Node& item = node.items[i];
      if (item.kind == Node::Kind::kSeq) {
        append_seq(item, out);
      } else {
        out->append(item.text);
      }
    }
    out->push_back(']');
  }

  const Node& node_;
  std::string what_;
};

// rocprofv3 keys with a kreplay counterpart, for a better hint than the edit distance gives.
std::string rocprofv3_hint(std::string_view key) {
  if (key == "stats") return "; kreplay calls it summary";
  if (key == "advanced_thread_trace" || key.substr(0, 4) == "att_") {
    return "; thread trace is AMD-only, kreplay's trace-like pass is timing_pass: true";
  }
  if (key == "pmc_raw") return "; list counters by name with pmc";
  return "";
}

class JobReader {
 public:
  JobReader(const InputFile& file, JobSpec* job) : file_(file), job_(job) {}

  Status read(const std::string& key, const Node& value) {
    ValueReader v(value, file_.where(*job_, key));
    RunSettings& s = job_->settings;
    const std::string what = file_.where(*job_, key);
    if (key == "pmc") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      RETURN_IF_ERROR(check_counter_names(what, names));
      job_->pmc = std::move(names);
    } else if (key == "pmc_groups") {
      if (value.kind != Node::Kind::kSeq || value.items.empty()) {
        return v.type_error("a non-empty list of counter groups, e.g. [[A, B], [C]]");
      }
      std::vector<std::vector<std::string>> groups;
      for (size_t i = 0; i < value.items.size(); ++i) {
        std::string item_what = fmt::format("{}[{}]", what, i);
        ASSIGN_OR_RETURN(auto names, ValueReader(value.items[i], item_what).name_list());
        RETURN_IF_ERROR(check_counter_names(item_what, names));
        groups.push_back(std::move(names));
      }
      job_->pmc_groups = std::move(groups);
    } else if (key == "pmc_group_interval") {
      ASSIGN_OR_RETURN(job_->pmc_group_interval, v.unsigned_integer(1));
    } else if (key == "metrics") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      RETURN_IF_ERROR(check_counter_names(what, names));
      s.metrics = std::move(names);
    } else if (key == "set") {
      ASSIGN_OR_RETURN(std::string text, v.non_empty_text("\"basic\""));
      s.metric_set = std::move(text);
    } else if (key == "section") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      if (names.empty()) return v.type_error("a section name or a list of them");
      s.sections = std::move(names);
    } else if (key == "section_folder") {
      ASSIGN_OR_RETURN(std::string text, v.non_empty_text("\"my_sections\""));
      s.section_folder = std::move(text);
    } else if (key == "timing_pass") {
      ASSIGN_OR_RETURN(job_->timing_pass, v.boolean());
    } else if (key == "timing_pass_flush_cache") {
      ASSIGN_OR_RETURN(job_->timing_pass_flush_cache, v.boolean());
    } else if (key == "pc_sampling" || key == "source_counters") {
      ASSIGN_OR_RETURN(bool on, v.boolean());
      (key == "pc_sampling" ? job_->pc_sampling : job_->source_counters) = on;
    } else if (key == "pc_sampling_period") {
      ASSIGN_OR_RETURN(uint64_t period, v.unsigned_integer(5));
      if (period > 31)
        return InvalidArgument(fmt::format("{}: 2^{} cycles; use 5 to 31", what, period));
      job_->pc_sampling_period = period;
    } else if (key == "sass_metrics" || key == "pm_sampling") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      RETURN_IF_ERROR(check_counter_names(what, names));
      (key == "sass_metrics" ? job_->sass_metrics : job_->pm_sampling) = std::move(names);
    } else if (key == "pm_sampling_interval") {
      ASSIGN_OR_RETURN(job_->pm_sampling_interval, v.unsigned_integer(1));
    } else if (key == "replay_mode") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.replay_mode, parse_replay_mode_value(what, text));
    } else if (key == "range_markers") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_range_markers(what, text));
      s.range_markers = std::move(text);
    } else if (key == "replay_memory") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.replay_memory, parse_replay_memory_value(what, text));
    } else if (key == "graph_profiling") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.graph_profiling, parse_graph_profiling_value(what, text));
    } else if (key == "cache_control") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.cache_control, parse_cache_control_value(what, text));
    } else if (key == "snapshot") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      ASSIGN_OR_RETURN(s.snapshot, parse_snapshot_mode_value(what, text));
    } else if (key == "check_divergence") {
      ASSIGN_OR_RETURN(s.check_divergence, v.boolean());
    } else if (key == "clock_control") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_clock_control(what, text));
    } else if (key == "kernel_replay_beta_enabled") {
      // Accepted so rocprofv3 files work unchanged; kreplay needs no acknowledgement.
      ASSIGN_OR_RETURN(bool ignored, v.boolean());
      (void)ignored;
    } else if (key == "kernel_include_regex" || key == "kernel_exclude_regex") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_kernel_regex(text, what));
      (key == "kernel_include_regex" ? s.kernel_include_regex : s.kernel_exclude_regex) = text;
    } else if (key == "kernel_name") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      FilterOptions probe;
      probe.kernel_name = text;
      Status st = validate_filter_options(probe);
      if (!st.ok()) return InvalidArgument(fmt::format("{}: {}", what, st.message()));
      s.kernel_name = std::move(text);
    } else if (key == "kernel_iteration_range") {
      ASSIGN_OR_RETURN(std::string text, v.range_text());
      auto range = IterationRange::Parse(text);
      if (!range.ok())
        return InvalidArgument(fmt::format("{}: {}", what, range.status().message()));
      s.kernel_iteration_range = std::move(text);
    } else if (key == "launch_skip") {
      ASSIGN_OR_RETURN(s.launch_skip, v.unsigned_integer(0));
    } else if (key == "launch_count") {
      ASSIGN_OR_RETURN(s.launch_count, v.unsigned_integer(1));
    } else if (key == "nvtx_include" || key == "nvtx_exclude") {
      ASSIGN_OR_RETURN(auto exprs, v.text_list());
      RETURN_IF_ERROR(check_nvtx_expressions(what, exprs));
      (key == "nvtx_include" ? s.nvtx_include : s.nvtx_exclude) = std::move(exprs);
    } else if (key == "profile_from_start") {
      // true/false, or ncu's on/off
      if (auto b = v.boolean(); b.ok()) {
        s.profile_from_start = *b;
      } else {
        ASSIGN_OR_RETURN(std::string text, v.text());
        ASSIGN_OR_RETURN(s.profile_from_start, parse_profile_from_start_value(what, text));
      }
    } else if (key == "kernel_id") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_kernel_id(what, text));
      s.kernel_id = std::move(text);
    } else if (key == "kernel_name_base") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_kernel_name_base(what, text));
      s.kernel_name_base = std::move(text);
    } else if (key == "output_directory" || key == "output_file") {
      bool is_dir = key == "output_directory";
      ASSIGN_OR_RETURN(std::string text,
                       v.non_empty_text(is_dir ? "\"out\"" : "\"%hostname%/%pid%\""));
      Status st = validate_output_template(text);
      if (!st.ok()) return InvalidArgument(fmt::format("{}: {}", what, st.message()));
      (is_dir ? s.output_directory : s.output_file) = std::move(text);
    } else if (key == "output_format") {
      ASSIGN_OR_RETURN(auto names, v.name_list());
      ASSIGN_OR_RETURN(s.output_format, parse_output_formats(what, names));
    } else if (key == "output_gzip") {
      ASSIGN_OR_RETURN(s.output_gzip, v.boolean());
    } else if (key == "kernel_trace") {
      ASSIGN_OR_RETURN(s.kernel_trace, v.boolean());
    } else if (key == "summary") {
      ASSIGN_OR_RETURN(s.summary, v.boolean());
    } else if (key == "log_level") {
      ASSIGN_OR_RETURN(std::string text, v.text());
      RETURN_IF_ERROR(check_log_level(what, text));
      s.log_level = std::move(text);
    } else if (key == "name") {
      ASSIGN_OR_RETURN(job_->name, v.text());
    } else {
      std::string close = closest_name(key, names_of(kJobKeys));
      std::string hint = close.empty() ? "" : fmt::format(" (did you mean {}?)", close);
      return InvalidArgument(
          fmt::format("{}: unknown key{}{}; the keys a job takes are listed in "
                      "share/kreplay/input-schema.json",
                      what, hint, rocprofv3_hint(key)));
    }
    return Status::Ok();
  }

 private:
  const InputFile& file_;
  JobSpec* job_;
};

Result<InputFile> tree_to_input(const Node& root, std::string_view name) {
  InputFile file;
  file.path = std::string(name);
  auto at = [&](const Mark& m) {
    return m.line > 0 ? fmt::format("{}:{}:{}", name, m.line, m.column) : std::string(name);
  };
  if (root.kind == Node::Kind::kNull) {
    return InvalidArgument(
        fmt::format("{}: the file is empty; it needs a jobs list, e.g. "
                    "{{\"jobs\": [{{\"pmc\": [\"A\"]}}]}}",
                    name));
  }
  if (root.kind != Node::Kind::kMap) {
    return InvalidArgument(
        fmt::format("{}: the top level is {}; it must be a mapping with a jobs list, "
                    "e.g. {{\"jobs\": [{{\"pmc\": [\"A\"]}}]}}",
                    at(root.mark), kind_name(root)));
  }
  const Node* jobs = nullptr;
  Mark jobs_mark;
  for (const Member& member : root.members) {
    const std::string& key = member.key;
    const Node& value = member.value;
    const Mark& km = member.key_mark;
    if (key == "jobs") {
      jobs = &value;
      jobs_mark = km;
    } else if (key == "job_replay_mode") {
      std::string what = fmt::format("{}: job_replay_mode", at(km));
      ASSIGN_OR_RETURN(std::string text, ValueReader(value, what).text());
      auto mode = parse_job_replay_mode(text);
      if (!mode) return unknown_value(what, text, names_of(kJobReplayModeNames));
      file.job_replay_mode = *mode;
      file.job_replay_mode_given = true;
      file.job_replay_mode_mark = km;
    } else if (key == "$schema") {
      // Documentation for editors; not checked.
    } else {
      std::string close = closest_name(key, names_of(kTopLevelKeys));
      std::string hint = close.empty() ? "" : fmt::format(" (did you mean {}?)", close);
      std::string where_job = std::find(kJobKeys.begin(), kJobKeys.end(), key) != kJobKeys.end()
                                  ? "; job options go inside a job of the jobs list"
                                  : "; the top level takes jobs and job_replay_mode";
      return InvalidArgument(fmt::format("{}: unknown top-level key \"{}\"{}{}", at(km),
                                         printable(key), hint, where_job));
    }
  }
  if (!jobs) {
    return InvalidArgument(fmt::format(
        "{}: no jobs list; add one, e.g. {{\"jobs\": [{{\"pmc\": [\"A\"]}}]}}", at(root.mark)));
  }
  if (jobs->kind != Node::Kind::kSeq) {
    return InvalidArgument(fmt::format("{}: jobs: expected a list of jobs, found {}", at(jobs_mark),
                                       kind_name(*jobs)));
  }
  if (jobs->items.empty()) {
    return InvalidArgument(
        fmt::format("{}: jobs: the list is empty; a file needs at least one job", at(jobs_mark)));
  }
  for (size_t j = 0; j < jobs->items.size(); ++j) {
    const Node& job_node = jobs->items[j];
    JobSpec job;
    job.index = j;
    job.mark = job_node.mark;
    if (job_node.kind != Node::Kind::kMap) {
      return InvalidArgument(fmt::format("{}: jobs[{}]: expected a mapping of options, found {}",
                                         at(job_node.mark), j, kind_name(job_node)));
    }
    for (const Member& member : job_node.members) {
      job.keys.push_back(member.key);
      job.key_marks[member.key] = member.key_mark;
    }
    JobReader reader(file, &job);
    for (const Member& member : job_node.members) {
      RETURN_IF_ERROR(reader.read(member.key, member.value));
    }
    file.jobs.push_back(std::move(job));
  }
  return file;
}

}  // namespace

std::string_view to_string(JobReplayMode mode) {
  return mode == JobReplayMode::kKernel ? "kernel" : "application";
}

std::optional<JobReplayMode> parse_job_replay_mode(std::string_view text) {
  if (text == "application") return JobReplayMode::kApplication;
  if (text == "kernel") return JobReplayMode::kKernel;
  return std::nullopt;
}

std::string InputFile::where(const JobSpec& job, std::string_view key) const {
  Mark m = job.mark;
  if (!key.empty()) {
    auto it = job.key_marks.find(std::string(key));
    if (it != job.key_marks.end()) m = it->second;
  }
  std::string file = printable(path, 200);
  std::string place = m.line > 0 ? fmt::format("{}:{}:{}", file, m.line, m.column) : file;
  if (key.empty()) return fmt::format("{}: jobs[{}]", place, job.index);
  return fmt::format("{}: jobs[{}].{}", place, job.index, printable(key, 60));
}

std::string InputFile::job_label(const JobSpec& job) const {
  if (job.name.empty()) return fmt::format("job {}", job.index + 1);
  return fmt::format("job {} (\"{}\")", job.index + 1, printable(job.name, 40));
}

Result<InputFile> parse_input_text(std::string_view text, InputFormat format,
                                   std::string_view name) {
  const std::string safe_name = printable(name, 200);  // messages stay on one line
  try {
    ASSIGN_OR_RETURN(Node root, format == InputFormat::kJson ? parse_json_tree(text, safe_name)
                                                             : parse_yaml_tree(text, safe_name));
    return tree_to_input(root, safe_name);
  } catch (const std::exception& e) {
    // Nothing above is expected to throw; this is the exception firewall for third-party code.
    return InvalidArgument(
        fmt::format("{}: cannot read the input file: {}", safe_name, printable(e.what(), 300)));
  }
}

Result<InputFile> load_input_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("cannot read input file {}: {}; check the path given to -i",
                             printable(path, 200),
                             std::error_code(errno, std::generic_category()).message()));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  InputFormat format = InputFormat::kYaml;
  std::string ext = lower(std::filesystem::path(path).extension().string());
  if (ext == ".json") {
    format = InputFormat::kJson;
  } else if (ext == ".yaml" || ext == ".yml") {
    format = InputFormat::kYaml;
  } else {
    size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') format = InputFormat::kJson;
  }
  return parse_input_text(text, format, path);
}

}  // namespace kreplay::cli
