// The profiler's progress on a terminal: one line, rewritten in place while the application runs
// ("==KREPLAY== 12.3 s: 40 launches, 38 replayed, 114 passes, 0 declined, 2 not selected"), and
// nothing at all when stderr is not a terminal (a log file gets no progress).
//
// The kreplay command decides: it sets KREPLAY_PROGRESS=tty for the application when its own
// stderr, which the application inherits, is a terminal (and messages are not silenced). The tool
// also checks that its stderr still is one, and takes the variable out of the environment so
// that processes the application starts do not draw lines of their own. Other messages take the
// line off the screen first (log::set_before_line), and it comes back at the next update.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace kreplay::tool {

struct ProgressCounts {
  uint64_t launches = 0, replayed = 0, passes = 0, declined = 0, not_selected = 0;
};

class TerminalProgress {
 public:
  /// First update after this long: short runs show no line at all.
  static constexpr uint64_t kFirstAfterNs = 1000000000ull;

  /// KREPLAY_PROGRESS=tty and @p fd is a terminal; removes KREPLAY_PROGRESS from the environment.
  static bool wanted(int fd = 2);

  /// @p width: columns to fit into (0: ask the terminal, 80 when it does not say).
  explicit TerminalProgress(bool enabled, int fd = 2, int width = 0);
  ~TerminalProgress();  ///< clear()
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  /// Draw the line for @p elapsed_ns (nothing before kFirstAfterNs or when disabled).
  void update(uint64_t elapsed_ns, const ProgressCounts& counts);
  /// Take the line off the screen (the cursor ends at the start of the empty line).
  void clear();
  bool showing() const;

  /// "==KREPLAY== 12.3 s: 40 launches, 38 replayed, 114 passes, 0 declined, 2 not selected", cut
  /// to @p width - 1 columns.
  static std::string line(uint64_t elapsed_ns, const ProgressCounts& counts, int width);

 private:
  static void before_log_line();
  void clear_locked();

  bool enabled_;
  int fd_;
  int width_;
  bool showing_ = false;
  mutable std::mutex mu_;
};

}  // namespace kreplay::tool
