#include "verdict/job_status.h"

#include <fmt/format.h>

namespace kbx::verdict {
namespace {

/// The last n bytes of s.
std::string tail(const std::string& s, size_t n) {
  return s.size() > n ? s.substr(s.size() - n) : s;
}

}  // namespace

std::optional<Failure> protocol_failure(const std::string& problem) {
  if (problem.empty()) return std::nullopt;
  return Failure{Status::Crash, "protocol error in the worker's events: " + problem};
}

std::optional<Failure> timed_without_slot(int first_timing, int granted_after) {
  if (first_timing < 0) return std::nullopt;
  if (granted_after >= 0 && first_timing >= granted_after) return std::nullopt;
  return Failure{Status::TimerTampered,
                 "the worker timed its calls before it was given the GPU's timing slot (its "
                 "times may overlap another job's GPU work)"};
}

std::optional<Failure> timed_after_handback(int last_timing, int released_after) {
  if (last_timing < 0 || released_after < 0 || last_timing < released_after) return std::nullopt;
  return Failure{Status::TimerTampered,
                 "the worker timed its calls after it handed the GPU's timing slot back (its "
                 "times may overlap another job's GPU work)"};
}

std::optional<Failure> asked_after_handback(bool asked_after_close) {
  if (!asked_after_close) return std::nullopt;
  return Failure{Status::TimerTampered,
                 "the worker asked for the GPU's timing slot again after it had handed it back "
                 "for good (its slot wait was replaced; it was ended)"};
}

std::optional<Failure> timed_between_grants(const std::vector<int>& timings,
                                            const std::vector<std::pair<int, int>>& gaps) {
  for (const int at : timings) {
    for (const auto& [released, granted] : gaps) {
      if (at >= released && (granted < 0 || at < granted)) {
        return Failure{Status::TimerTampered,
                       "the worker timed its calls while it had handed the GPU's timing slot back "
                       "(its times may overlap another job's GPU work)"};
      }
    }
  }
  return std::nullopt;
}

std::optional<Failure> static_failure(const std::optional<StaticEvent>& facts,
                                      const std::string& entry, const std::string& track) {
  if (!facts) return std::nullopt;
  if (!facts->syntax_ok) return Failure{Status::SyntaxError, facts->message};
  if (!facts->entry_found) {
    return Failure{Status::NoEntry, "no function " + entry + "() defined at module level"};
  }
  if (track == "triton" && facts->triton_kernels.empty()) {
    return Failure{Status::StaticReject,
                   "track triton: no @triton.jit kernel in the source (use --track any to accept "
                   "other implementations)"};
  }
  return std::nullopt;
}

Status status_of_error(const ErrorEvent& err) {
  if (err.kind == "compile_error") return Status::CompileError;
  if (err.kind == "oom") return Status::Oom;
  if (err.kind == "cuda_error") return Status::CudaError;
  if (err.phase == "import") return Status::ImportError;
  return Status::RuntimeError;
}

Failure case_error(const ErrorEvent& err) {
  return {status_of_error(err), err.type + ": " + tail(err.message, 1500)};
}

Failure process_failure(const ProcessEnd& p) {
  using End = ProcessEnd::End;
  if (p.end == End::TimedOut) return {Status::Timeout, p.description + "; process group killed"};
  if (p.end == End::SpawnFailed) return {Status::HarnessError, "could not start the worker"};
  if (p.end == End::Exited && p.exit_code == kExitConfineFailed && !p.said_hello) {
    return {Status::HarnessError, "could not confine the worker (before any candidate code ran)"};
  }
  if (p.memory_limit_hit) return {Status::Oom, kOwnMemoryLimit};
  // Before the signal: kbx kills a worker whose events have no end (sandbox::Limits)
  if (!p.protocol_error.empty()) return {Status::Crash, p.protocol_error};
  if (p.end == End::Signaled) return {Status::Crash, "killed by " + p.description};
  if (p.end == End::Exited && !p.said_static && !p.said_done) {
    return {Status::HarnessError,
            fmt::format("the worker ended ({}) before it read the candidate's source: no "
                        "candidate code had run (its start failed; stderr says why)",
                        p.description)};
  }
  if (!p.said_done) {
    return {Status::Crash, fmt::format("worker ended ({}) before finishing: os._exit, a fatal "
                                       "error or an interpreter crash",
                                       p.description)};
  }
  return {};
}

Failure job_wide_failure(const JobWide& job) {
  if (!job.tampered.empty()) {
    return {Status::TimerTampered,
            fmt::format("the candidate changed {}", fmt::join(job.tampered, ", ")) +
                " (timings come from the probe and the worker's own references, and "
                "persisting L2 is put back before each call; the job fails all the same)"};
  }
  if (const auto& err = job.job_error) {
    const std::string where = err->case_name ? " in case " + *err->case_name : "";
    return {status_of_error(*err), err->type + where + ": " + tail(err->message, 1500)};
  }
  if (job.process.status != Status::Passed) {
    const std::string stderr_note =
        job.stderr_kept.empty() ? "" : "; stderr: " + tail(job.stderr_kept, 800);
    return {job.process.status, job.process.detail + stderr_note};
  }
  if (job.cases_missing) {
    // the worker stopped after a call that raised (e.g. a CUDA error): that error, else ours
    return {job.last_error ? status_of_error(*job.last_error) : Status::HarnessError,
            "worker finished without running every case"};
  }
  return {};
}

Failure job_status(const std::optional<Failure>& track_reject, const Failure& first_case,
                   const Failure& job_wide) {
  if (track_reject) return *track_reject;
  if (first_case.status != Status::Passed) return first_case;
  if (job_wide.status != Status::Passed) return job_wide;
  return {};
}

}  // namespace kbx::verdict
