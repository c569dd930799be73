#pragma once
#include <optional>
#include <string>
#include <vector>

namespace kbx {

// Two events of a candidate worker as plain facts, for the parts that decide from them (the
// verdict's job status) without depending on the scheduler that parses them (sched/events.h,
// which requires every field; docs/protocol.md lists every event).

/// {"ev": "static"}: facts about the source from python/kbx_worker/static.py (before any
/// candidate code runs).
struct StaticEvent {
  bool syntax_ok = false;
  std::string message;  ///< the syntax error, when !syntax_ok
  bool entry_found = false;
  std::vector<std::string> triton_kernels;
  std::vector<std::string> suspicious_imports;
};

/// {"ev": "error"}: the candidate failed (import, compile, run or time).
struct ErrorEvent {
  std::string phase, kind, type, message, trace;
  std::optional<std::string> case_name;  ///< null outside a case
};

}  // namespace kbx
