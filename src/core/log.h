// Logging to stderr with a level and a timestamp. printf-style so hot paths stay cheap when filtered out.
#pragma once

#include <cstdarg>

namespace lazyslot {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kSilent = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void LogF(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace lazyslot

#define LS_LOG_DEBUG(...) ::lazyslot::LogF(::lazyslot::LogLevel::kDebug, __VA_ARGS__)
#define LS_LOG_INFO(...) ::lazyslot::LogF(::lazyslot::LogLevel::kInfo, __VA_ARGS__)
#define LS_LOG_WARN(...) ::lazyslot::LogF(::lazyslot::LogLevel::kWarn, __VA_ARGS__)
#define LS_LOG_ERROR(...) ::lazyslot::LogF(::lazyslot::LogLevel::kError, __VA_ARGS__)
