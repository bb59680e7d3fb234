#include "backends/cuda/disassembly.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/env.hpp"

namespace kreplay::cuda {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "FFMA R5,   R5, R6, 0.5 ;" -> "FFMA R5, R5, R6, 0.5"; braces of dual-issue pairs dropped.
std::string clean_instruction(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '{') s = trim(s.substr(1));
  if (!s.empty() && s.back() == '}') s = trim(s.substr(0, s.size() - 1));
  if (!s.empty() && s.back() == ';') s = trim(s.substr(0, s.size() - 1));
  std::string out;
  out.reserve(s.size());
  bool blank = false;
  for (char c : s) {
    if (c == ' ' || c == '\t') {
      blank = true;
      continue;
    }
    if (blank && !out.empty()) out.push_back(' ');
    blank = false;
    out.push_back(c);
  }
  return out;
}

bool executable(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

Instructions parse_nvdisasm(std::string_view listing) {
  Instructions out;
  std::string function;
  while (!listing.empty()) {
    const size_t nl = listing.find('\n');
    std::string_view line = trim(listing.substr(0, nl));
    listing.remove_prefix(nl == std::string_view::npos ? listing.size() : nl + 1);
    // ".section	.text._Z3hotPfi,"ax",@progbits": the function whose code follows.
    if (line.starts_with(".section")) {
      std::string_view rest = trim(line.substr(8));
      function.clear();
      if (rest.starts_with(".text.")) {
        rest.remove_prefix(6);
        function = std::string(rest.substr(0, rest.find(',')));
      }
      continue;
    }
    if (function.empty() || !line.starts_with("/*")) continue;
    const size_t close = line.find("*/");
    if (close == std::string_view::npos) continue;
    const std::string hex(line.substr(2, close - 2));
    char* end = nullptr;
    const unsigned long long offset = std::strtoull(hex.c_str(), &end, 16);
    if (hex.empty() || end == nullptr || *end != '\0') continue;  // a comment, not an address
    std::string text = clean_instruction(line.substr(close + 2));
    if (!text.empty()) out[{function, offset}] = std::move(text);
  }
  return out;
}

std::string find_nvdisasm() {
  if (auto chosen = env::get("KREPLAY_NVDISASM")) return *chosen;
  if (auto path = env::get("PATH")) {
    for (const auto& dir : env::split(*path, ':')) {
      std::string candidate = dir + "/nvdisasm";
      if (executable(candidate)) return candidate;
    }
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (auto root = env::get(var); root && executable(*root + "/bin/nvdisasm"))
      return *root + "/bin/nvdisasm";
  }
  if (executable("/usr/local/cuda/bin/nvdisasm")) return "/usr/local/cuda/bin/nvdisasm";
  return "";
}

Result<Instructions> disassemble(std::span<const std::byte> cubin, const std::string& tool) {
  if (tool.empty()) return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "no nvdisasm");
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = fmt::format("{}/kreplay-cubin-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  const int fd = ::mkstemp(path.data());
  if (fd < 0) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("cannot create a temporary file for nvdisasm ({})", std::strerror(errno)));
  }
  struct Unlink {
    std::string p;
    ~Unlink() { ::unlink(p.c_str()); }
  } unlink_after{path};
  for (size_t done = 0; done < cubin.size();) {
    const ssize_t n = ::write(fd, cubin.data() + done, cubin.size() - done);
    if (n <= 0 && errno != EINTR) {
      ::close(fd);
      return Error(KREPLAY_STATUS_ERROR, fmt::format("cannot write the cubin for nvdisasm ({})",
                                                     std::strerror(errno)));
    }
    if (n > 0) done += static_cast<size_t>(n);
  }
  ::close(fd);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    return Error(KREPLAY_STATUS_ERROR, fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  std::string arg0 = tool, arg1 = "-c";
  char* argv[] = {arg0.data(), arg1.data(), path.data(), nullptr};
  // An empty environment: nothing of the application's (its CUDA injection, preloads) follows.
  char* envp[] = {nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, tool.c_str(), &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                 fmt::format("cannot run {} ({})", tool, std::strerror(spawned)));
  }
  std::string listing;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n > 0) {
      listing.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_fds[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    std::string first(trim(std::string_view(listing).substr(0, listing.find('\n'))));
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("{} failed on a cubin ({}{})", tool,
                             WIFEXITED(wstatus) ? fmt::format("exit {}", WEXITSTATUS(wstatus))
                                                : std::string("killed by a signal"),
                             first.empty() ? "" : ": " + first));
  }
  return parse_nvdisasm(listing);
}

}  // namespace kreplay::cuda
