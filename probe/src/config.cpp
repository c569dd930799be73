#include "config.h"

#include <charconv>
#include <string_view>

namespace kbx::probe {
namespace {

// Parses a whole decimal number in [min, max]; false on anything else (sign, spaces, overflow).
bool parse_number(std::string_view text, long min, long max, long& out) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return false;
  if (value < min || value > max) return false;
  out = value;
  return true;
}

std::string expand_pid(std::string path, long pid) {
  const std::string id = std::to_string(pid);
  for (std::size_t at = path.find("%p"); at != std::string::npos;
       at = path.find("%p", at + id.size())) {
    path.replace(at, 2, id);
  }
  return path;
}

}  // namespace

Config read_config(const EnvLookup& env, long pid) {
  Config config;
  if (const char* owner = env("KBX_PROBE_PID"); owner != nullptr) {
    long owner_pid = 0;
    if (!parse_number(owner, 1, 1L << 30, owner_pid)) {
      config.problem = std::string("KBX_PROBE_PID is not a process id: '") + owner + "'";
      return config;
    }
    if (owner_pid != pid) return config;  // another process owns the stream: stay silent
  }
  if (const char* timeout = env("KBX_PROBE_WRITE_TIMEOUT_MS"); timeout != nullptr) {
    long ms = 0;
    if (!parse_number(timeout, 1, 600000, ms)) {
      config.problem =
          std::string("KBX_PROBE_WRITE_TIMEOUT_MS is not 1..600000: '") + timeout + "'";
      return config;
    }
    config.write_timeout = std::chrono::milliseconds(ms);
  }
  if (const char* fd = env("KBX_PROBE_FD"); fd != nullptr) {
    long value = 0;
    if (!parse_number(fd, 0, 1L << 20, value)) {
      config.problem = std::string("KBX_PROBE_FD is not a file descriptor: '") + fd + "'";
      return config;
    }
    config.sink = Config::Sink::Fd;
    config.fd = static_cast<int>(value);
    return config;
  }
  if (const char* file = env("KBX_PROBE_FILE"); file != nullptr) {
    if (*file == '\0') {
      config.problem = "KBX_PROBE_FILE is empty";
      return config;
    }
    config.sink = Config::Sink::File;
    config.path = expand_pid(file, pid);
  }
  return config;
}

}  // namespace kbx::probe
