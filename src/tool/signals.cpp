#include "tool/signals.hpp"

#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <iterator>

namespace kreplay::tool {

void OwnedMutex::lock() {
  m_.lock();
  owner_.store(pthread_self());
}

bool OwnedMutex::try_lock() {
  if (!m_.try_lock()) return false;
  owner_.store(pthread_self());
  return true;
}

void OwnedMutex::unlock() {
  // The owner is cleared after the unlock, and only if nobody took the lock since: a handler that
  // runs on this thread in between still sees the lock as its own and defers (handled below).
  m_.unlock();
  pthread_t me = pthread_self();
  owner_.compare_exchange_strong(me, pthread_t{0});
  if (int sig = deferred_sig_.exchange(0); sig != 0) {
    if (auto fn = deferred_fn_.exchange(nullptr)) fn(sig);
  }
}

bool OwnedMutex::held_by_this_thread() const {
  pthread_t owner = owner_.load();
  return owner != 0 && pthread_equal(owner, pthread_self());
}

void OwnedMutex::defer_to_unlock(void (*fn)(int), int sig) {
  deferred_fn_.store(fn);
  deferred_sig_.store(sig);
}

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGFPE, SIGABRT};
struct sigaction g_previous[std::size(kSignals)];
OwnedMutex* g_mu = nullptr;
void (*g_finalize)() = nullptr;

bool is_crash(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGABRT; }

// Die the way the signal would have: the previous handler, raised again.
void die(int sig) {
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    if (kSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  }
  raise(sig);
}

// Outside the handler: the thread that held the lock has released it.
void finalize_then_die(int sig) {
  if (g_finalize) g_finalize();
  die(sig);
}

void on_signal(int sig) {
  if (is_crash(sig)) {
    // Where it happened (library + offset per frame), so a report can be symbolized with
    // addr2line against the same build. backtrace() was warmed up at install time, so it does
    // not load libgcc here.
    static const char kHead[] = "==KREPLAY== the application crashed; backtrace:\n";
    static const char kFrame[] = "==KREPLAY==   ";
    (void)!write(STDERR_FILENO, kHead, sizeof(kHead) - 1);
    void* frames[64];
    int n = backtrace(frames, 64);
    for (int i = 1; i < n; ++i) {  // frame 0 is this handler
      (void)!write(STDERR_FILENO, kFrame, sizeof(kFrame) - 1);
      backtrace_symbols_fd(&frames[i], 1, STDERR_FILENO);
    }
  }
  if (g_mu != nullptr && g_mu->held_by_this_thread()) {
    // Inside one of the tool's callbacks. A crash there leaves the state half-written: no
    // finalize. Any other signal: finalize as soon as this thread leaves the callback.
    if (!is_crash(sig)) {
      g_mu->defer_to_unlock(&finalize_then_die, sig);
      return;
    }
  } else if (g_finalize) {
    g_finalize();  // best effort: make what was collected readable
  }
  die(sig);
}

}  // namespace

void install_signal_handlers(OwnedMutex& mu, void (*finalize)()) {
  g_mu = &mu;
  g_finalize = finalize;
  void* warm[1];
  (void)backtrace(warm, 1);
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    struct sigaction sa {};
    sa.sa_handler = &on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(kSignals[i], &sa, &g_previous[i]);
  }
}

}  // namespace kreplay::tool
