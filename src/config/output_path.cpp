#include "config/output_path.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <system_error>
#include <vector>

#include "common/env.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "config/text.hpp"

namespace kreplay::config {
namespace {

constexpr const char* kKnownTokens =
    "%hostname%, %pid%, %ppid%, %rank%, %q{VAR}, %env{VAR}%, %h, %p or %%";

enum class TokenKind { kText, kHostname, kPid, kPpid, kRank, kEnv };

struct Token {
  TokenKind kind;
  std::string_view text;  // kText: the text; kEnv: the variable name
};

Status template_error(std::string_view text, std::string_view what) {
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
               fmt::format("output name \"{}\": {}; known tokens are {}", printable(text), what,
                           kKnownTokens));
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::optional<TokenKind> long_token(std::string_view name) {
  if (name == "hostname") return TokenKind::kHostname;
  if (name == "pid") return TokenKind::kPid;
  if (name == "ppid") return TokenKind::kPpid;
  if (name == "rank") return TokenKind::kRank;
  return std::nullopt;
}

Status check_variable_name(std::string_view text, std::string_view name, std::string_view form) {
  if (name.empty()) return template_error(text, fmt::format("{} names no variable", form));
  for (char c : name) {
    if (!is_name_char(c)) {
      return template_error(text, fmt::format("\"{}\" in {} is not an environment variable name",
                                              printable(name), form));
    }
  }
  return Status::Ok();
}

Status tokenize(std::string_view s, std::vector<Token>* out) {
  size_t text_start = 0;
  size_t i = 0;
  auto flush_text = [&](size_t end) {
    if (end > text_start)
      out->push_back({TokenKind::kText, s.substr(text_start, end - text_start)});
  };
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f) {
      return template_error(s, "it contains a control character; use printable characters");
    }
    if (s[i] != '%') {
      ++i;
      continue;
    }
    flush_text(i);
    std::string_view rest = s.substr(i + 1);
    if (rest.empty()) return template_error(s, "a lone '%' at the end (write %% for a literal %)");
    if (rest[0] == '%') {
      out->push_back({TokenKind::kText, s.substr(i, 1)});
      i += 2;
    } else if (rest.substr(0, 2) == "q{") {
      size_t close = rest.find('}', 2);
      if (close == std::string_view::npos) return template_error(s, "%q{ has no closing }");
      std::string_view name = rest.substr(2, close - 2);
      RETURN_IF_ERROR(check_variable_name(s, name, "%q{...}"));
      out->push_back({TokenKind::kEnv, name});
      i += 1 + close + 1;
    } else if (rest.substr(0, 4) == "env{") {
      size_t close = rest.find("}%", 4);
      if (close == std::string_view::npos) return template_error(s, "%env{ has no closing }%");
      std::string_view name = rest.substr(4, close - 4);
      RETURN_IF_ERROR(check_variable_name(s, name, "%env{...}%"));
      out->push_back({TokenKind::kEnv, name});
      i += 1 + close + 2;
    } else {
      size_t n = 0;
      while (n < rest.size() && std::isalnum(static_cast<unsigned char>(rest[n]))) ++n;
      std::string_view name = rest.substr(0, n);
      bool closed = n < rest.size() && rest[n] == '%';
      auto kind = long_token(name);
      if (closed && kind) {
        out->push_back({*kind, {}});
        i += 1 + n + 1;
      } else if (kind) {
        return template_error(s, fmt::format("%{} has no closing % (write %{}%)", name, name));
      } else if (rest[0] == 'h' && (!closed || n == 1)) {
        out->push_back({TokenKind::kHostname, {}});
        i += 2;
      } else if (rest[0] == 'p' && (!closed || n == 1)) {
        out->push_back({TokenKind::kPid, {}});
        i += 2;
      } else if (closed && n > 0) {
        auto close = suggest(name, {"hostname", "pid", "ppid", "rank"}, 1);
        std::string hint = close.empty() ? "" : fmt::format(" (did you mean %{}%?)", close[0]);
        return template_error(s, fmt::format("unknown token %{}%{}", printable(name), hint));
      } else {
        return template_error(s, fmt::format("'%{}' starts no token (write %% for a literal %)",
                                             printable(rest.substr(0, 1))));
      }
    }
    text_start = i;
  }
  flush_text(s.size());
  return Status::Ok();
}

bool parse_rank(const std::string& text, int64_t* rank) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *rank);
  return ec == std::errc() && ptr == text.data() + text.size() && *rank >= 0;
}

Status open_exclusive(const std::string& path, bool* taken) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) RETURN_IF_ERROR(make_directories(parent.string()));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::close(fd);
    *taken = false;
    return Status::Ok();
  }
  if (errno == EEXIST) {
    *taken = true;
    return Status::Ok();
  }
  return Error(
      KREPLAY_STATUS_ERROR,
      fmt::format("cannot create output file {}: {}; choose another directory with -d",
                  printable(path, 200), std::error_code(errno, std::generic_category()).message()));
}

}  // namespace

ExpansionContext ExpansionContext::current() {
  ExpansionContext context;
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) context.hostname = host;
  if (context.hostname.empty()) context.hostname = "localhost";
  context.pid = static_cast<int64_t>(::getpid());
  context.ppid = static_cast<int64_t>(::getppid());
  context.getenv = [](const std::string& name) { return env::get(name.c_str()); };
  return context;
}

namespace {

template <size_t N>
std::optional<int64_t> first_rank(const ExpansionContext& context,
                                  const std::array<const char*, N>& variables) {
  if (!context.getenv) return std::nullopt;
  for (const char* name : variables) {
    auto value = context.getenv(name);
    int64_t rank = 0;
    if (value && parse_rank(*value, &rank)) return rank;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> mpi_rank(const ExpansionContext& context) {
  return first_rank(context, kRankVariables);
}

std::optional<int64_t> local_rank(const ExpansionContext& context) {
  return first_rank(context, kLocalRankVariables);
}

Result<std::string> expand_output_template(std::string_view text, const ExpansionContext& context) {
  std::vector<Token> tokens;
  RETURN_IF_ERROR(tokenize(text, &tokens));
  std::string out;
  for (const Token& token : tokens) {
    switch (token.kind) {
      case TokenKind::kText:
        out += token.text;
        break;
      case TokenKind::kHostname:
        out += context.hostname;
        break;
      case TokenKind::kPid:
        out += std::to_string(context.pid);
        break;
      case TokenKind::kPpid:
        out += std::to_string(context.ppid);
        break;
      case TokenKind::kRank: {
        auto rank = mpi_rank(context);
        out += std::to_string(rank ? *rank : context.pid);
        break;
      }
      case TokenKind::kEnv: {
        std::string name(token.text);
        auto value = context.getenv ? context.getenv(name) : std::nullopt;
        if (!value) {
          return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                       fmt::format("output name \"{}\": environment variable {} is not set; set "
                                   "it or remove it from the name",
                                   printable(text), name));
        }
        out += *value;
        break;
      }
    }
  }
  return out;
}

Status validate_output_template(std::string_view text) {
  std::vector<Token> tokens;
  return tokenize(text, &tokens);
}

bool template_is_per_process(std::string_view text) {
  std::vector<Token> tokens;
  if (!tokenize(text, &tokens).ok()) return false;
  for (const Token& token : tokens) {
    if (token.kind == TokenKind::kPid || token.kind == TokenKind::kRank) return true;
  }
  // %q{VAR} is how ncu and nsys users name per-rank files; %env{VAR}% is not counted, as in
  // rocprofv3, where it usually names a job or a directory.
  return text.find("%q{") != std::string_view::npos;
}

Result<std::string> output_base_path(const OutputOptions& output, const ExpansionContext& context) {
  const bool by_rank =
      !output.file_from_user && output.file == kDefaultOutputFile && mpi_rank(context).has_value();
  ASSIGN_OR_RETURN(std::string file,
                   expand_output_template(by_rank ? kDefaultRankOutputFile : output.file, context));
  if (file.empty()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 "the output file name is empty; give -o a name such as %hostname%/%pid%");
  }
  if (file.front() == '/') return file;
  ASSIGN_OR_RETURN(std::string directory, expand_output_template(output.directory, context));
  if (directory.empty()) directory = ".";
  if (directory.back() != '/') directory.push_back('/');
  return directory + file;
}

Status make_directories(const std::string& directory) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("cannot create directory {}: {}; choose another one with -d",
                             directory, ec.message()));
  }
  return Status::Ok();
}

Result<std::string> claim_output_base(const std::string& base, std::string_view first_suffix,
                                      int64_t pid) {
  bool taken = false;
  RETURN_IF_ERROR(open_exclusive(base + std::string(first_suffix), &taken));
  if (!taken) return base;
  for (int attempt = 1; attempt <= 100; ++attempt) {
    std::string candidate = attempt == 1 ? fmt::format("{}.{}", base, pid)
                                         : fmt::format("{}.{}.{}", base, pid, attempt);
    RETURN_IF_ERROR(open_exclusive(candidate + std::string(first_suffix), &taken));
    if (!taken) {
      KR_WARN(
          "{}{} exists (another process of this application, or an earlier run, wrote it); "
          "this process writes {}{}",
          base, first_suffix, candidate, first_suffix);
      return candidate;
    }
  }
  return Error(KREPLAY_STATUS_ERROR,
               fmt::format("cannot claim an output name next to {}{}: 100 variants exist; remove "
                           "old outputs or put %pid% in -o",
                           base, first_suffix));
}

}  // namespace kreplay::config
