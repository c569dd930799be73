// The GPU's timing slot (issue 14): one holder at a time across threads and processes, handed to
// a worker only when it asks and held until it has ended, its wait not counted as its time.
#include "sched/gpu_slot.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "sandbox/process.h"
#include "sched/eval.h"
#include "sched/evaluate.h"
#include "sched/worker.h"
#include "verdict/job_status.h"

namespace kbx {
namespace {
namespace fs = std::filesystem;

/// Sets `variable` to each of `bad` in turn and expects `read` to refuse it with an error that
/// names the variable; unsets it after.
template <typename Read>
void expect_refused(const char* variable, std::initializer_list<const char*> bad, Read read) {
  for (const char* value : bad) {
    ::setenv(variable, value, 1);
    try {
      const auto taken = read();
      ADD_FAILURE() << variable << "=" << value << " was taken as " << taken;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(variable), std::string::npos);
    }
  }
  ::unsetenv(variable);
}

class GpuSlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kbx-slot-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    ::setenv("KBX_SLOT_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("KBX_SLOT_DIR");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

sandbox::Spawn slot_worker(sandbox::ExclusiveSlot* slot, double timeout = 20) {
  // Reads its request line, asks for the slot, waits for "go", then works 0.3 s with it.
  sandbox::Spawn s;
  s.argv = {
      "/bin/sh", "-c",
      "read req <&3; echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; "
      "echo \"{\\\"ev\\\":\\\"work\\\",\\\"go\\\":\\\"$go\\\",\\\"start\\\":$(date +%s.%N)}\" >&4; "
      "sleep 0.3; echo \"{\\\"ev\\\":\\\"done\\\",\\\"end\\\":$(date +%s.%N)}\" >&4"};
  s.env = sandbox::scrubbed_environment({});
  s.limits.wall_seconds = timeout;
  s.request = "{}";
  s.slot = slot;
  return s;
}

sandbox::Spawn handback_worker(sandbox::ExclusiveSlot* slot, bool handback) {
  // Asks for the slot, hands it back with "slot_done", then works 1.5 s without it (a trusted
  // reference worker between two tasks' full-size cases).
  sandbox::Spawn s;
  s.argv = {"/bin/sh", "-c",
            "read req <&3; echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; "
            "echo '{\"ev\":\"slot_done\"}' >&4; sleep 1.5; echo '{\"ev\":\"done\"}' >&4"};
  s.env = sandbox::scrubbed_environment({});
  s.limits.wall_seconds = 20;
  s.request = "{}";
  s.slot = slot;
  s.slot_handback = handback;
  return s;
}

/// Whether `other` gets the slot while the handback worker still runs.
bool slot_free_while_it_runs(bool handback) {
  sched::GpuSlot mine("0"), other("0");
  sandbox::Outcome o;
  std::thread worker([&] { o = sandbox::run(handback_worker(&mine, handback)); });
  bool got = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it has asked and been served
  while (!got && std::chrono::steady_clock::now() < until) {
    got = other.try_acquire();
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (got) other.release();
  worker.join();
  EXPECT_EQ(o.events.size(), 3u) << o.stderr_kept;
  return got;
}

TEST_F(GpuSlotTest, TraceHasEveryAcquireAndReleaseWithItsHolder) {
  const fs::path trace = dir_ / "trace.txt";
  fs::create_directories(dir_);
  ::setenv("KBX_SLOT_TRACE", trace.c_str(), 1);
  {
    sched::GpuSlot a("0", "candidate Cat/a"), b("0", "references Cat/b");
    ASSERT_TRUE(a.try_acquire());
    EXPECT_FALSE(b.try_acquire());  // a refused attempt is not traced
    a.release();
    b.acquire();
    b.release();
  }
  ::unsetenv("KBX_SLOT_TRACE");
  std::ifstream in(trace);
  std::vector<std::string> words;
  double last = 0;
  for (std::string t, what, file, kind, task; in >> t >> what >> file >> kind >> task;) {
    EXPECT_GE(std::stod(t), last);
    last = std::stod(t);
    EXPECT_EQ(file, "gpu-0.lock");
    words.push_back(what + " " + kind + " " + task);
  }
  EXPECT_EQ(words,
            (std::vector<std::string>{"acquire candidate Cat/a", "release candidate Cat/a",
                                      "acquire references Cat/b", "release references Cat/b"}));
}

TEST_F(GpuSlotTest, PipelineStepsGoToTheSameTrace) {
  const fs::path trace = dir_ / "trace.txt";
  fs::create_directories(dir_);
  sched::trace_pipeline("fed", "Cat/a");  // no trace asked for: nothing written anywhere
  ::setenv("KBX_SLOT_TRACE", trace.c_str(), 1);
  sched::trace_pipeline("fed", "Cat/a");
  {
    sched::GpuSlot a("0", "candidate Cat/a");
    ASSERT_TRUE(a.try_acquire());
  }
  sched::trace_pipeline("job_end", "Cat/a");
  ::unsetenv("KBX_SLOT_TRACE");
  std::ifstream in(trace);
  std::vector<std::string> lines;  // without their times
  for (std::string line; std::getline(in, line);) lines.push_back(line.substr(line.find(' ') + 1));
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "fed pipeline Cat/a", "acquire gpu-0.lock candidate Cat/a",
                       "release gpu-0.lock candidate Cat/a", "job_end pipeline Cat/a"}));
}

TEST_F(GpuSlotTest, ATrustedWorkerHandsTheSlotBack) {
  EXPECT_TRUE(slot_free_while_it_runs(true));
}

TEST_F(GpuSlotTest, ACandidatesSlotDoneIsIgnored) {
  // Without slot_handback (every candidate) the slot stays held until the worker has ended.
  EXPECT_FALSE(slot_free_while_it_runs(false));
}

TEST_F(GpuSlotTest, ACandidateHandsItBackOnceAndNeverGetsItAgain) {
  // A candidate (slot_handback_once): its slot_done after its timed loops frees the slot for the
  // next job while it writes its files; asking again gets no "go", and a timing after the
  // hand-back is not trusted; asking again ends the worker at once (it would wait until its
  // time limit for a "go" that never comes).
  sched::GpuSlot mine("0"), other("0");
  sandbox::Spawn s = handback_worker(&mine, false);
  s.slot_handback_once = true;
  std::atomic<int> handed_back{0};
  std::atomic<double> handed_back_at{-1};
  const auto t0 = std::chrono::steady_clock::now();
  s.on_slot_handed_back = [&] {  // its lane may start the next job (sched::LaneGate)
    ++handed_back;
    handed_back_at = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  s.argv = {"/bin/bash", "-c",
            "read req <&3; echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; "
            "echo '{\"ev\":\"timing\"}' >&4; echo '{\"ev\":\"slot_done\"}' >&4; sleep 0.6; "
            "echo '{\"ev\":\"timing\"}' >&4; echo '{\"ev\":\"slot_wanted\"}' >&4; "
            "read -t 8 go2 <&3; echo '{\"ev\":\"after_wait\"}' >&4; "
            "echo '{\"ev\":\"done\"}' >&4"};
  sandbox::Outcome o;
  std::thread worker([&] { o = sandbox::run(s); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const bool free_while_it_runs = other.try_acquire();
  if (free_while_it_runs) other.release();
  worker.join();
  EXPECT_TRUE(free_while_it_runs);
  EXPECT_EQ(handed_back, 1) << "once, at its slot_done, not again at its end";
  EXPECT_GE(handed_back_at, 0.0);
  EXPECT_LT(handed_back_at, 0.55) << "at the hand-back, before the worker's 0.6 s sleep ended";
  ASSERT_EQ(o.events.size(), 5u) << o.stderr_kept;  // ended at its second slot_wanted
  EXPECT_EQ(o.events[4]["ev"], "slot_wanted");
  EXPECT_LT(o.wall_seconds, 4.0) << "not left waiting for a grant that never comes";
  EXPECT_TRUE(o.slot_asked_after_close);
  auto asked = verdict::asked_after_handback(o.slot_asked_after_close);
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->status, verdict::Status::TimerTampered);
  EXPECT_FALSE(verdict::asked_after_handback(false));
  EXPECT_EQ(o.slot_released_after, 3);  // after its slot_done, the third event
  EXPECT_FALSE(
      verdict::timed_without_slot(sched::first_event_index(o, "timing"), o.slot_granted_after));
  auto fail =
      verdict::timed_after_handback(sched::last_event_index(o, "timing"), o.slot_released_after);
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->status, verdict::Status::TimerTampered);
  EXPECT_FALSE(mine.held());
}

TEST_F(GpuSlotTest, ACandidatesInterimHandBackFreesTheSlotAndItMayAskAgain) {
  // --slot-at launch between full-size calls: "slot_done" with "again" frees the slot (another
  // job takes it meanwhile) without closing it; the candidate asks again and gets "go"; a timing
  // between the two is not trusted, one after the new grant is; the final slot_done closes.
  sched::GpuSlot mine("0"), other("0");
  sandbox::Spawn s = handback_worker(&mine, false);
  s.slot_handback_once = true;
  int handed_back = 0;
  s.on_slot_handed_back = [&] { ++handed_back; };
  s.argv = {"/bin/bash", "-c",
            "read req <&3; echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; "
            "echo '{\"ev\":\"slot_done\",\"again\":true}' >&4; sleep 0.6; "
            "echo '{\"ev\":\"timing\"}' >&4; "
            "echo '{\"ev\":\"slot_wanted\"}' >&4; "
            "if read -t 3 go2 <&3; then echo '{\"ev\":\"granted\"}' >&4; "
            "else echo '{\"ev\":\"refused\"}' >&4; fi; "
            "echo '{\"ev\":\"timing\"}' >&4; echo '{\"ev\":\"slot_done\"}' >&4; "
            "echo '{\"ev\":\"done\"}' >&4"};
  sandbox::Outcome o;
  std::thread worker([&] { o = sandbox::run(s); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const bool free_between = other.try_acquire();
  if (free_between) other.release();
  worker.join();
  EXPECT_TRUE(free_between) << "the interim hand-back frees the slot";
  ASSERT_EQ(o.events.size(), 8u) << o.stderr_kept;
  EXPECT_EQ(o.events[4]["ev"], "granted");
  EXPECT_EQ(handed_back, 1) << "only the final slot_done hands it back for good";
  ASSERT_EQ(o.slot_gaps.size(), 1u);
  EXPECT_EQ(o.slot_gaps[0].first, 2);   // after the interim slot_done
  EXPECT_EQ(o.slot_gaps[0].second, 4);  // granted again after its second slot_wanted
  EXPECT_EQ(o.slot_released_after, 7);
  auto between = verdict::timed_between_grants(sched::event_indices(o, "timing"), o.slot_gaps);
  ASSERT_TRUE(between) << "the timing at event 2 came while the slot was handed back";
  EXPECT_EQ(between->status, verdict::Status::TimerTampered);
  EXPECT_FALSE(verdict::timed_between_grants({5}, o.slot_gaps));
  EXPECT_FALSE(mine.held());
}

TEST(TimedBetweenGrants, OnlyTimingsInsideAGrantAreTrusted) {
  EXPECT_FALSE(verdict::timed_between_grants({}, {{2, 4}}));
  EXPECT_FALSE(verdict::timed_between_grants({1, 4, 9}, {{2, 4}}));
  EXPECT_TRUE(verdict::timed_between_grants({2}, {{2, 4}}));
  EXPECT_TRUE(verdict::timed_between_grants({3}, {{2, 4}}));
  EXPECT_TRUE(verdict::timed_between_grants({9}, {{2, 4}, {6, -1}}));  // never granted again
  EXPECT_FALSE(verdict::timed_between_grants({9}, {}));
}

TEST_F(GpuSlotTest, AnAgainFromATrustedWorkerOrANonBooleanIsAPlainHandBack) {
  // "again" counts only from a candidate (slot_handback_once), and only as a JSON true.
  sched::GpuSlot mine("0");
  sandbox::Spawn s = handback_worker(&mine, false);
  s.slot_handback_once = true;
  s.argv = {"/bin/bash", "-c",
            "read req <&3; echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; "
            "echo '{\"ev\":\"slot_done\",\"again\":\"yes\"}' >&4; "
            "echo '{\"ev\":\"slot_wanted\"}' >&4; "
            "if read -t 1 go2 <&3; then echo '{\"ev\":\"granted\"}' >&4; "
            "else echo '{\"ev\":\"refused\"}' >&4; fi; echo '{\"ev\":\"done\"}' >&4"};
  sandbox::Outcome o = sandbox::run(s);
  ASSERT_EQ(o.events.size(), 3u) << o.stderr_kept;  // a final hand-back: asking again ends it
  EXPECT_TRUE(o.slot_asked_after_close);
  EXPECT_EQ(o.slot_released_after, 2);
  EXPECT_TRUE(o.slot_gaps.empty());
  sandbox::Spawn trusted = handback_worker(&mine, true);
  trusted.argv = {"/bin/bash", "-c",
                  "read req <&3; echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; "
                  "echo '{\"ev\":\"slot_done\",\"again\":true}' >&4; "
                  "echo '{\"ev\":\"done\"}' >&4"};
  sandbox::Outcome t = sandbox::run(trusted);
  EXPECT_TRUE(t.slot_gaps.empty());
  EXPECT_EQ(t.slot_released_after, -1);
}

TEST(TimedAfterHandback, OnlyTimingsBeforeTheHandBackAreTrusted) {
  EXPECT_FALSE(verdict::timed_after_handback(-1, 3));  // nothing timed
  EXPECT_FALSE(verdict::timed_after_handback(2, 3));   // timed, then handed back
  EXPECT_FALSE(verdict::timed_after_handback(5, -1));  // never handed back
  EXPECT_TRUE(verdict::timed_after_handback(3, 3));
  EXPECT_TRUE(verdict::timed_after_handback(6, 3));
}

TEST_F(GpuSlotTest, OneHolderAtATime) {
  sched::GpuSlot a("0"), b("0"), other_gpu("1");
  EXPECT_TRUE(a.try_acquire());
  EXPECT_FALSE(b.try_acquire());
  EXPECT_TRUE(other_gpu.try_acquire());
  a.release();
  EXPECT_TRUE(b.try_acquire());
  EXPECT_EQ(a.lock_path().parent_path(), dir_);
}

/// A slot holder that says "done" and then takes 2 s more to end (a CUDA context's teardown).
sandbox::Outcome done_then_slow_exit(sched::GpuSlot& slot, bool end_at_done, double* seconds) {
  sandbox::Spawn s = slot_worker(&slot);
  s.argv = {"/bin/sh", "-c",
            "read req <&3; echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; "
            "echo '{\"ev\":\"done\"}' >&4; sleep 2; echo '{\"ev\":\"late\"}' >&4"};
  s.end_at_done = end_at_done;
  const auto t0 = std::chrono::steady_clock::now();
  sandbox::Outcome o = sandbox::run(s);
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

TEST_F(GpuSlotTest, AJobThatEndsAtDoneIsKilledThenAndCountsAsExitZero) {
  sched::GpuSlot slot("0");
  double seconds = 0;
  const sandbox::Outcome o = done_then_slow_exit(slot, true, &seconds);
  EXPECT_LT(seconds, 1.5);
  EXPECT_EQ(o.end, sandbox::Outcome::End::Exited) << o.describe();
  EXPECT_EQ(o.exit_code, 0);
  ASSERT_EQ(o.events.size(), 2u);  // nothing after its done
  EXPECT_EQ(o.events.back()["ev"], "done");
  EXPECT_FALSE(slot.held());
  // Without it, the job holds the slot until its process is gone.
  const sandbox::Outcome slow = done_then_slow_exit(slot, false, &seconds);
  EXPECT_GE(seconds, 2.0);
  EXPECT_EQ(slow.events.size(), 3u);
}

TEST_F(GpuSlotTest, TheHolderRunsAtAHigherPriorityWhereKbxMaySetIt) {
  sched::GpuSlot slot("0");
  sandbox::Spawn s = slot_worker(&slot);
  s.argv = {"/bin/sh", "-c",
            "read req <&3; echo \"{\\\"ev\\\":\\\"before\\\",\\\"nice\\\":$(nice)}\" >&4; "
            "echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; "
            "echo \"{\\\"ev\\\":\\\"holding\\\",\\\"nice\\\":$(nice)}\" >&4"};
  const sandbox::Outcome o = sandbox::run(s);
  ASSERT_EQ(o.events.size(), 3u) << o.stderr_kept;
  // Raising a priority needs CAP_SYS_NICE: root (CI, the GPU machines) has it.
  EXPECT_EQ(o.events[2]["nice"], ::geteuid() == 0 ? -10 : o.events[0]["nice"].get<int>());
}

/// The CPUs a process may run on, as /proc/<pid>/status's Cpus_allowed_list says.
std::string allowed_cpus_script() {
  return "$(grep Cpus_allowed_list /proc/$$/status | tr -d ' \\t' | cut -d: -f2)";
}

/// The highest CPU of a set; -1 when it is empty.
int highest_cpu(const cpu_set_t& set) {
  for (int c = CPU_SETSIZE - 1; c >= 0; --c) {
    if (CPU_ISSET(c, &set)) return c;
  }
  return -1;
}

/// A worker pinned to `cpu` while it holds the slot that reports its CPUs (a cpulist) before,
/// while and after holding it: events before, slot_wanted, holding, slot_done, after.
sandbox::Spawn cpus_reporting_worker(sched::GpuSlot* slot, int cpu) {
  sandbox::Spawn s = handback_worker(slot, true);
  const std::string cpus = allowed_cpus_script();
  s.argv = {"/bin/sh", "-c",
            "read req <&3; echo \"{\\\"ev\\\":\\\"before\\\",\\\"cpus\\\":\\\"" + cpus +
                "\\\"}\" >&4; echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; "
                "echo \"{\\\"ev\\\":\\\"holding\\\",\\\"cpus\\\":\\\"" +
                cpus +
                "\\\"}\" >&4; echo '{\"ev\":\"slot_done\"}' >&4; sleep 0.3; "
                "echo \"{\\\"ev\\\":\\\"after\\\",\\\"cpus\\\":\\\"" +
                cpus + "\\\"}\" >&4"};
  s.slot_cpu = cpu;
  return s;
}

TEST_F(GpuSlotTest, TheHolderRunsOnTheSlotsCpuUntilItHandsTheSlotBack) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  const int cpu = highest_cpu(mine);
  ASSERT_GE(cpu, 0);
  sched::GpuSlot slot("0");
  const sandbox::Outcome o = sandbox::run(cpus_reporting_worker(&slot, cpu));
  ASSERT_EQ(o.events.size(), 5u) << o.stderr_kept;
  EXPECT_EQ(o.events[2]["cpus"], std::to_string(cpu));
  EXPECT_EQ(o.events[4]["cpus"], o.events[0]["cpus"]) << "its CPUs are given back with the slot";
  if (CPU_COUNT(&mine) > 1) {
    EXPECT_NE(o.events[0]["cpus"], std::to_string(cpu));
  }
}

/// A Python worker that makes a thread while it holds the slot (pinned to `cpu`), asks for a
/// quiet host, and reports the CPUs of its main thread and of the new one: events slot_wanted,
/// quiet_wanted, held (main, made: the new thread's CPUs when made, now: after the answer),
/// slot_done, after (the new thread's CPUs then).
sandbox::Spawn thread_making_worker(sched::GpuSlot* slot, int cpu) {
  sandbox::Spawn s = handback_worker(slot, true);
  s.argv = {"/usr/bin/env", "python3", "-c", R"(
import json, os, threading, time
req, ev = os.fdopen(3), os.fdopen(4, "w", buffering=1)
def cpus(tid):
    with open(f"/proc/self/task/{tid}/status") as f:
        return next(l.split()[1] for l in f if l.startswith("Cpus_allowed_list"))
def say(**kw):
    ev.write(json.dumps(kw) + chr(10))
req.readline()
say(ev="slot_wanted")
req.readline()
main = threading.get_native_id()
helper = threading.Thread(target=time.sleep, args=(2,))
helper.start()
made = cpus(helper.native_id)
say(ev="quiet_wanted")
req.readline()
nice = lambda tid: os.getpriority(os.PRIO_PROCESS, tid)
say(ev="held", main=cpus(main), made=made, now=cpus(helper.native_id), nice=nice(helper.native_id))
say(ev="slot_done")
time.sleep(0.3)
say(ev="after", helper=cpus(helper.native_id), nice=nice(helper.native_id), main_nice=nice(main))
)"};
  s.env = sandbox::scrubbed_environment({{"PATH", "/usr/local/bin:/usr/bin:/bin"}});
  s.slot_cpu = cpu;
  return s;
}

TEST_F(GpuSlotTest, ThreadsTheHolderMakesRunOffTheSlotsCpuFromItsTimedBatchesOn) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "one CPU: every thread runs on it";
  const int cpu = highest_cpu(mine);
  sched::GpuSlot slot("0");
  const sandbox::Outcome o = sandbox::run(thread_making_worker(&slot, cpu));
  ASSERT_EQ(o.events.size(), 5u) << o.stderr_kept;
  const nlohmann::json& held = o.events[2];
  EXPECT_EQ(held["main"], std::to_string(cpu)) << "the main thread stays on the slot's CPU";
  EXPECT_EQ(held["made"], std::to_string(cpu)) << "made while pinned: it inherited the one CPU";
  const auto now = sched::parse_cpulist(held["now"].get<std::string>());
  EXPECT_EQ(static_cast<int>(now.size()), CPU_COUNT(&mine))
      << "at quiet_wanted it gets the worker's CPUs back: " << held["now"];
  EXPECT_EQ(o.events[4]["helper"], held["now"]) << "and keeps them after the slot";
  if (::geteuid() == 0) {  // kbx may raise the holder's priority (CAP_SYS_NICE)
    EXPECT_EQ(held["nice"], -10) << "made while the main thread ran at the slot's priority";
    EXPECT_EQ(o.events[4]["nice"], 0) << "after the slot, no thread of it runs above the others";
    EXPECT_EQ(o.events[4]["main_nice"], 0);
  }
}

TEST_F(GpuSlotTest, TheSlotsCpuIsLeftToItsHolders) {
  // kbx takes the holders' CPU out of its own set (inherited by every worker it starts); a
  // holder is still pinned to it, and gets the others back with the slot.
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "one CPU: nothing to leave";
  const int cpu = highest_cpu(mine);
  std::thread kbx_side([&] {  // a thread of its own: the test process keeps its CPUs
    ASSERT_TRUE(sched::leave_cpus_to_holders({cpu}));
    cpu_set_t now;
    ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
    EXPECT_FALSE(CPU_ISSET(cpu, &now));
    EXPECT_EQ(CPU_COUNT(&now), CPU_COUNT(&mine) - 1);
    sched::GpuSlot slot("0");
    const sandbox::Outcome o = sandbox::run(cpus_reporting_worker(&slot, cpu));
    ASSERT_EQ(o.events.size(), 5u) << o.stderr_kept;
    EXPECT_EQ(o.events[2]["cpus"], std::to_string(cpu)) << "pinned to a CPU outside its set";
    const auto before = sched::parse_cpulist(o.events[0]["cpus"].get<std::string>());
    EXPECT_FALSE(before.empty());
    EXPECT_EQ(std::count(before.begin(), before.end(), cpu), 0) << "it started without it";
    EXPECT_EQ(o.events[4]["cpus"], o.events[0]["cpus"]) << "and ends without it";
    std::vector<int> all_left;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &now)) all_left.push_back(c);
    }
    EXPECT_FALSE(sched::leave_cpus_to_holders(all_left)) << "none would be left";
  });
  kbx_side.join();
}

TEST_F(GpuSlotTest, SlotCpuIsNearTheGpuAndOnePerGpu) {
  const fs::path proc = dir_ / "nvidia", pci = dir_ / "pci";
  fs::create_directories(proc / "0000:3B:00.0");
  fs::create_directories(proc / "0000:18:00.0");
  fs::create_directories(pci / "0000:18:00.0");
  fs::create_directories(pci / "0000:3b:00.0");
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  std::vector<int> usable;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mine)) usable.push_back(c);
  }
  ASSERT_FALSE(usable.empty());
  // GPU 0 is the lower bus id (18): its local CPUs are the first usable one only.
  std::ofstream(pci / "0000:18:00.0" / "local_cpulist") << usable.front() << "\n";
  std::ofstream(pci / "0000:3b:00.0" / "local_cpulist") << "0-" << usable.back() << "\n";
  EXPECT_EQ(sched::slot_cpu_for("0", proc, pci), usable.front());
  EXPECT_EQ(sched::slot_cpu_for("1", proc, pci), usable.back());
  if (usable.size() > 1) {
    EXPECT_EQ(sched::slot_cpu_for("1", proc, pci, 1), usable[usable.size() - 2]);
  }
  // No such GPU, or a UUID: the highest usable CPU.
  EXPECT_EQ(sched::slot_cpu_for("7", proc, pci), usable.back());
  EXPECT_EQ(sched::slot_cpu_for("GPU-8a1b", proc, pci), usable.back());
  EXPECT_EQ(sched::slot_cpu_for("0", dir_ / "none", pci), usable.back());
}

/// What a run mode of a flag and a variable must do (sched::mode_from): `fallback` with neither,
/// the flag's value, the variable's when no flag, the flag over the variable, and a bad value of
/// the variable refused naming it and the modes (`choices`, as the message lists them).
struct ModeCase {
  std::function<std::string(const std::string&)> mode;
  const char* var;
  std::string fallback, other, bad, choices;
};

void expect_mode_from_flag_then_environment(const ModeCase& c) {
  ::unsetenv(c.var);
  EXPECT_EQ(c.mode(""), c.fallback) << c.var;
  EXPECT_EQ(c.mode(c.other), c.other) << c.var;
  ::setenv(c.var, c.other.c_str(), 1);
  EXPECT_EQ(c.mode(""), c.other) << c.var;
  EXPECT_EQ(c.mode(c.fallback), c.fallback) << c.var << ": the flag wins";
  ::setenv(c.var, c.bad.c_str(), 1);
  try {
    c.mode("");
    ADD_FAILURE() << c.var << ": a bad mode was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::string(c.var) + "=" + c.bad), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(c.choices), std::string::npos) << e.what();
  }
  ::unsetenv(c.var);
}

TEST_F(GpuSlotTest, RunModesComeFromTheFlagThenTheEnvironment) {
  expect_mode_from_flag_then_environment({sched::quiet_timing_mode, "KBX_QUIET_TIMING", "all",
                                          "host-bound", "sometimes", "host-bound, all or off"});
  expect_mode_from_flag_then_environment(
      {sched::slot_at_mode, "KBX_SLOT_AT", "launch", "early", "whenever", "call, launch or early"});
  expect_mode_from_flag_then_environment({sched::finishing_from_mode, "KBX_FINISHING_FROM", "exit",
                                          "handback", "verdict", "exit or handback"});
  expect_mode_from_flag_then_environment({sched::reference_worker_life, "KBX_REFERENCE_WORKER_LIFE",
                                          "lane", "chunk", "1", "lane or chunk"});
}

TEST_F(GpuSlotTest, QuietCpuFirstModeComesFromTheEnvironment) {
  ::unsetenv("KBX_QUIET_CPU_FIRST");
  EXPECT_EQ(sched::quiet_cpu_first_mode(), "cuda") << "the default since session 29";
  ::setenv("KBX_QUIET_CPU_FIRST", "0", 1);
  EXPECT_EQ(sched::quiet_cpu_first_mode(), "");
  ::setenv("KBX_QUIET_CPU_FIRST", "cuda", 1);
  EXPECT_EQ(sched::quiet_cpu_first_mode(), "cuda");
  ::setenv("KBX_QUIET_CPU_FIRST", "context", 1);
  EXPECT_EQ(sched::quiet_cpu_first_mode(), "context");
  ::setenv("KBX_QUIET_CPU_FIRST", "later", 1);
  EXPECT_THROW(sched::quiet_cpu_first_mode(), Error);
  ::unsetenv("KBX_QUIET_CPU_FIRST");
}

TEST_F(GpuSlotTest, CompilerPreloadIsOffUnlessTheEnvironmentSays) {
  ::unsetenv("KBX_PRELOAD_COMPILER");
  EXPECT_FALSE(sched::preload_compiler()) << "off since it broke CUDA on the H100";
  ::setenv("KBX_PRELOAD_COMPILER", "1", 1);
  EXPECT_TRUE(sched::preload_compiler());
  ::setenv("KBX_PRELOAD_COMPILER", "0", 1);
  EXPECT_FALSE(sched::preload_compiler());
  ::setenv("KBX_PRELOAD_COMPILER", "yes", 1);
  EXPECT_THROW(sched::preload_compiler(), Error);
  ::unsetenv("KBX_PRELOAD_COMPILER");
}

TEST_F(GpuSlotTest, TimerWarmUpComesFromTheEnvironmentOrIsRefused) {
  ::unsetenv("KBX_TIMER_WARMUP_MS");
  EXPECT_EQ(sched::timer_warmup_ms_from_environment(), sched::kCandidateTimerWarmupMs)
      << "unset: the candidates' default";
  EXPECT_EQ(sched::kCandidateTimerWarmupMs, 3.0);
  ::setenv("KBX_TIMER_WARMUP_MS", "10", 1);
  EXPECT_EQ(sched::timer_warmup_ms_from_environment(), 10.0) << "the timer's own, asked for";
  ::setenv("KBX_TIMER_WARMUP_MS", "2.5", 1);
  EXPECT_EQ(sched::timer_warmup_ms_from_environment(), 2.5);
  expect_refused("KBX_TIMER_WARMUP_MS", {"0", "-1", "101", "3ms", "fast"},
                 sched::timer_warmup_ms_from_environment);
}

TEST_F(GpuSlotTest, TimerHoldFactorComesFromTheEnvironmentOrIsRefused) {
  ::unsetenv("KBX_TIMER_HOLD_FACTOR");
  EXPECT_EQ(sched::timer_hold_factor_from_environment(), 0.0) << "unset: the timer's own";
  ::setenv("KBX_TIMER_HOLD_FACTOR", "1.25", 1);
  EXPECT_EQ(sched::timer_hold_factor_from_environment(), 1.25);
  for (const char* bad : {"1", "0.5", "4.5", "2x", ""}) {
    ::setenv("KBX_TIMER_HOLD_FACTOR", bad, 1);
    try {
      const double factor = sched::timer_hold_factor_from_environment();
      if (*bad != '\0') ADD_FAILURE() << bad << " was taken";
      EXPECT_EQ(factor, 0.0) << "empty: unset";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("KBX_TIMER_HOLD_FACTOR"), std::string::npos);
    }
  }
  ::unsetenv("KBX_TIMER_HOLD_FACTOR");
}

TEST_F(GpuSlotTest, EagerRedrawComesFromTheEnvironmentOrIsRefused) {
  ::unsetenv("KBX_EAGER_REDRAW");
  EXPECT_TRUE(sched::eager_redraw_from_environment()) << "unset: a second draw (session 41)";
  const std::pair<const char*, bool> taken[] = {{"1", true}, {"0", false}, {"", true}};
  for (const auto& [value, on] : taken) {
    ::setenv("KBX_EAGER_REDRAW", value, 1);
    EXPECT_EQ(sched::eager_redraw_from_environment(), on) << "KBX_EAGER_REDRAW=" << value;
  }
  expect_refused("KBX_EAGER_REDRAW", {"2", "yes", "on"}, sched::eager_redraw_from_environment);
}

TEST_F(GpuSlotTest, TimerKeptOutputsComeFromTheEnvironmentOrAreRefused) {
  ::unsetenv("KBX_TIMER_KEEP_OUTPUTS");
  EXPECT_EQ(sched::timer_keep_outputs_from_environment(), 0) << "unset: none kept";
  ::setenv("KBX_TIMER_KEEP_OUTPUTS", "2", 1);
  EXPECT_EQ(sched::timer_keep_outputs_from_environment(), 2);
  expect_refused("KBX_TIMER_KEEP_OUTPUTS", {"0", "5", "1.5", "-1", "two"},
                 sched::timer_keep_outputs_from_environment);
}

TEST_F(GpuSlotTest, CpuListsAreParsedOrRefused) {
  EXPECT_EQ(sched::parse_cpulist("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(sched::parse_cpulist("5"), (std::vector<int>{5}));
  EXPECT_TRUE(sched::parse_cpulist("").empty());
  EXPECT_TRUE(sched::parse_cpulist("3-1").empty());
  EXPECT_TRUE(sched::parse_cpulist("a-b").empty());
  EXPECT_TRUE(sched::parse_cpulist("1x").empty());
}

TEST_F(GpuSlotTest, KeyIsTheFirstVisibleDevice) {
  EXPECT_EQ(sched::slot_key(""), "0");
  EXPECT_EQ(sched::slot_key("2,3"), "2");
  EXPECT_EQ(sched::slot_key("GPU-8a1b/../x"), "GPU-8a1bx");
}

TEST_F(GpuSlotTest, WorkersHoldingTheSlotNeverOverlap) {
  sched::GpuSlot slot1("0"), slot2("0");
  sandbox::Outcome o1, o2;
  std::thread t1([&] { o1 = sandbox::run(slot_worker(&slot1)); });
  std::thread t2([&] { o2 = sandbox::run(slot_worker(&slot2)); });
  t1.join();
  t2.join();
  for (const auto* o : {&o1, &o2}) {
    ASSERT_EQ(o->events.size(), 3u) << o->stderr_kept;
    EXPECT_EQ(o->events[1]["go"], "go");
    EXPECT_EQ(o->slot_granted_after, 1);  // after its "slot_wanted"
  }
  const double s1 = o1.events[1]["start"], e1 = o1.events[2]["end"];
  const double s2 = o2.events[1]["start"], e2 = o2.events[2]["end"];
  EXPECT_TRUE(e1 <= s2 || e2 <= s1) << s1 << ".." << e1 << " and " << s2 << ".." << e2;
  EXPECT_GT(o1.slot_wait_seconds + o2.slot_wait_seconds, 0.25);  // one waited for the other
  EXPECT_FALSE(slot1.held());
  EXPECT_FALSE(slot2.held());
}

TEST_F(GpuSlotTest, TheWaitIsNotTheWorkersTime) {
  sched::GpuSlot holder("0"), slot("0");
  holder.acquire();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    holder.release();
  });
  // 1 s of its own: the 1.5 s it waits for the slot must not time it out.
  auto o = sandbox::run(slot_worker(&slot, 1.0));
  release.join();
  EXPECT_EQ(o.end, sandbox::Outcome::End::Exited) << o.describe();
  ASSERT_EQ(o.events.size(), 3u);
  EXPECT_GT(o.slot_wait_seconds, 1.0);
}

// --slot-at early: a worker asks, goes on writing events (its small cases) while another holds
// the slot, and reads "go" later. The supervisor keeps reading its events meanwhile and grants
// the slot when it is free; what came before the grant is counted as such.
TEST_F(GpuSlotTest, AWorkerThatAskedEarlyGoesOnUntilItReadsGo) {
  sched::GpuSlot holder("0"), slot("0");
  holder.acquire();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    holder.release();
  });
  auto s = slot_worker(&slot);
  s.argv = {"/bin/sh", "-c",
            "read req <&3; echo '{\"ev\":\"slot_wanted\"}' >&4; "
            "for i in 1 2 3 4 5 6; do echo '{\"ev\":\"case\"}' >&4; sleep 0.1; done; "
            "read go <&3; echo \"{\\\"ev\\\":\\\"work\\\",\\\"go\\\":\\\"$go\\\"}\" >&4; "
            "echo '{\"ev\":\"done\"}' >&4"};
  auto o = sandbox::run(s);
  release.join();
  EXPECT_EQ(o.end, sandbox::Outcome::End::Exited) << o.describe();
  ASSERT_EQ(o.events.size(), 9u) << o.describe();
  EXPECT_EQ(o.events[7].value("go", ""), "go");
  // granted about 0.3 s in, while it was writing its case events, before it read "go"
  EXPECT_GE(o.slot_granted_after, 2);
  EXPECT_LE(o.slot_granted_after, 7);
  EXPECT_GT(o.slot_wait_seconds, 0.2);
}

TEST_F(GpuSlotTest, AWorkerThatNeverAsksNeverHoldsIt) {
  sched::GpuSlot slot("0"), probe("0");
  auto s = slot_worker(&slot);
  s.argv = {"/bin/sh", "-c", "read req <&3; echo '{\"ev\":\"timing\"}' >&4"};
  auto o = sandbox::run(s);
  EXPECT_EQ(o.slot_granted_after, -1);
  EXPECT_TRUE(probe.try_acquire());
  // ... and its timings are not trusted.
  auto fail = verdict::timed_without_slot(0, o.slot_granted_after);
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->status, verdict::Status::TimerTampered);
}

TEST(TimedWithoutSlot, OnlyTimingsAfterTheGrantAreTrusted) {
  EXPECT_FALSE(verdict::timed_without_slot(-1, -1));  // nothing timed
  EXPECT_FALSE(verdict::timed_without_slot(5, 3));    // timed after the grant
  EXPECT_FALSE(verdict::timed_without_slot(3, 3));
  EXPECT_TRUE(verdict::timed_without_slot(2, 3));   // before it
  EXPECT_TRUE(verdict::timed_without_slot(2, -1));  // never granted
}

TEST(DefaultJobs, ThreeQuartersOfTheCoresOnTheGpuEveryCoreOnTheCpu) {
  EXPECT_EQ(sched::default_jobs("cuda", 16), 12);
  EXPECT_EQ(sched::default_jobs("cuda", 8), 6);
  EXPECT_EQ(sched::default_jobs("cuda", 64), 12);
  EXPECT_EQ(sched::default_jobs("cuda", 2), 1);
  EXPECT_EQ(sched::default_jobs("cuda", 0), 1);
  EXPECT_EQ(sched::default_jobs("cpu", 2), 2);
}

TEST(ReferenceWorkers, SeveralOnTheGpuOneOnTheCpu) {
  EXPECT_EQ(sched::reference_workers("cuda", 8), 6);
  EXPECT_EQ(sched::reference_workers("cuda", 12), 8);
  EXPECT_EQ(sched::reference_workers("cuda", 16), 8);
  EXPECT_EQ(sched::reference_workers("cuda", 4), 4);
  EXPECT_EQ(sched::reference_workers("cuda", 2), 3);
  EXPECT_EQ(sched::reference_workers("cuda", 1), 1);
  EXPECT_EQ(sched::reference_workers("cpu", 16), 1);
}

TEST(LiveTaskCap, OnTheGpuATaskForEveryLaneAndAChunkForEveryReferenceWorker) {
  // the default lanes (8) and reference workers (6): 8 + 6 chunks of two
  EXPECT_EQ(sched::live_task_cap("cuda", 2, 8, 6), 20u);
  EXPECT_EQ(sched::live_task_cap("cuda", 2, 12, 8), 28u);  // --jobs 12 --reference-workers 8
  EXPECT_EQ(sched::live_task_cap("cuda", 2, 1, 1), 8u);    // at least four chunks
  EXPECT_EQ(sched::live_task_cap("cpu", 16, 2, 1), 32u);
  EXPECT_EQ(sched::live_task_cap("cpu", 16, 64, 1), 32u);  // the CPU's lanes take many tasks each
}

TEST(DefaultJobs, TheGpusMemoryCapsThem) {
  const std::uint64_t gib = 1ULL << 30;
  EXPECT_EQ(sched::jobs_for_gpu_memory(24 * gib), 1);    // a small GPU: one job at a time
  EXPECT_EQ(sched::jobs_for_gpu_memory(40 * gib), 2);    // 32 kept + 1 x 8
  EXPECT_EQ(sched::jobs_for_gpu_memory(80 * gib), 7);    // 32 kept + 6 x 8
  EXPECT_EQ(sched::jobs_for_gpu_memory(140 * gib), 14);  // an H200: its 16 cores bind first (12)
}

}  // namespace
}  // namespace kbx

namespace kbx {
namespace {

TEST(ResolveGpus, AllIsTheVisibleListElseTheDriversGpus) {
  EXPECT_EQ(sched::resolve_gpus("all", "2,3", "/nonexistent"),
            (std::vector<std::string>{"2", "3"}));
  const fs::path proc = fs::temp_directory_path() / ("kbx-fake-nvidia-" + std::to_string(getpid()));
  for (const char* bus : {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0"}) {
    fs::create_directories(proc / bus);
  }
  EXPECT_EQ(sched::resolve_gpus("all", "", proc), (std::vector<std::string>{"0", "1", "2"}));
  fs::remove_all(proc);
  EXPECT_THROW(sched::resolve_gpus("all", "", proc), Error);  // no GPU: says so
}

TEST(ResolveGpus, AListIsTakenAsGivenAndCheckedForForm) {
  EXPECT_EQ(sched::resolve_gpus("0, 1,3", "", "/nonexistent"),
            (std::vector<std::string>{"0", "1", "3"}));
  EXPECT_EQ(sched::resolve_gpus("GPU-8a1b-22", "", "/nonexistent"),
            (std::vector<std::string>{"GPU-8a1b-22"}));
  EXPECT_THROW(sched::resolve_gpus("0;rm -rf", "", "/nonexistent"), Error);
  EXPECT_THROW(sched::resolve_gpus(",", "", "/nonexistent"), Error);
}

TEST(ResolveGpus, AWorkerRunsOnItsLanesGpuAndTakesThatGpusSlot) {
  sched::WorkerEnv env;
  env.device = "cuda";
  env.gpu = "1";
  EXPECT_EQ(sched::worker_environment(env, "/tmp").at("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(sched::worker_gpu(env), "1");
  EXPECT_EQ(sched::GpuSlot(sched::worker_gpu(env)).lock_path().filename(), "gpu-1.lock");
  env.device = "cpu";  // the CPU check never sees a GPU
  EXPECT_EQ(sched::worker_environment(env, "/tmp").at("CUDA_VISIBLE_DEVICES"), "");
}

TEST(WorkerEnvironment, InductorsCompileThreadsOnlyWhenKbxInductorThreadsSaysSo) {
  sched::WorkerEnv env;
  env.device = "cuda";
  ::unsetenv("KBX_INDUCTOR_THREADS");
  EXPECT_EQ(sched::worker_environment(env, "/tmp").count("TORCHINDUCTOR_COMPILE_THREADS"), 0u);
  ::setenv("KBX_INDUCTOR_THREADS", "2", 1);
  EXPECT_EQ(sched::worker_environment(env, "/tmp").at("TORCHINDUCTOR_COMPILE_THREADS"), "2");
  ::setenv("KBX_INDUCTOR_THREADS", "0", 1);  // at least one
  EXPECT_EQ(sched::worker_environment(env, "/tmp").at("TORCHINDUCTOR_COMPILE_THREADS"), "1");
  ::unsetenv("KBX_INDUCTOR_THREADS");
}

TEST(WorkerEnvironment, KbxKeepQuiet0ReachesTheWorkersAndNothingElseDoes) {
  sched::WorkerEnv env;
  env.device = "cuda";
  ::unsetenv("KBX_KEEP_QUIET");
  EXPECT_EQ(sched::worker_environment(env, "/tmp").count("KBX_KEEP_QUIET"), 0u);
  ::setenv("KBX_KEEP_QUIET", "0", 1);
  EXPECT_EQ(sched::worker_environment(env, "/tmp").at("KBX_KEEP_QUIET"), "0");
  ::setenv("KBX_KEEP_QUIET", "yes", 1);  // only the switch off is passed on: the default stays
  EXPECT_EQ(sched::worker_environment(env, "/tmp").count("KBX_KEEP_QUIET"), 0u);
  ::unsetenv("KBX_KEEP_QUIET");
}

TEST(WorkerEnvironment, ACpuWorkerRunsTorchOnOneThreadUnlessOmpNumThreadsSaysOtherwise) {
  const char* before = std::getenv("OMP_NUM_THREADS");
  const std::string saved = before ? before : "";
  sched::WorkerEnv env;
  env.device = "cpu";
  ::unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(sched::worker_environment(env, "/tmp").at("OMP_NUM_THREADS"), "1");
  ::setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(sched::worker_environment(env, "/tmp").at("OMP_NUM_THREADS"), "3");
  ::unsetenv("OMP_NUM_THREADS");
  env.device = "cuda";  // a GPU worker keeps torch's pool (host-bound eager calls use it)
  EXPECT_EQ(sched::worker_environment(env, "/tmp").count("OMP_NUM_THREADS"), 0u);
  if (before) ::setenv("OMP_NUM_THREADS", saved.c_str(), 1);
}

}  // namespace
}  // namespace kbx

namespace kbx {
namespace {

TEST(HarnessOverhead, WaitsForTheSlotAndFrozenTimeAreTheRunsQueueNotTheJobsCost) {
  sandbox::Outcome o;
  EXPECT_DOUBLE_EQ(sched::harness_overhead_seconds(3.0, 1.0, o), 2.0);
  o.slot_wait_seconds = 1.0;
  o.frozen_seconds = 0.5;
  EXPECT_DOUBLE_EQ(sched::harness_overhead_seconds(3.0, 1.0, o), 0.5);
  o.frozen_seconds = 5.0;
  EXPECT_DOUBLE_EQ(sched::harness_overhead_seconds(3.0, 1.0, o), 0.0) << "never below 0";
}

}  // namespace
}  // namespace kbx
