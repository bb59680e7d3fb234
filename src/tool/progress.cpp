#include "tool/progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/logging.hpp"

namespace kreplay::tool {
namespace {

// The line on screen, for the logging hook; g_mu keeps it alive while the hook uses it.
std::mutex g_mu;
TerminalProgress* g_active = nullptr;

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

bool TerminalProgress::wanted(int fd) {
  const char* value = std::getenv("KREPLAY_PROGRESS");  // NOLINT: read once, at start
  const bool asked = value != nullptr && std::strcmp(value, "tty") == 0;
  if (value != nullptr) unsetenv("KREPLAY_PROGRESS");
  return asked && isatty(fd) == 1;
}

TerminalProgress::TerminalProgress(bool enabled, int fd, int width)
    : enabled_(enabled), fd_(fd), width_(width) {
  if (!enabled_) return;
  if (width_ <= 0) {
    struct winsize ws {};
    width_ = ioctl(fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  }
  {
    std::lock_guard lock(g_mu);
    g_active = this;
  }
  log::set_before_line(&TerminalProgress::before_log_line);
}

TerminalProgress::~TerminalProgress() {
  if (!enabled_) return;
  log::set_before_line(nullptr);
  {
    std::lock_guard lock(g_mu);
    g_active = nullptr;
  }
  clear();
}

std::string TerminalProgress::line(uint64_t elapsed_ns, const ProgressCounts& c, int width) {
  std::string text = fmt::format(
      "==KREPLAY== {:.1f} s: {} launches, {} replayed, {} passes, {} declined, {} not selected",
      static_cast<double>(elapsed_ns) / 1e9, c.launches, c.replayed, c.passes, c.declined,
      c.not_selected);
  // Never wrap: a wrapped line cannot be rewritten in place.
  const size_t fit = width > 1 ? static_cast<size_t>(width - 1) : text.size();
  if (text.size() > fit) text.resize(fit);
  return text;
}

void TerminalProgress::update(uint64_t elapsed_ns, const ProgressCounts& counts) {
  if (!enabled_ || elapsed_ns < kFirstAfterNs) return;
  std::lock_guard lock(mu_);
  std::string text(1, '\r');
  text.append(line(elapsed_ns, counts, width_));
  text.append("\x1b[K");
  write_all(fd_, text);
  showing_ = true;
}

void TerminalProgress::clear_locked() {
  if (!showing_) return;
  write_all(fd_, "\r\x1b[K");
  showing_ = false;
}

void TerminalProgress::clear() {
  std::lock_guard lock(mu_);
  clear_locked();
}

bool TerminalProgress::showing() const {
  std::lock_guard lock(mu_);
  return showing_;
}

void TerminalProgress::before_log_line() {
  std::lock_guard lock(g_mu);
  if (g_active != nullptr) g_active->clear();
}

}  // namespace kreplay::tool
