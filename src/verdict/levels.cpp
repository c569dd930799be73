#include "verdict/levels.h"

namespace kbx::verdict {

bool is_track_status(Status s) {
  return s == Status::StaticReject || s == Status::NoTritonLaunch || s == Status::Fallback;
}

bool is_job_wide(Status s) {
  return s == Status::Fallback || s == Status::UnattributedWork || s == Status::TimingMismatch ||
         s == Status::StaleResult || s == Status::ImpossibleSpeed || s == Status::TimerTampered;
}

bool in_level(Level level, const std::string& tier, bool in_kbx) {
  switch (level) {
    case Level::Strict: return true;
    case Level::Core: return tier != "edge";
    case Level::Kbx: return in_kbx && tier != "edge";
  }
  return false;
}

store::LevelVerdict grade(Level level, const std::vector<GradedCase>& cases, Status job_status,
                          bool track_reject) {
  if (level == Level::Kbx) {  // a task with no case in KernelBenchX's scope: judged as core
    bool any = false;
    for (const auto& c : cases) any = any || in_level(level, c.tier, c.in_kbx);
    if (!any) level = Level::Core;
  }
  Status status = Status::Passed;
  bool values_ok = true;
  bool missing = false;
  for (const auto& c : cases) {
    if (!in_level(level, c.tier, c.in_kbx)) continue;
    if (!c.result) {
      missing = true;
      continue;
    }
    Status s = Status::HarnessError;
    if (!parse_status(c.result->status, &s) || s == Status::Passed) continue;
    if (status == Status::Passed) status = s;
    if (!is_track_status(s)) values_ok = false;
  }
  // What the timed cases showed about the candidate itself (a library doing the work, work
  // hidden from the clock, results cached across calls) holds at every level, whether or not
  // the timed cases belong to it.
  for (const auto& c : cases) {
    Status s = Status::Passed;
    if (!c.result || !parse_status(c.result->status, &s) || !is_job_wide(s)) continue;
    if (status == Status::Passed) status = s;
    if (!is_track_status(s)) values_ok = false;
    break;
  }
  if (missing) {
    values_ok = false;
    if (status == Status::Passed) {
      status = job_status == Status::Passed ? Status::HarnessError : job_status;
    }
  }
  if (job_status != Status::Passed) {
    if (status == Status::Passed) status = job_status;
    if (!is_track_status(job_status)) values_ok = false;
  }
  if (track_reject) status = Status::StaticReject;
  return {status_name(status), values_ok};
}

}  // namespace kbx::verdict
