// Pins the terminal progress line: drawn in place ("\r" ... "\x1b[K") only when enabled and after
// the first second, cut to the terminal width, taken off the screen by clear() and before every
// log line; KREPLAY_PROGRESS=tty is needed and is removed from the environment.
#include "tool/progress.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "common/logging.hpp"

namespace kreplay::tool {
namespace {

class Pipe {
 public:
  Pipe() {
    EXPECT_EQ(pipe(fds_), 0);
    fcntl(fds_[0], F_SETFL, O_NONBLOCK);
  }
  ~Pipe() {
    close(fds_[0]);
    close(fds_[1]);
  }
  int in() const { return fds_[1]; }
  std::string read_all() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds_[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }

 private:
  int fds_[2];
};

constexpr uint64_t kSecond = 1000000000ull;

TEST(TerminalProgress, LineText) {
  ProgressCounts c{40, 38, 114, 1, 2};
  EXPECT_EQ(TerminalProgress::line(12345000000ull, c, 200),
            "==KREPLAY== 12.3 s: 40 launches, 38 replayed, 114 passes, 1 declined, 2 not selected");
  EXPECT_EQ(TerminalProgress::line(kSecond, c, 30).size(), 29u);  // never wraps
}

TEST(TerminalProgress, DrawsInPlaceAfterTheFirstSecondAndClears) {
  Pipe p;
  {
    TerminalProgress t(true, p.in(), 120);
    t.update(kSecond / 2, {1, 0, 0, 0, 0});
    EXPECT_EQ(p.read_all(), "");  // too early
    EXPECT_FALSE(t.showing());
    t.update(2 * kSecond, {3, 2, 6, 0, 1});
    EXPECT_EQ(p.read_all(),
              "\r==KREPLAY== 2.0 s: 3 launches, 2 replayed, 6 passes, 0 declined, 1 not selected"
              "\x1b[K");
    EXPECT_TRUE(t.showing());
    t.update(3 * kSecond, {4, 3, 9, 0, 1});
    EXPECT_EQ(p.read_all().substr(0, 20), "\r==KREPLAY== 3.0 s: ");
    t.clear();
    EXPECT_EQ(p.read_all(), "\r\x1b[K");
    t.clear();
    EXPECT_EQ(p.read_all(), "");  // nothing on screen: nothing to clear
    t.update(4 * kSecond, {});
    p.read_all();
  }
  EXPECT_EQ(p.read_all(), "\r\x1b[K");  // the destructor takes the line away
}

TEST(TerminalProgress, DisabledWritesNothing) {
  Pipe p;
  {
    TerminalProgress t(false, p.in(), 80);
    t.update(5 * kSecond, {1, 1, 1, 0, 0});
    t.clear();
  }
  EXPECT_EQ(p.read_all(), "");
}

TEST(TerminalProgress, ALogLineTakesTheProgressLineOffFirst) {
  Pipe p;
  TerminalProgress t(true, p.in(), 80);
  t.update(2 * kSecond, {1, 1, 2, 0, 0});
  p.read_all();
  testing::internal::CaptureStderr();
  KR_WARN("something happened");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "==KREPLAY== warning: something happened\n");
  EXPECT_EQ(p.read_all(), "\r\x1b[K");
  EXPECT_FALSE(t.showing());
}

TEST(TerminalProgress, WantedNeedsTheVariableAndATerminal) {
  Pipe p;
  unsetenv("KREPLAY_PROGRESS");
  EXPECT_FALSE(TerminalProgress::wanted(p.in()));
  setenv("KREPLAY_PROGRESS", "tty", 1);
  EXPECT_FALSE(TerminalProgress::wanted(p.in()));  // a pipe is not a terminal
  EXPECT_EQ(getenv("KREPLAY_PROGRESS"), nullptr);  // children do not inherit it
}

}  // namespace
}  // namespace kreplay::tool
