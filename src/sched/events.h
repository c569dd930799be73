#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/worker_events.h"
#include "timing/case_timing.h"

namespace kbx::sched {

// The events of a candidate worker that the supervisor uses, with their fields REQUIRED: a
// missing or mistyped field is a protocol error (the job is `crash`, since the candidate's own
// process wrote the stream), never a default value. docs/protocol.md lists every event.

// StaticEvent ({"ev": "static"}) and ErrorEvent ({"ev": "error"}) are plain facts in
// common/worker_events.h, so that the verdict can decide from them.
using kbx::ErrorEvent;
using kbx::StaticEvent;

/// {"ev": "imported"}: the candidate module imported.
struct ImportedEvent {
  double seconds = 0;
};

/// {"ev": "case"}: one judged call; its outputs are in <out_prefix>.cand.kbt.
struct CaseEvent {
  std::string name;
  std::string structure;   ///< "single", "tuple", ... (argcodec.flatten_result)
  nlohmann::json outputs;  ///< array of objects, each with a string "name" and "kind"
  std::int64_t triton_launches = 0;
  double call_s = 0, save_s = 0, read_s = 0;
  std::string inputs_from;  ///< "rebuilt" or "file"
  nlohmann::json raw;       ///< the event as sent (the verdict reads its outputs' metadata)
};

/// {"ev": "timing"}: the timed calls of one full case.
struct TimingEvent {
  std::string name;
  std::vector<double> ms;
  double seconds = 0;
  std::vector<std::uint64_t> probe_ids;
  std::vector<std::string> tampered;
  std::vector<double> host_ms;
  bool varied = false;  ///< the calls ran on several value variants (its `variants` list)
  /// The timer's settle gave up before the calls: another process's GPU work did not drain
  /// (optional in the event; false when absent).
  bool contended = false;
  /// The worker timed the call as one that waits on the host inside (it measured the host's
  /// speed, `host_loop_ms`, before the batches): a diagnostic, the worker's own word.
  bool waits_on_host = false;
  /// Of the timer's batches (optional in the event; 0 when absent): how many, and how many took
  /// longer to queue than their GPU hold lasted (the worker's word; a diagnostic).
  std::int64_t batches = 0;
  std::int64_t short_holds = 0;
  /// How many of the process's GPU allocations had found no room by the timing's end (the
  /// caching allocator's num_ooms, caught or not; optional, 0 when absent): the worker's word.
  std::int64_t gpu_ooms = 0;

  /// Whether most batches took longer to queue than their hold lasted (timing::TimedCalls).
  bool holds_outrun() const { return timing::most_holds_outrun(batches, short_holds); }
};

/// Everything a candidate worker said, typed; `problem` is set at the first event that breaks
/// the protocol (and then the rest is not to be trusted).
struct CandidateEvents {
  std::optional<StaticEvent> static_facts;  ///< the first static event
  std::optional<ImportedEvent> imported;
  std::vector<CaseEvent> cases;
  std::vector<TimingEvent> timings;
  std::optional<ErrorEvent> error;  ///< the first error event
  std::vector<ErrorEvent> errors;   ///< every error event, in order
  bool done = false;
  std::string problem;  ///< "event 3 (case): field 'triton_launches' missing", or ""
};

/// Parses a candidate worker's events. Unknown event names are skipped; "ev" itself must be a
/// string. Non-finite floats arrive as the strings "nan", "inf", "-inf" (proto.py) and are read
/// as such.
CandidateEvents parse_candidate_events(const std::vector<nlohmann::json>& events);

}  // namespace kbx::sched
