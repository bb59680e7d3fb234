// The tool's signal handling: a crash prints a backtrace, and every fatal signal first closes the
// outputs (best effort) and then ends the process the way the signal would have.
//
// A signal can land on a thread that is inside one of the tool's callbacks, holding the lock that
// closing the outputs needs. Waiting there would wait for itself, so the lock is an OwnedMutex:
// the handler sees that its own thread holds it and puts the work off until that thread releases
// the lock, a moment later and outside the signal handler.
#pragma once

#include <pthread.h>

#include <atomic>
#include <mutex>

namespace kreplay::tool {

/// A mutex (Lockable) that knows which thread holds it.
class OwnedMutex {
 public:
  void lock();
  bool try_lock();
  void unlock();
  /// Async-signal-safe.
  bool held_by_this_thread() const;
  /// Async-signal-safe: the holder calls @p fn(sig) right after it releases the lock.
  void defer_to_unlock(void (*fn)(int), int sig);

 private:
  std::mutex m_;
  std::atomic<pthread_t> owner_{0};
  std::atomic<int> deferred_sig_{0};
  std::atomic<void (*)(int)> deferred_fn_{nullptr};
};

/// Installs the handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGFPE and SIGABRT.
/// On a signal, @p finalize (which locks @p mu itself) runs once, then the signal is raised again
/// with the handler that was there before. A crash on a thread holding @p mu skips @p finalize:
/// the state it guards may be half-written.
void install_signal_handlers(OwnedMutex& mu, void (*finalize)());

}  // namespace kreplay::tool
