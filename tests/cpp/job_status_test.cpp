// The job-level status rules (verdict/job_status.h): what the static facts, an error event,
// the process's end and their order of precedence give a job.
#include "verdict/job_status.h"

#include <gtest/gtest.h>

namespace kbx {
namespace {
using verdict::Failure;
using verdict::ProcessEnd;
using verdict::Status;

StaticEvent good_source() {
  StaticEvent s;
  s.syntax_ok = true;
  s.entry_found = true;
  s.triton_kernels = {"add_kernel"};
  return s;
}

ErrorEvent error(const std::string& phase, const std::string& kind) {
  ErrorEvent e;
  e.phase = phase;
  e.kind = kind;
  e.type = "RuntimeError";
  e.message = "boom";
  return e;
}

/// A worker that said hello, read the source, said done and exited 0.
ProcessEnd clean_exit() {
  ProcessEnd p;
  p.said_hello = p.said_static = p.said_done = true;
  p.description = "exit 0";
  return p;
}

TEST(StaticFailure, NoFactsOrAGoodSourceDecideNothing) {
  EXPECT_FALSE(verdict::static_failure(std::nullopt, "add", "triton"));
  EXPECT_FALSE(verdict::static_failure(good_source(), "add", "triton"));
}

TEST(StaticFailure, SyntaxErrorComesFirstWithItsMessage) {
  StaticEvent s;  // nothing found, and it does not parse
  s.syntax_ok = false;
  s.message = "line 3: invalid syntax";
  auto f = verdict::static_failure(s, "add", "triton");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, Status::SyntaxError);
  EXPECT_EQ(f->detail, "line 3: invalid syntax");
}

TEST(StaticFailure, MissingEntryNamesIt) {
  StaticEvent s = good_source();
  s.entry_found = false;
  auto f = verdict::static_failure(s, "add", "any");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, Status::NoEntry);
  EXPECT_EQ(f->detail, "no function add() defined at module level");
}

TEST(StaticFailure, TrackTritonWithoutAKernelIsAStaticReject) {
  StaticEvent s = good_source();
  s.triton_kernels.clear();
  auto f = verdict::static_failure(s, "add", "triton");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, Status::StaticReject);
  EXPECT_NE(f->detail.find("no @triton.jit kernel"), std::string::npos);
  EXPECT_FALSE(verdict::static_failure(s, "add", "any"));  // track any accepts it
}

TEST(StatusOfError, KindFirstThenImportPhase) {
  EXPECT_EQ(verdict::status_of_error(error("run", "oom")), Status::Oom);
  EXPECT_EQ(verdict::status_of_error(error("run", "compile_error")), Status::CompileError);
  EXPECT_EQ(verdict::status_of_error(error("run", "cuda_error")), Status::CudaError);
  EXPECT_EQ(verdict::status_of_error(error("run", "runtime_error")), Status::RuntimeError);
  EXPECT_EQ(verdict::status_of_error(error("import", "runtime_error")), Status::ImportError);
  // the kind wins over the phase: an import that ran out of memory is oom
  EXPECT_EQ(verdict::status_of_error(error("import", "oom")), Status::Oom);
  EXPECT_EQ(verdict::status_of_error(error("time", "")), Status::RuntimeError);
}

TEST(CaseError, KeepsTheEndOfALongMessage) {
  ErrorEvent e = error("run", "cuda_error");
  e.message = std::string(2000, 'x') + "END";
  const Failure f = verdict::case_error(e);
  EXPECT_EQ(f.status, Status::CudaError);
  EXPECT_EQ(f.detail.size(), std::string("RuntimeError: ").size() + 1500);
  EXPECT_EQ(f.detail.substr(f.detail.size() - 3), "END");
}

TEST(ProtocolFailure, ABrokenStreamIsACrash) {
  EXPECT_FALSE(verdict::protocol_failure(""));
  auto f = verdict::protocol_failure("event 3 (case): field 'triton_launches' missing");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, Status::Crash);
  EXPECT_EQ(f->detail,
            "protocol error in the worker's events: event 3 (case): field 'triton_launches' "
            "missing");
}

TEST(ProcessFailure, ACleanExitIsNoFailure) {
  EXPECT_EQ(verdict::process_failure(clean_exit()).status, Status::Passed);
}

TEST(ProcessFailure, EachWayOfEnding) {
  ProcessEnd p = clean_exit();
  p.end = ProcessEnd::End::TimedOut;
  p.description = "timeout after 30 s";
  EXPECT_EQ(verdict::process_failure(p).status, Status::Timeout);
  EXPECT_EQ(verdict::process_failure(p).detail, "timeout after 30 s; process group killed");

  p = clean_exit();
  p.end = ProcessEnd::End::SpawnFailed;
  EXPECT_EQ(verdict::process_failure(p).status, Status::HarnessError);

  p = clean_exit();
  p.end = ProcessEnd::End::Signaled;
  p.description = "signal 11 (SIGSEGV)";
  EXPECT_EQ(verdict::process_failure(p).status, Status::Crash);
  EXPECT_EQ(verdict::process_failure(p).detail, "killed by signal 11 (SIGSEGV)");

  p = clean_exit();
  p.said_done = false;  // os._exit(0) in the middle of the cases
  EXPECT_EQ(verdict::process_failure(p).status, Status::Crash);

  p = clean_exit();
  p.protocol_error = "malformed event line";
  EXPECT_EQ(verdict::process_failure(p).status, Status::Crash);
  EXPECT_EQ(verdict::process_failure(p).detail, "malformed event line");
}

TEST(ProcessFailure, ConfinementFailsOnKbxOnlyBeforeHello) {
  ProcessEnd p = clean_exit();
  p.exit_code = verdict::kExitConfineFailed;
  p.said_hello = false;
  p.said_done = false;
  EXPECT_EQ(verdict::process_failure(p).status, Status::HarnessError);
  p.said_hello = true;  // the candidate's code ran: its exit code is its own
  EXPECT_EQ(verdict::process_failure(p).status, Status::Crash);
}

TEST(ProcessFailure, AnExitBeforeTheSourceWasReadIsKbxsNotTheCandidates) {
  // session 31 on the H100: a warm parent that had started CUDA left its children unable to use
  // it; each worker died in its hello, before any candidate code ran
  ProcessEnd p = clean_exit();
  p.exit_code = 1;
  p.description = "exit 1";
  p.said_static = p.said_done = false;
  EXPECT_EQ(verdict::process_failure(p).status, Status::HarnessError);
  p.said_hello = false;
  EXPECT_EQ(verdict::process_failure(p).status, Status::HarnessError);
  p.said_static = true;  // it read the source: what follows is the candidate's
  EXPECT_EQ(verdict::process_failure(p).status, Status::Crash);
  p.said_static = false;
  p.end = ProcessEnd::End::Signaled;      // a signal stays a crash (the candidate cannot send one
  p.description = "signal 11 (SIGSEGV)";  // before its code runs, but kbx's kills are named)
  EXPECT_EQ(verdict::process_failure(p).status, Status::Crash);
}

TEST(ProcessFailure, MemoryLimitBeatsTheSignalItSent) {
  ProcessEnd p = clean_exit();
  p.end = ProcessEnd::End::Signaled;
  p.description = "signal 9 (SIGKILL)";
  p.memory_limit_hit = true;
  EXPECT_EQ(verdict::process_failure(p).status, Status::Oom);
  // the job's own limit, told apart from the GPU's memory (sched: not run again alone)
  EXPECT_TRUE(verdict::process_failure(p).detail.starts_with(verdict::kOwnMemoryLimit));
  p.end = ProcessEnd::End::TimedOut;  // but a timeout is a timeout
  EXPECT_EQ(verdict::process_failure(p).status, Status::Timeout);
}

TEST(ProcessFailure, AProtocolErrorBeatsTheSignalKbxSentForIt) {
  ProcessEnd p = clean_exit();
  p.end = ProcessEnd::End::Signaled;
  p.description = "signal 9 (SIGKILL)";
  p.protocol_error = "the worker wrote more than 200000 events";
  EXPECT_EQ(verdict::process_failure(p).status, Status::Crash);
  EXPECT_EQ(verdict::process_failure(p).detail, p.protocol_error);
}

TEST(JobWideFailure, NothingWrongIsPassed) {
  EXPECT_EQ(verdict::job_wide_failure({}).status, Status::Passed);
}

TEST(JobWideFailure, TamperedTimersComeFirst) {
  verdict::JobWide w;
  w.tampered = {"torch.cuda.synchronize", "torch.cuda.Event.elapsed_time"};
  w.job_error = error("import", "runtime_error");
  w.process = {Status::Crash, "killed by signal 11 (SIGSEGV)"};
  w.cases_missing = true;
  const Failure f = verdict::job_wide_failure(w);
  EXPECT_EQ(f.status, Status::TimerTampered);
  EXPECT_NE(f.detail.find("torch.cuda.Event.elapsed_time, torch.cuda.synchronize"),
            std::string::npos)
      << f.detail;
}

TEST(JobWideFailure, AJobErrorBeatsTheProcessEnd) {
  verdict::JobWide w;
  w.job_error = error("time", "oom");
  w.job_error->case_name = "perf";
  w.process = {Status::Crash, "killed by signal 6 (SIGABRT)"};
  const Failure f = verdict::job_wide_failure(w);
  EXPECT_EQ(f.status, Status::Oom);
  EXPECT_EQ(f.detail, "RuntimeError in case perf: boom");
}

TEST(JobWideFailure, TheProcessEndCarriesTheEndOfStderr) {
  verdict::JobWide w;
  w.process = {Status::Crash, "killed by signal 11 (SIGSEGV)"};
  w.stderr_kept = std::string(1000, 'e') + "Segmentation fault";
  w.cases_missing = true;
  const Failure f = verdict::job_wide_failure(w);
  EXPECT_EQ(f.status, Status::Crash);
  EXPECT_EQ(f.detail.rfind("killed by signal 11 (SIGSEGV); stderr: ", 0), 0u);
  EXPECT_EQ(f.detail.size(), std::string("killed by signal 11 (SIGSEGV); stderr: ").size() + 800);
  w.stderr_kept.clear();
  EXPECT_EQ(verdict::job_wide_failure(w).detail, "killed by signal 11 (SIGSEGV)");
}

TEST(JobWideFailure, MissingCasesTakeTheLastErrorElseTheHarness) {
  verdict::JobWide w;
  w.cases_missing = true;
  EXPECT_EQ(verdict::job_wide_failure(w).status, Status::HarnessError);
  w.last_error = error("run", "cuda_error");
  const Failure f = verdict::job_wide_failure(w);
  EXPECT_EQ(f.status, Status::CudaError);
  EXPECT_EQ(f.detail, "worker finished without running every case");
}

TEST(JobStatus, TrackRejectThenFirstCaseThenJobWide) {
  const Failure reject{Status::StaticReject, "no kernel"};
  const Failure wrong{Status::NumericalMismatch, "case small: off"};
  const Failure crash{Status::Crash, "killed"};
  const Failure none;
  EXPECT_EQ(verdict::job_status(reject, wrong, crash).status, Status::StaticReject);
  // a case that failed before the process crashed names the job
  EXPECT_EQ(verdict::job_status(std::nullopt, wrong, crash).status, Status::NumericalMismatch);
  EXPECT_EQ(verdict::job_status(std::nullopt, wrong, crash).detail, "case small: off");
  EXPECT_EQ(verdict::job_status(std::nullopt, none, crash).status, Status::Crash);
  EXPECT_EQ(verdict::job_status(std::nullopt, none, none).status, Status::Passed);
}

}  // namespace
}  // namespace kbx
