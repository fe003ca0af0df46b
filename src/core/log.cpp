// Logging implementation: one line per call, written with a single fprintf so threads do not interleave.
#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace lazyslot {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void LogF(LogLevel level, const char* fmt, ...) {
  if (static_cast<int>(level) < g_level.load()) return;
  static const char* kNames[] = {"D", "I", "W", "E"};
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm;
  gmtime_r(&t, &tm);
  std::fprintf(stderr, "%s %02d:%02d:%02d.%03d %s\n", kNames[static_cast<int>(level)], tm.tm_hour, tm.tm_min,
               tm.tm_sec, ms, msg);
}

}  // namespace lazyslot
