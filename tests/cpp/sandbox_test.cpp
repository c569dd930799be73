#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "sandbox/process.h"
#include "sandbox/warm.h"
#include "timing/stats.h"

namespace kbx {
namespace {

sandbox::Spawn shell(const std::string& script, double timeout = 20) {
  sandbox::Spawn s;
  s.argv = {"/bin/sh", "-c", script};
  s.env = sandbox::scrubbed_environment({});
  s.limits.wall_seconds = timeout;
  return s;
}

TEST(Sandbox, ProbePipeIsFd5AndKeptBySupervisor) {
  auto s = shell("printf 'KBXPROBE' >&5; printf 'rest' >&5; echo '{\"ev\":\"x\"}' >&4");
  s.probe_pipe = true;
  auto o = sandbox::run(s);
  EXPECT_EQ(o.probe_bytes, "KBXPROBErest");
  EXPECT_FALSE(o.probe_truncated);
  ASSERT_EQ(o.events.size(), 1u);
}

TEST(Sandbox, NoFd5WithoutProbePipe) {
  auto o = sandbox::run(shell("printf x >&5 2>/dev/null && echo open || echo closed"));
  EXPECT_NE(o.stdout_kept.find("closed"), std::string::npos) << o.stdout_kept;
  EXPECT_TRUE(o.probe_bytes.empty());
}

TEST(Sandbox, EventsArriveOnFd4AndRequestOnFd3) {
  auto s = shell(
      "read line <&3; echo \"{\\\"ev\\\": \\\"echo\\\", \\\"got\\\": \\\"$line\\\"}\" >&4; echo "
      "printed");
  s.request = "hello\n";
  auto o = sandbox::run(s);
  EXPECT_EQ(o.end, sandbox::Outcome::End::Exited);
  ASSERT_EQ(o.events.size(), 1u);
  EXPECT_EQ(o.events[0]["got"], "hello");
  EXPECT_EQ(o.stdout_kept, "printed\n");
}

TEST(Sandbox, AWorkerAsksForMoreWorkUntilTheSupervisorHasNone) {
  // Echoes each line it is given as an event, asking for more after each, until "end".
  auto s = shell(
      "read line <&3; while [ \"$line\" != end ]; do "
      "echo \"{\\\"ev\\\": \\\"work\\\", \\\"line\\\": \\\"$line\\\"}\" >&4; "
      "echo '{\"ev\": \"more_wanted\"}' >&4; read line <&3; done; echo '{\"ev\": \"done\"}' >&4",
      2);
  s.request = "first";
  std::vector<std::string> more = {"third", "second"};
  s.more_work = [&]() -> sandbox::MoreWork {
    if (more.empty()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // not the worker's time
    const std::string line = more.back();
    more.pop_back();
    return {line, 1.0};
  };
  auto o = sandbox::run(s);
  EXPECT_EQ(o.end, sandbox::Outcome::End::Exited) << o.stderr_kept;
  std::vector<std::string> lines;
  for (const auto& ev : o.events) {
    if (ev["ev"] == "work") lines.push_back(ev["line"]);
  }
  EXPECT_EQ(lines, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_EQ(o.events.back()["ev"], "done");
}

// A worker that closes its request pipe unread: the supervisor's next write fails with EPIPE. With
// SIGPIPE at its default (as in this test binary, or any program that uses the library without
// kbx's CLI), that write must not kill the supervisor. In a child of its own (a death test): the
// bug, when present, kills that child, not the tests.
TEST(Sandbox, AWorkerThatNeverReadsItsRequestCannotKillTheSupervisorWithSigpipe) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::signal(SIGPIPE, SIG_DFL);
        auto s = shell("exec 3<&-; sleep 0.2; exit 7");
        s.request.assign(size_t{4} << 20,
                         'x');  // far over a pipe's buffer: written after the close
        const auto o = sandbox::run(s);
        std::_Exit(o.end == sandbox::Outcome::End::Exited && o.exit_code == 7 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

/// Whether a process exists and is not a zombie, a tenth of a second from now (a SIGKILL just
/// sent takes effect when the process next runs).
bool alive(pid_t pid) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// A confined worker's namespace init dies and its waiter reaps it; its pid then goes to another
// process (here on purpose, through ns_last_pid; by chance after the pids wrap around). Killing
// the worker at its end must not kill that process: the supervisor holds the init by a pidfd,
// not by its number. The worker stands in for confine.py's waiter: it reports a child's pid on
// fd 9, kills and reaps that child, then starts another process, in a session of its own (out of
// the worker's process group), on the same pid.
TEST(Sandbox, AReusedInitPidIsNotKilledWithTheWorker) {
  if (::geteuid() != 0) GTEST_SKIP() << "writing ns_last_pid needs root";
  if (::access("/proc/sys/kernel/ns_last_pid", W_OK) != 0) GTEST_SKIP() << "no ns_last_pid";
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto s = shell(
        "read req <&3; sleep 60 & init=$!; echo $init >&9; exec 9>&-; sleep 0.5; "
        "kill -9 $init; wait $init; echo $((init - 1)) > /proc/sys/kernel/ns_last_pid; "
        "setsid sleep 60 & other=$!; "
        // its own session once setsid has run (field 6 of its stat), before the group is killed
        "until [ \"$(cut -d' ' -f6 /proc/$other/stat)\" = $other ]; do sleep 0.01; done; "
        "echo \"{\\\"ev\\\":\\\"pids\\\",\\\"init\\\":$init,\\\"other\\\":$other}\" >&4");
    s.request = "{}\n";
    s.confine = nlohmann::json::object();  // fd 9 for the init's pid; the shell confines nothing
    const auto o = sandbox::run(s);
    ASSERT_EQ(o.events.size(), 1u) << o.stderr_kept;
    const pid_t init = o.events[0]["init"].get<pid_t>();
    const pid_t other = o.events[0]["other"].get<pid_t>();
    EXPECT_EQ(o.init_pid, init);
    const bool survived = alive(other);
    kill(other, SIGKILL);
    if (other != init) continue;  // another process took the pid first: again
    EXPECT_TRUE(survived) << "the process that got the dead init's pid " << init
                          << " was killed: " << o.stderr_kept;
    return;
  }
  GTEST_SKIP() << "the init's pid never went to the planted process";
}

// The same for the worker's process group: once the worker is reaped its pid, the id of its
// group, may go to another process that leads a group of its own; the supervisor's last kill
// must not reach that group. A helper out of the worker's session keeps its pipes open after it
// ends (the supervisor goes on reading), waits until the worker is reaped, plants a group
// leader on its pid and reports it.
TEST(Sandbox, AReusedWorkerPidIsNotKilledAsItsGroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "writing ns_last_pid needs root";
  if (::access("/proc/sys/kernel/ns_last_pid", W_OK) != 0) GTEST_SKIP() << "no ns_last_pid";
  const std::string helper =
      "w=$1; while [ -e /proc/$w ]; do sleep 0.01; done; "
      "echo $((w - 1)) > /proc/sys/kernel/ns_last_pid; setsid sleep 60 & o=$!; "
      "until [ \"$(cut -d\" \" -f6 /proc/$o/stat)\" = $o ]; do sleep 0.01; done; "
      "echo \"{\\\"ev\\\":\\\"planted\\\",\\\"pid\\\":$o,\\\"worker\\\":$w}\" >&4; sleep 0.3";
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto s = shell("read req <&3; setsid sh -c '" + helper + "' sh $$ & exit 0");
    s.request = "{}\n";
    const auto o = sandbox::run(s);
    ASSERT_EQ(o.events.size(), 1u) << o.stderr_kept;
    const pid_t planted = o.events[0]["pid"].get<pid_t>();
    const pid_t worker = o.events[0]["worker"].get<pid_t>();
    const bool survived = alive(planted);
    kill(planted, SIGKILL);
    if (planted != worker) continue;  // another process took the pid first: again
    EXPECT_TRUE(survived) << "the group led from the reaped worker's pid " << worker
                          << " was killed";
    return;
  }
  GTEST_SKIP() << "the worker's pid never went to the planted process";
}

// A worker that closes every pipe kbx reads, then hangs: nothing is left to read, and its time
// limit must still end it.
TEST(Sandbox, AHangWithEveryPipeClosedIsStillKilledAtItsLimit) {
  auto o = sandbox::run(shell("exec 1>&- 2>&- 4>&- 3<&-; sleep 100", 1.0));
  EXPECT_EQ(o.end, sandbox::Outcome::End::TimedOut);
  EXPECT_LT(o.wall_seconds, 10.0);
}

// Events without end (a candidate writes them on its own event pipe): what the supervisor keeps
// of them is bounded, and the worker is ended with a protocol error, long before its time limit.
TEST(Sandbox, EventsWithoutEndAreAProtocolErrorNotTheSupervisorsMemory) {
  auto many = shell("yes '{\"ev\":\"x\"}' >&4", 30);
  many.limits.max_events = 1000;
  auto o = sandbox::run(many);
  EXPECT_NE(o.protocol_error.find("more than 1000 events"), std::string::npos) << o.protocol_error;
  EXPECT_EQ(o.events.size(), 1000u);
  EXPECT_LT(o.wall_seconds, 10.0);

  auto long_line = shell("yes x | tr -d '\\n' >&4", 30);  // one line, never ended
  long_line.limits.max_event_bytes = 1 << 20;
  o = sandbox::run(long_line);
  EXPECT_NE(o.protocol_error.find("more than 1 MiB of events"), std::string::npos)
      << o.protocol_error;
  EXPECT_TRUE(o.events.empty());
  EXPECT_LT(o.wall_seconds, 10.0);
}

// One event nested a million levels deep: parsed and freed without recursion by nlohmann::json,
// but copied by recursion (the supervisor's stack overflowed). It is refused as too deep, and the
// worker ended there: nothing it wrote after is read (session 18: on the GPU, an error event the
// attacker sent after it decided the status instead of the broken protocol).
TEST(Sandbox, AnEventNestedTooDeepIsAProtocolErrorNotAStackOverflow) {
  const std::string deep =
      "python3 -c \"import sys; d = 1000000; sys.stdout.write("
      "'{\\\"ev\\\":\\\"case\\\",\\\"x\\\":' + '[' * d + ']' * d + "
      "'}' + chr(10))\" >&4; echo '{\"ev\":\"done\"}' >&4; sleep 100";
  auto s = shell(deep, 60);
  s.env = sandbox::scrubbed_environment({{"PATH", "/usr/local/bin:/usr/bin:/bin"}});
  const auto o = sandbox::run(s);
  EXPECT_NE(o.protocol_error.find("nested deeper than 256 levels"), std::string::npos)
      << o.protocol_error.substr(o.protocol_error.size() > 300 ? o.protocol_error.size() - 300 : 0);
  EXPECT_TRUE(o.events.empty()) << o.events.size();
  EXPECT_NE(o.end, sandbox::Outcome::End::TimedOut);
  EXPECT_LT(o.wall_seconds, 30.0);
}

TEST(Sandbox, HangIsKilledWithItsChildren) {
  auto o = sandbox::run(shell("sleep 100 & sleep 100", 1.0));
  EXPECT_EQ(o.end, sandbox::Outcome::End::TimedOut);
  EXPECT_LT(o.wall_seconds, 10.0);
}

TEST(Sandbox, SignalIsReported) {
  auto o = sandbox::run(shell("kill -SEGV $$"));
  EXPECT_EQ(o.end, sandbox::Outcome::End::Signaled);
  EXPECT_EQ(o.signal, SIGSEGV);
  EXPECT_NE(o.describe().find("signal 11"), std::string::npos);
}

TEST(Sandbox, MegabytesOfOutputAreCountedNotKept) {
  auto o = sandbox::run(shell("head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END"));
  EXPECT_EQ(o.end, sandbox::Outcome::End::Exited);
  EXPECT_GE(o.stdout_bytes, 5000000u);
  EXPECT_LT(o.stdout_kept.size(), 40000u);
  EXPECT_NE(o.stdout_kept.find("END"), std::string::npos);  // the tail is kept
}

TEST(Sandbox, EnvironmentIsScrubbed) {
  setenv("OPENAI_API_KEY", "secret", 1);
  auto o = sandbox::run(shell("env"));
  EXPECT_EQ(o.stdout_kept.find("OPENAI_API_KEY"), std::string::npos);
  EXPECT_NE(o.stdout_kept.find("PATH="), std::string::npos);
  unsetenv("OPENAI_API_KEY");
}

TEST(Sandbox, NetworkNamespaceWhenAvailable) {
  const auto& ab = sandbox::abilities();
  if (!ab.network_namespace) GTEST_SKIP() << ab.network_namespace_note;
  // A fresh namespace has only a loopback device, and it is down.
  auto o = sandbox::run(shell("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"));
  EXPECT_TRUE(o.network_isolated);
  EXPECT_EQ(o.stdout_kept, "lo\n");
}

TEST(Sandbox, MalformedEventIsAProtocolErrorAndEndsTheWorker) {
  auto o =
      sandbox::run(shell("echo '{\"ev\":\"hello\"}' >&4; echo 'not json' >&4; "
                         "echo '{\"ev\":\"error\",\"phase\":\"import\"}' >&4; sleep 100",
                         60));
  EXPECT_NE(o.protocol_error.find("malformed event: not json"), std::string::npos)
      << o.protocol_error;
  ASSERT_EQ(o.events.size(), 1u);  // the one before it; none after
  EXPECT_EQ(o.events[0]["ev"], "hello");
  EXPECT_NE(o.end, sandbox::Outcome::End::TimedOut);
  EXPECT_LT(o.wall_seconds, 30.0);
}

TEST(Stats, MedianGeomeanSpeedup) {
  EXPECT_EQ(timing::median({3, 1, 2}).value(), 2.0);
  EXPECT_EQ(timing::median({4, 1, 3, 2}).value(), 2.5);
  EXPECT_FALSE(timing::median({}).has_value());
  EXPECT_NEAR(timing::geomean({2.0, 8.0}).value(), 4.0, 1e-12);
  EXPECT_FALSE(timing::geomean({1.0, 0.0}).has_value());
  EXPECT_NEAR(timing::case_speedup({4, 4, 4}, {1, 2, 2}).value(), 2.0, 1e-12);
}

TEST(Timing, SpeedupComparesOneClockOnBothSides) {
  const std::vector<double> eager_probe{4}, eager_events{5}, cand_probe{2}, cand_events{1};
  EXPECT_EQ(timing::same_clock_speedup(eager_probe, eager_events, cand_probe, cand_events), 2.0);
  // eager without the probe: events on both sides, never probe against events
  EXPECT_EQ(timing::same_clock_speedup({}, eager_events, cand_probe, cand_events), 5.0);
  EXPECT_EQ(timing::same_clock_speedup(eager_probe, eager_events, {}, cand_events), 5.0);
  EXPECT_FALSE(timing::same_clock_speedup({}, {}, cand_probe, {}).has_value());
}

TEST(Timing, MedianIntervalFromOrderStatistics) {
  std::vector<double> s;
  for (int i = 100; i >= 1; --i) s.push_back(i);  // unsorted on purpose
  auto ci = timing::median_interval(s);
  ASSERT_TRUE(ci.has_value());
  EXPECT_EQ(ci->lo, 40.0);  // ranks 40 and 61 of 100 at 95%
  EXPECT_EQ(ci->hi, 61.0);
  EXPECT_FALSE(timing::median_interval({1, 2, 3, 4, 5}).has_value());
  EXPECT_NEAR(timing::relative_half_width(s).value(), 10.5 / 50.5, 1e-12);
  std::vector<double> tight(50, 10.0);
  tight[0] = 1000;  // one outlier does not move the interval of the median
  EXPECT_EQ(timing::relative_half_width(tight).value(), 0.0);
}

}  // namespace
}  // namespace kbx

namespace kbx {
namespace {

// A stand-in for kbx_worker.zygote: imports for `import_s` seconds (torch's import on a loaded
// machine), says "ready", then forks each job's child (which runs `sh -c` of the job's argv's
// last element with the sent descriptors as 3 and 4) and reports its start and exit.
const char* kSlowParent = R"(
import json, os, socket, sys, time
sock = socket.socket(fileno=3)
time.sleep(float(sys.argv[1]))
sock.send(json.dumps({"ev": "ready"}).encode())
while True:
    data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 6)
    if not data:
        break
    job = json.loads(data)
    pid = os.fork()
    if pid == 0:
        os.dup2(fds[0], 3); os.dup2(fds[1], 4)
        os.execv("/bin/sh", ["/bin/sh", "-c", job["argv"][-1]])
    for fd in fds:
        os.close(fd)
    sock.send(json.dumps({"ev": "started", "id": job["id"], "pid": pid}).encode())
    _, status = os.waitpid(pid, 0)
    sock.send(json.dumps({"ev": "exit", "pid": pid, "status": status}).encode())
)";

std::unique_ptr<sandbox::WarmParent> slow_parent(double import_s, sandbox::WarmWaits waits) {
  return std::make_unique<sandbox::WarmParent>(
      std::vector<std::string>{"/usr/bin/env", "python3", "-c", kSlowParent,
                               std::to_string(import_s)},
      sandbox::scrubbed_environment({}), std::filesystem::current_path(), waits);
}

// The wait for a fork starts at the parent's "ready": before, a parent whose imports outlasted
// it (60 s; over a minute for torch on CI's two loaded CPUs) failed every job of the run as
// "could not start the worker" (reference_error for every candidate). Nor do the imports count
// against the job's time limit.
TEST(WarmParent, AParentSlowerToImportThanTheForkWaitStillStartsItsJobs) {
  using namespace std::chrono_literals;
  auto parent = slow_parent(2.0, {.ready = 30s, .fork = 500ms});
  ASSERT_TRUE(parent->ok());
  // a limit shorter than the parent's imports: the job's clock starts at its fork
  auto s = shell("echo '{\"ev\":\"x\"}' >&4", /*timeout=*/1.0);
  auto o = sandbox::run(s, {}, *parent);
  EXPECT_EQ(o.end, sandbox::Outcome::End::Exited) << o.describe();
  EXPECT_EQ(o.events.size(), 1u);
}

// A parent that never gets ready fails the launch at the ready wait, not never.
TEST(WarmParent, AParentThatNeverGetsReadyFailsTheLaunch) {
  using namespace std::chrono_literals;
  auto parent = slow_parent(3600.0, {.ready = 500ms, .fork = 500ms});
  const auto t0 = std::chrono::steady_clock::now();
  auto o = sandbox::run(shell("true"), {}, *parent);
  EXPECT_EQ(o.end, sandbox::Outcome::End::SpawnFailed);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
}

}  // namespace
}  // namespace kbx
