// The tool's signal handlers, in forked children (each child installs them, does one thing, and
// dies or exits): a signal outside the tool's lock closes the outputs at once; a signal on the
// thread that holds the lock closes them when that thread releases it (never waits for itself);
// a crash while holding the lock does not touch the half-written state; every case then dies of
// its signal.
#include "tool/signals.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

namespace kreplay::tool {
namespace {

int g_log_fd = -1;
OwnedMutex g_mu;

void note(const char* what) { (void)!write(g_log_fd, what, std::strlen(what)); }

// finalize() as the tool's: takes the lock itself.
void finalize() {
  std::lock_guard lock(g_mu);
  note("finalize;");
}

struct Outcome {
  int signal = 0;  // what the child died of (0: it exited)
  std::string log;
};

Outcome in_child(const std::function<void()>& body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    g_log_fd = fds[1];
    // The handlers before kreplay's are the defaults (a sanitizer's own SIGSEGV handler would
    // report and exit instead of dying of the signal).
    for (int sig : {SIGINT, SIGTERM, SIGSEGV}) signal(sig, SIG_DFL);
    install_signal_handlers(g_mu, &finalize);
    body();
    note("exit;");
    _exit(0);
  }
  close(fds[1]);
  Outcome out;
  char buf[256];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.log.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

TEST(Signals, OutsideTheLockFinalizesThenDiesOfTheSignal) {
  Outcome o = in_child([] { raise(SIGTERM); });
  EXPECT_EQ(o.signal, SIGTERM);
  EXPECT_EQ(o.log, "finalize;");
}

TEST(Signals, OnTheThreadHoldingTheLockFinalizesWhenItIsReleased) {
  // Before OwnedMutex, the handler waited for a lock its own thread held and gave up: the run
  // was left without its summary (cli.app_death, flaky under load).
  Outcome o = in_child([] {
    {
      std::lock_guard lock(g_mu);
      raise(SIGINT);
      note("callback-done;");
    }
    note("after-unlock;");
  });
  EXPECT_EQ(o.signal, SIGINT);
  EXPECT_EQ(o.log, "callback-done;finalize;");
}

TEST(Signals, WhileAnotherThreadHoldsTheLockWaitsForIt) {
  Outcome o = in_child([] {
    std::thread holder([] {
      std::lock_guard lock(g_mu);
      usleep(200000);
      note("holder-done;");
    });
    usleep(50000);
    raise(SIGTERM);  // this thread does not hold the lock: finalize waits for the holder
    holder.join();
  });
  EXPECT_EQ(o.signal, SIGTERM);
  EXPECT_EQ(o.log, "holder-done;finalize;");
}

TEST(Signals, ACrashWhileHoldingTheLockSkipsFinalize) {
  Outcome o = in_child([] {
    std::lock_guard lock(g_mu);
    raise(SIGSEGV);
    note("survived;");
  });
  EXPECT_EQ(o.signal, SIGSEGV);
  EXPECT_EQ(o.log, "");
}

TEST(Signals, OwnedMutexKnowsItsHolder) {
  OwnedMutex m;
  EXPECT_FALSE(m.held_by_this_thread());
  {
    std::lock_guard lock(m);
    EXPECT_TRUE(m.held_by_this_thread());
    bool other = true;
    std::thread([&] { other = m.held_by_this_thread(); }).join();
    EXPECT_FALSE(other);
  }
  EXPECT_FALSE(m.held_by_this_thread());
  ASSERT_TRUE(m.try_lock());
  EXPECT_TRUE(m.held_by_this_thread());
  m.unlock();
  EXPECT_FALSE(m.held_by_this_thread());
}

}  // namespace
}  // namespace kreplay::tool
