// The document tree the input-file reader works on (input_file.cpp): JSON (nlohmann's SAX
// parser) and YAML (yaml-cpp) both become a small tree of scalars, lists and mappings that keeps
// the line and column of every key and value, so each rejection can point at its place. Depth
// and size are bounded (YAML aliases cannot blow a small file up), and the text must be UTF-8.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/input_file.hpp"
#include "common/status.hpp"

namespace kreplay::cli::input_tree {

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

/// What a value is, for messages: "a list", "a mapping", "nothing", true, the number 3, "text".
std::string kind_name(const Node& node);
/// The tree of a JSON or a YAML text; @p name (the file's) starts every error's message.
Result<Node> parse_json_tree(std::string_view text, std::string_view name);
Result<Node> parse_yaml_tree(std::string_view text, std::string_view name);

}  // namespace kreplay::cli::input_tree
