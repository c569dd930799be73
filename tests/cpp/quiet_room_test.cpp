// The quiet host (issue 14): while the GPU's slot holder times a host-bound call, every other job
// of the run is frozen, holders never; a hush ends at the holder's word, its end, or a time cap;
// a job's frozen time does not count against its time limit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/confine.h"
#include "sandbox/process.h"
#include "sandbox/quiet.h"
#include "sched/gpu_slot.h"

namespace kbx {
namespace {
namespace fs = std::filesystem;

/// A `sleep 60` in a process group of its own, killed when destroyed.
struct Sleeper {
  pid_t pid = -1;
  Sleeper() {
    pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid, pid);  // also from here: the group exists before the test signals it
  }
  ~Sleeper() {
    kill(-pid, SIGKILL);
    kill(pid, SIGCONT);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  /// The state letter of /proc/<pid>/stat: 'T' stopped, 'S' sleeping.
  char state() const {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    const auto paren = line.rfind(')');
    return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
  }
  /// Waits up to a second for the state to become `want`.
  bool becomes(char want) const {
    for (int i = 0; i < 100; ++i) {
      if (state() == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
};

TEST(QuietRoom, EachHushThatFreezesMembersReportsWhatItCost) {
  sandbox::QuietRoom room;
  std::vector<sandbox::HushCost> costs;
  room.on_hush([&](const sandbox::HushCost& c) { costs.push_back(c); });
  Sleeper holder, other, third;
  const int h = room.join(holder.pid, {});
  room.set_holding(h, true);
  ASSERT_TRUE(room.hush(h));
  EXPECT_TRUE(costs.empty()) << "nobody to freeze: nothing to report";
  room.unhush(h);
  room.join(other.pid, {});
  room.join(third.pid, {});
  ASSERT_TRUE(room.hush(h));
  ASSERT_TRUE(room.hush(h));  // asked again while it holds the hush: nothing frozen anew
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_EQ(costs[0].frozen, 2);
  EXPECT_EQ(costs[0].not_stopped, 0) << "no cgroup to wait for (stopped by SIGSTOP)";
  EXPECT_GE(costs[0].freeze_seconds, 0);
  EXPECT_LT(costs[0].wait_seconds, 0.05);
  room.unhush(h);
}

TEST(QuietRoom, OnlyASlotHolderHushesAndEveryOtherMemberIsFrozenUntilItEnds) {
  sandbox::QuietRoom room;
  Sleeper holder, other, second_holder;
  const int h = room.join(holder.pid, {});
  room.join(other.pid, {});
  const int h2 = room.join(second_holder.pid, {});
  EXPECT_FALSE(room.hush(h)) << "a job without a slot may not freeze the others";
  room.set_holding(h, true);
  room.set_holding(h2, true);  // another GPU's holder
  ASSERT_TRUE(room.hush(h));
  EXPECT_EQ(room.hushed_by(), h);
  EXPECT_TRUE(other.becomes('T'));
  EXPECT_TRUE(holder.becomes('S'));
  EXPECT_TRUE(second_holder.becomes('S')) << "a slot holder is never frozen";
  EXPECT_FALSE(room.hush(h2)) << "one hush at a time";
  room.unhush(h2);  // not its hush: nothing changes
  EXPECT_EQ(other.state(), 'T');
  room.unhush(h);
  EXPECT_TRUE(other.becomes('S'));
  EXPECT_EQ(room.hushed_by(), -1);
}

TEST(QuietRoom, AJobThatJoinsDuringAHushIsFrozenAndLeavingThawsIt) {
  sandbox::QuietRoom room;
  Sleeper holder, late;
  const int h = room.join(holder.pid, {});
  room.set_holding(h, true);
  ASSERT_TRUE(room.hush(h));
  const int l = room.join(late.pid, {});
  EXPECT_TRUE(late.becomes('T'));
  room.leave(l);
  EXPECT_TRUE(late.becomes('S'));
}

TEST(QuietRoom, ACpuOnlyMemberIsFrozenOnlyByHostBoundHushesUntilItsGpuWorkStarts) {
  sandbox::QuietRoom room;
  Sleeper holder, cpu_only, late;
  const int h = room.join(holder.pid, {});
  room.set_holding(h, true);
  const int c = room.join_cpu_only(cpu_only.pid, {});
  ASSERT_TRUE(room.hush(h, /*host_bound=*/false));
  const int l = room.join_cpu_only(late.pid, {});  // joins during the GPU-only hush
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(cpu_only.state(), 'S');
  EXPECT_EQ(late.state(), 'S');
  room.gpu_from_now(c);  // its CUDA starts during the hush: frozen at once
  EXPECT_TRUE(cpu_only.becomes('T'));
  ASSERT_TRUE(room.hush(h, /*host_bound=*/true));  // the same holder's host-bound call next
  EXPECT_TRUE(late.becomes('T'));
  room.unhush(h);
  EXPECT_TRUE(cpu_only.becomes('S'));
  EXPECT_TRUE(late.becomes('S'));
  ASSERT_TRUE(room.hush(h, /*host_bound=*/false));
  EXPECT_TRUE(cpu_only.becomes('T')) << "a member whose GPU work started is frozen by any hush";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(late.state(), 'S');
  room.unhush(h);
  room.leave(c);
  room.leave(l);
}

TEST(QuietRoom, GettingTheSlotThawsAJobAndReleasingItEndsItsHush) {
  sandbox::QuietRoom room;
  Sleeper a, b, c;
  const int ia = room.join(a.pid, {});
  const int ib = room.join(b.pid, {});
  room.join(c.pid, {});
  room.set_holding(ia, true);
  ASSERT_TRUE(room.hush(ia));
  EXPECT_TRUE(b.becomes('T'));
  room.set_holding(ib, true);  // its GPU's slot: it runs again
  EXPECT_TRUE(b.becomes('S'));
  room.set_holding(ia, false);  // the hush ends with the slot
  EXPECT_TRUE(c.becomes('S'));
  EXPECT_EQ(room.hushed_by(), -1);
}

TEST(QuietRoom, AHushEndsAtItsCapAndFrozenTimeIsCounted) {
  sandbox::QuietRoom room(0.3);
  Sleeper holder, other;
  const int h = room.join(holder.pid, {});
  const int o = room.join(other.pid, {});
  room.set_holding(h, true);
  ASSERT_TRUE(room.hush(h));
  EXPECT_TRUE(other.becomes('T'));
  room.expire(h);
  EXPECT_EQ(room.hushed_by(), h) << "not yet at its cap";
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  room.expire(h);
  EXPECT_EQ(room.hushed_by(), -1);
  EXPECT_TRUE(other.becomes('S'));
  EXPECT_GE(room.frozen_seconds(o), 0.3);
  EXPECT_LT(room.frozen_seconds(o), 2.0);
  EXPECT_EQ(room.frozen_seconds(h), 0.0);
}

TEST(QuietRoom, KbxsOwnCpuWorkWaitsOutAHushAndNoLonger) {
  sandbox::QuietRoom room(5.0);
  Sleeper holder;
  const int h = room.join(holder.pid, {});
  auto t0 = std::chrono::steady_clock::now();
  room.wait_while_hushed();  // no hush: at once
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
  room.set_holding(h, true);
  ASSERT_TRUE(room.hush(h));
  std::atomic<bool> through{false};
  std::thread comparer([&] {
    room.wait_while_hushed();
    through = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(through) << "a comparison ran during the holder's quiet timed loop";
  room.unhush(h);
  comparer.join();
  EXPECT_TRUE(through);
}

TEST(QuietRoom, KbxsOwnCpuWorkGoesOnThroughAHushForACallThatOnlyQueuesGpuWork) {
  sandbox::QuietRoom room;
  Sleeper holder, other;
  const int h = room.join(holder.pid, {});
  const int o = room.join(other.pid, {});
  room.set_holding(h, true);
  ASSERT_TRUE(room.hush(h, /*host_bound=*/false));
  EXPECT_EQ(room.hushed_by(), h);
  EXPECT_GT(room.frozen_seconds(o), 0.0) << "the other jobs are frozen all the same";
  auto t0 = std::chrono::steady_clock::now();
  room.wait_while_hushed();  // the other jobs are frozen, kbx's comparisons are not
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
  // The same holder's next call waits on the host: the comparisons wait again, until it ends.
  ASSERT_TRUE(room.hush(h, /*host_bound=*/true));
  std::atomic<bool> through{false};
  std::thread comparer([&] {
    room.wait_while_hushed();
    through = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(through);
  // and a device-bound ask of the same hush lets a waiting comparison go at once
  ASSERT_TRUE(room.hush(h, /*host_bound=*/false));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(through) << "a comparison kept waiting through a device-bound hush";
  room.unhush(h);
  comparer.join();
}

TEST(QuietRoom, KbxsOwnCpuWorkWaitsAtMostTheHushsCap) {
  sandbox::QuietRoom room(0.3);  // no expire() call: the holder's supervisor is stuck
  Sleeper holder;
  const int h = room.join(holder.pid, {});
  room.set_holding(h, true);
  ASSERT_TRUE(room.hush(h));
  auto t0 = std::chrono::steady_clock::now();
  room.wait_while_hushed();
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  EXPECT_LT(waited, std::chrono::milliseconds(1500));
}

/// "frozen" of a cgroup's cgroup.events (-1 when unreadable).
int cgroup_frozen(const fs::path& cgroup) {
  std::ifstream in(cgroup / "cgroup.events");
  std::string key;
  int value = -1;
  while (in >> key >> value) {
    if (key == "frozen") return value;
  }
  return -1;
}

/// Waits up to a second for a cgroup's "frozen" to become `want`.
bool cgroup_becomes(const fs::path& cgroup, int want) {
  for (int i = 0; i < 100 && cgroup_frozen(cgroup) != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cgroup_frozen(cgroup) == want;
}

TEST(QuietRoom, AConfinedJobIsFrozenThroughItsCgroupWhateverItsProcessGroups) {
  if (!sandbox::abilities().cgroup) GTEST_SKIP() << sandbox::abilities().cgroup_note;
  sandbox::JobCgroup cgroup("quiet-test", 1ULL << 30, 64);
  ASSERT_FALSE(cgroup.path().empty());
  Sleeper holder, escaped;
  // The job's process left its process group (setsid), as a hostile candidate could: only the
  // cgroup still holds it.
  std::ofstream(cgroup.path() / "cgroup.procs") << escaped.pid;
  sandbox::QuietRoom room;
  const int h = room.join(holder.pid, {});
  room.join(999999, cgroup.path());  // a process group that does not exist
  room.set_holding(h, true);
  ASSERT_TRUE(room.hush(h));
  EXPECT_TRUE(cgroup_becomes(cgroup.path(), 1));
  room.unhush(h);
  EXPECT_TRUE(cgroup_becomes(cgroup.path(), 0));
}

/// A folder standing in for a cgroup whose tasks never stop (one inside a long system call):
/// its cgroup.freeze takes the write, its cgroup.events says "frozen 0" for good.
struct UnstoppableCgroup {
  fs::path path;
  UnstoppableCgroup() {
    path = fs::temp_directory_path() / ("kbx-unstoppable-" + std::to_string(::getpid()));
    fs::create_directories(path);
    std::ofstream(path / "cgroup.freeze") << "0";
    std::ofstream(path / "cgroup.events") << "populated 1\nfrozen 0\n";
  }
  ~UnstoppableCgroup() { fs::remove_all(path); }
};

TEST(QuietRoom, OnlyAHostBoundCallsHushWaitsForTheCgroupsToStop) {
  UnstoppableCgroup cgroup;
  sandbox::QuietRoom room;
  std::vector<sandbox::HushCost> costs;
  room.on_hush([&](const sandbox::HushCost& c) { costs.push_back(c); });
  Sleeper holder;
  const int h = room.join(holder.pid, {});
  room.join(999999, cgroup.path);
  room.set_holding(h, true);
  ASSERT_TRUE(room.hush(h, /*host_bound=*/false));  // a call that only queues GPU work
  room.unhush(h);
  ASSERT_TRUE(room.hush(h, /*host_bound=*/true));
  room.unhush(h);
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].not_stopped, 1) << "still counted, for the trace";
  EXPECT_LT(costs[0].wait_seconds, 0.01) << "a GPU-only call's hush does not wait";
  EXPECT_EQ(costs[1].not_stopped, 1);
  EXPECT_GE(costs[1].wait_seconds, 0.045) << "a host-bound call's hush waits up to 50 ms";
  EXPECT_LT(costs[1].wait_seconds, 0.5);
  // Asked again host-bound within a GPU-only hush: it waits then.
  ASSERT_TRUE(room.hush(h, false));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(room.hush(h, true));
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.045);
  room.unhush(h);
  EXPECT_EQ(std::ifstream(cgroup.path / "cgroup.freeze").get(), '0') << "thawed at the end";
}

class QuietJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kbx-quiet-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::setenv("KBX_SLOT_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("KBX_SLOT_DIR");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

/// Shell that sends `asking` (a quiet_wanted line) and reports the answer as an "answer" event.
std::string ask_quiet(const std::string& asking = R"({"ev":"quiet_wanted"})") {
  return "echo '" + asking +
         "' >&4; read answer <&3; "
         "echo \"{\\\"ev\\\":\\\"answer\\\",\\\"is\\\":\\\"$answer\\\"}\" >&4; ";
}

/// A worker that takes the slot, then runs `script` (shell; the request pipe is fd 3, the event
/// pipe fd 4), then says done.
sandbox::Spawn slot_holder(sandbox::ExclusiveSlot* slot, sandbox::QuietRoom* room,
                           const std::string& script) {
  sandbox::Spawn s;
  s.argv = {"/bin/sh", "-c",
            "read req <&3; echo '{\"ev\":\"slot_wanted\"}' >&4; read go <&3; " + script +
                "echo '{\"ev\":\"done\"}' >&4"};
  s.env = sandbox::scrubbed_environment({});
  s.limits.wall_seconds = 20;
  s.request = "{}";
  s.slot = slot;
  s.quiet = room;
  return s;
}

/// A worker that takes the slot, asks for a quiet host (`asking`: its quiet_wanted line), reports
/// the answer, keeps it `hold` seconds, then says "quiet_done" when `says_done`, and ends.
sandbox::Spawn quiet_worker(sandbox::ExclusiveSlot* slot, sandbox::QuietRoom* room, double hold,
                            bool says_done,
                            const std::string& asking = R"({"ev":"quiet_wanted"})") {
  std::ostringstream script;
  script << ask_quiet(asking) << "sleep " << hold << "; "
         << (says_done ? "echo '{\"ev\":\"quiet_done\"}' >&4; sleep 0.3; " : "");
  return slot_holder(slot, room, script.str());
}

/// Shell that appends a timestamp to `file` every 20 ms, `ticks` times.
std::string tick_loop(const fs::path& file, int ticks) {
  return "i=0; while [ $i -lt " + std::to_string(ticks) + " ]; do date +%s.%N >> '" +
         file.string() + "'; sleep 0.02; i=$((i+1)); done; ";
}

/// A job that appends a timestamp to `file` every 20 ms for `seconds` of its own time (counted
/// in loops, so that a frozen stretch does not count), with a time limit of `limit` seconds.
sandbox::Spawn ticker(const fs::path& file, sandbox::QuietRoom* room, int ticks, double limit) {
  sandbox::Spawn s;
  s.argv = {"/bin/sh", "-c",
            "read req <&3; " + tick_loop(file, ticks) + "echo '{\"ev\":\"done\"}' >&4"};
  s.env = sandbox::scrubbed_environment({});
  s.limits.wall_seconds = limit;
  s.request = "{}";
  s.quiet = room;
  return s;
}

/// The longest gap between two timestamps of a ticker's file.
double longest_gap(const fs::path& file) {
  std::ifstream in(file);
  double last = -1, longest = 0;
  for (double t; in >> t; last = t) {
    if (last >= 0) longest = std::max(longest, t - last);
  }
  return longest;
}

/// The answers a worker reported ("answer" events), in order.
std::vector<std::string> answers_of(const sandbox::Outcome& o) {
  std::vector<std::string> answers;
  for (const auto& e : o.events) {
    if (e.value("ev", "") == "answer") answers.push_back(e.value("is", ""));
  }
  return answers;
}

std::string answer_of(const sandbox::Outcome& o) {
  const std::vector<std::string> answers = answers_of(o);
  return answers.empty() ? "(none)" : answers.front();
}

TEST_F(QuietJobsTest, TheHoldersQuietFreezesAnotherJobWhoseLimitIsNotChargedForIt) {
  sandbox::QuietRoom room;
  sched::GpuSlot slot("0", "candidate Cat/holder");
  const fs::path ticks = dir_ / "ticks.txt";
  sandbox::Outcome held, ticked;
  // 60 ticks of 20 ms: about 1.5 s of its own time, under its 2.5 s limit only if the 1.5 s it
  // spends frozen is not charged.
  std::thread other([&] { ticked = sandbox::run(ticker(ticks, &room, 60, 2.5)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  held = sandbox::run(quiet_worker(&slot, &room, 1.5, true));
  other.join();
  EXPECT_EQ(answer_of(held), "quiet");
  EXPECT_GE(longest_gap(ticks), 1.2) << "the other job went on while the holder was quiet";
  EXPECT_EQ(ticked.end, sandbox::Outcome::End::Exited) << ticked.describe();
  EXPECT_EQ(room.hushed_by(), -1);
  EXPECT_GE(ticked.frozen_seconds, 1.2) << "its outcome says how long it was frozen";
  EXPECT_LT(ticked.frozen_seconds, 2.0);
  EXPECT_EQ(held.frozen_seconds, 0) << "the holder is never frozen";
}

/// How long wait_while_hushed() blocked once the room was hushed while `spawn` ran.
double comparison_wait_during(sandbox::QuietRoom& room, const sandbox::Spawn& spawn) {
  std::atomic<double> waited{-1};
  std::thread comparer([&] {
    for (int i = 0; i < 400 && room.hushed_by() < 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    auto t0 = std::chrono::steady_clock::now();
    room.wait_while_hushed();
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  const sandbox::Outcome held = sandbox::run(spawn);
  comparer.join();
  EXPECT_EQ(answer_of(held), "quiet");
  return waited;
}

TEST_F(QuietJobsTest, KbxsComparisonsPauseOnlyWhenTheHoldersCallWaitsOnTheHost) {
  sandbox::QuietRoom room;
  sched::GpuSlot slot("0");
  Sleeper other;
  room.join(other.pid, {});
  // no word, or a word that is not false: host-bound (the comparisons wait, as before)
  EXPECT_GE(comparison_wait_during(room, quiet_worker(&slot, &room, 0.8, true)), 0.4);
  EXPECT_GE(comparison_wait_during(room, quiet_worker(&slot, &room, 0.8, true,
                                                      R"({"ev":"quiet_wanted","host_bound":0})")),
            0.4);
  const double device_bound = comparison_wait_during(
      room, quiet_worker(&slot, &room, 0.8, true, R"({"ev":"quiet_wanted","host_bound":false})"));
  EXPECT_GE(device_bound, 0.0);
  EXPECT_LT(device_bound, 0.2) << "kbx's comparisons paused for a call that only queues GPU work";
}

TEST_F(QuietJobsTest, AHolderThatEndsWithoutQuietDoneThawsTheOthers) {
  sandbox::QuietRoom room;
  sched::GpuSlot slot("0");
  const fs::path ticks = dir_ / "ticks.txt";
  sandbox::Outcome ticked;
  std::thread other([&] { ticked = sandbox::run(ticker(ticks, &room, 50, 20)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const sandbox::Outcome held = sandbox::run(quiet_worker(&slot, &room, 0.4, false));
  other.join();
  EXPECT_EQ(answer_of(held), "quiet");
  EXPECT_GE(longest_gap(ticks), 0.3);
  EXPECT_LT(longest_gap(ticks), 1.5) << "the others stayed frozen after the holder ended";
  EXPECT_EQ(ticked.end, sandbox::Outcome::End::Exited) << ticked.describe();
}

/// A holder that asks for a quiet host four times: twice in a row, then after "quiet_done",
/// then again after `pause` seconds; each answer reported as an "answer" event.
sandbox::Spawn asks_again_worker(sandbox::ExclusiveSlot* slot, sandbox::QuietRoom* room,
                                 double pause, double renew_after) {
  std::ostringstream script;
  script << ask_quiet() << ask_quiet() << "echo '{\"ev\":\"quiet_done\"}' >&4; sleep 0.2; "
         << ask_quiet() << "sleep " << pause << "; " << ask_quiet();
  sandbox::Spawn s = slot_holder(slot, room, script.str());
  s.quiet_renew_after_seconds = renew_after;
  return s;
}

TEST_F(QuietJobsTest, AHolderAskingAgainWhileItsHushLastsIsAnsweredStillUntilTheHushIsRenewed) {
  sandbox::QuietRoom room;
  sched::GpuSlot slot("0");
  Sleeper other;
  room.join(other.pid, {});
  // renewed after 0.6 s: the fourth ask, 0.8 s into the third's hush, begins a fresh one
  const sandbox::Outcome o = sandbox::run(asks_again_worker(&slot, &room, 0.8, 0.6));
  EXPECT_EQ(answers_of(o), (std::vector<std::string>{"quiet", "still", "quiet", "quiet"}))
      << o.describe();
  EXPECT_EQ(room.hushed_by(), -1) << "the holder's end thaws the room";
  // the default renewal (half the cap) keeps a hush of 0.8 s
  const sandbox::Outcome kept =
      sandbox::run(asks_again_worker(&slot, &room, 0.8, sandbox::QuietRoom::kMaxQuietSeconds / 2));
  EXPECT_EQ(answers_of(kept), (std::vector<std::string>{"quiet", "still", "quiet", "still"}))
      << kept.describe();
}

TEST(QuietRoom, TheHushsAgeIsKnownToItsHolderOnly) {
  sandbox::QuietRoom room;
  Sleeper a, b;
  const int h = room.join(a.pid, {}), o = room.join(b.pid, {});
  room.set_holding(h, true);
  EXPECT_LT(room.hush_seconds(h), 0);
  ASSERT_TRUE(room.hush(h));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_GE(room.hush_seconds(h), 0.04);
  EXPECT_LT(room.hush_seconds(o), 0);
  room.unhush(h);
  EXPECT_LT(room.hush_seconds(h), 0);
}

TEST_F(QuietJobsTest, AJobWithoutTheSlotIsAnsweredLoud) {
  sandbox::QuietRoom room;
  sched::GpuSlot taken("0"), mine("0");
  ASSERT_TRUE(taken.try_acquire());  // another job holds the GPU
  sandbox::Spawn s;
  s.argv = {"/bin/sh", "-c",
            "read req <&3; echo '{\"ev\":\"quiet_wanted\"}' >&4; read answer <&3; "
            "echo \"{\\\"ev\\\":\\\"answer\\\",\\\"is\\\":\\\"$answer\\\"}\" >&4; "
            "echo '{\"ev\":\"done\"}' >&4"};
  s.env = sandbox::scrubbed_environment({});
  s.limits.wall_seconds = 10;
  s.request = "{}";
  s.slot = &mine;
  s.quiet = &room;
  const sandbox::Outcome o = sandbox::run(s);
  taken.release();
  EXPECT_EQ(answer_of(o), "loud");
  EXPECT_EQ(room.hushed_by(), -1);
}

/// A ticker (as above) whose first part is CPU work only (Spawn::cpu_only_until_cuda): it
/// ticks `before` times, then, when `starts_cuda`, says "cuda_next", reports the answer and ticks
/// `after` times more.
sandbox::Spawn cpu_first_ticker(const fs::path& file, sandbox::QuietRoom* room,
                                sandbox::ExclusiveSlot* slot, int before, bool starts_cuda,
                                int after) {
  std::string script = "read req <&3; " + tick_loop(file, before);
  if (starts_cuda) {
    script +=
        "echo '{\"ev\":\"cuda_next\"}' >&4; read answer <&3; "
        "echo \"{\\\"ev\\\":\\\"answer\\\",\\\"is\\\":\\\"$answer\\\"}\" >&4; " +
        tick_loop(file, after);
  }
  script += "echo '{\"ev\":\"done\"}' >&4";
  sandbox::Spawn s;
  s.argv = {"/bin/sh", "-c", script};
  s.env = sandbox::scrubbed_environment({});
  s.limits.wall_seconds = 20;
  s.request = "{}";
  s.slot = slot;
  s.quiet = room;
  s.cpu_only_until_cuda = true;
  return s;
}

constexpr const char* kGpuOnlyAsk = R"({"ev":"quiet_wanted","host_bound":false})";

/// The longest gap in a CPU-first ticker's ticks while a holder keeps a hush (`asking`) for
/// `hold` seconds; `late` gets its outcome.
double gap_during_hush(const fs::path& dir, const std::string& asking, int before, bool starts_cuda,
                       int after, double hold, sandbox::Outcome* late) {
  sandbox::QuietRoom room;
  sched::GpuSlot holder_slot("0", "candidate Cat/holder"), late_slot("0", "candidate Cat/late");
  const fs::path ticks = dir / "ticks.txt";
  fs::remove(ticks);
  std::thread other([&] {
    *late = sandbox::run(cpu_first_ticker(ticks, &room, &late_slot, before, starts_cuda, after));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const sandbox::Outcome held = sandbox::run(quiet_worker(&holder_slot, &room, hold, true, asking));
  other.join();
  EXPECT_EQ(answer_of(held), "quiet");
  EXPECT_EQ(late->end, sandbox::Outcome::End::Exited) << late->describe();
  return longest_gap(ticks);
}

TEST_F(QuietJobsTest, ACpuOnlyJobRunsThroughAGpuOnlyHushButNotAHostBoundOne) {
  sandbox::Outcome late;
  EXPECT_LT(gap_during_hush(dir_, kGpuOnlyAsk, 75, false, 0, 1.0, &late), 0.5)
      << "frozen for a call that only queues GPU work before its CUDA started";
  EXPECT_EQ(late.frozen_seconds, 0);
  EXPECT_GE(gap_during_hush(dir_, R"({"ev":"quiet_wanted"})", 75, false, 0, 1.5, &late), 1.2)
      << "a host-bound call's hush left a CPU-only job running";
  EXPECT_GE(late.frozen_seconds, 1.2);
}

TEST_F(QuietJobsTest, AJobWhoseCudaStartsIsFrozenByEveryHushFromThenOn) {
  sandbox::Outcome late;
  EXPECT_GE(gap_during_hush(dir_, kGpuOnlyAsk, 1, true, 60, 1.5, &late), 1.2)
      << "a job that said cuda_next went on while the holder was quiet";
  EXPECT_EQ(answer_of(late), "ok") << "its cuda_next is answered on its request pipe";
  EXPECT_GE(late.frozen_seconds, 1.2);
}

}  // namespace
}  // namespace kbx
