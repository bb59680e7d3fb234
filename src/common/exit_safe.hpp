// Per-thread state that the process's exit handlers may still use.
//
// At exit glibc destroys the exiting (main) thread's thread_local objects before it runs the
// atexit handlers, and kreplay's handlers close the ranges still open then: closing one gives
// launch events, hook data and replay windows back to per-thread lists. A plain thread_local list
// is freed by that point, and writing to it corrupted the heap (two cuda-samples that exit with a
// range open aborted in malloc on an H100). exit_safe_thread_local keeps the main thread's instance
// alive to the end of the process; other threads free theirs when they end.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

namespace kreplay {

/// Whether the caller is the process's main thread.
inline bool on_main_thread() { return ::syscall(SYS_gettid) == ::getpid(); }

/// This thread's instance of @p T (one per type: give each use a type of its own), which on the
/// main thread outlives the thread_local destructors and stays usable in atexit handlers.
template <class T>
T& exit_safe_thread_local() {
  thread_local T* instance = nullptr;  // trivially destructible: still readable at exit
  if (instance == nullptr) {
    instance = new T();
    struct Owner {
      T** slot;
      ~Owner() {
        if (on_main_thread()) return;  // the exit handlers run after this; the process ends anyway
        delete *slot;
        *slot = nullptr;
      }
    };
    thread_local Owner owner{&instance};
  }
  return *instance;
}

}  // namespace kreplay
