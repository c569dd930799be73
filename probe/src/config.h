// Where the probe writes its records, read from the environment at CUDA start-up.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace kbx::probe {

/// The probe's settings (environment variables are listed in docs/probe.md).
struct Config {
  enum class Sink { None, Fd, File };
  Sink sink = Sink::None;  ///< None: the probe stays inert
  int fd = -1;             ///< Sink::Fd: the descriptor from KBX_PROBE_FD
  std::string path;        ///< Sink::File: KBX_PROBE_FILE with "%p" replaced by the pid
  std::chrono::milliseconds write_timeout{5000};  ///< longest wait of one write of records
  std::string problem;  ///< non-empty when the settings are invalid (the probe stays inert)
};

/// Looks up an environment variable; nullptr when unset (std::getenv in the library).
using EnvLookup = std::function<const char*(const char*)>;

/// Reads the settings for process `pid`. KBX_PROBE_PID, when set, names the only process that
/// may write: any other process (a child that inherited the environment) gets Sink::None.
Config read_config(const EnvLookup& env, long pid);

}  // namespace kbx::probe
