#include "sandbox/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "common/json_bounded.h"
#include "common/util.h"

extern char** environ;

namespace kbx::sandbox {
namespace {

constexpr int kRequestFd = 3;
constexpr int kEventFd = 4;
constexpr int kProbeFd = 5;
constexpr int kExitNoNetns = 121;
constexpr int kExitExecFailed = 122;

struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    read = fds[0];
    write = fds[1];
  }
};

bool enter_network_namespace() {
  if (unshare(CLONE_NEWNET) == 0) return true;
  // Without root: a user namespace first makes the network namespace possible.
  return unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0;
}

/// Keeps the head and the tail of a stream, counting everything.
struct Capture {
  explicit Capture(size_t keep_bytes) : keep(keep_bytes) {}
  size_t keep;
  std::string head, tail;
  std::uint64_t total = 0;
  void add(const char* data, size_t n) {
    total += n;
    size_t room = head.size() < keep ? keep - head.size() : 0;
    size_t take = std::min(room, n);
    head.append(data, take);
    if (n > take) {
      tail.append(data + take, n - take);
      if (tail.size() > 2 * keep) tail.erase(0, tail.size() - keep);
    }
  }
  std::string text() const {
    if (tail.empty()) return head;
    std::string t = tail.size() > keep ? tail.substr(tail.size() - keep) : tail;
    return head + fmt::format("\n[... {} bytes not kept ...]\n", total - head.size() - t.size()) +
           t;
  }
};

/// The child's side of a direct launch; argv and envp were built before the fork (nothing here
/// allocates: the supervisor has other threads).
[[noreturn]] void exec_child(const Spawn& s, const int fds[kLaunchFds], char* const argv[],
                             char* const envp[]) {
  setpgid(0, 0);
  // A confined child enters its namespaces itself (confine.py); the others may get a network
  // namespace here.
  if (s.confine.is_null() && s.limits.isolate_network && !enter_network_namespace())
    _exit(kExitNoNetns);
  // Lift the pipe ends above the targets first, so no dup2 below clobbers another one
  // (and dup2 onto itself, which would keep close-on-exec, cannot happen).
  int high[kLaunchFds];
  for (int k = 0; k < kLaunchFds; ++k) high[k] = fds[k] >= 0 ? fcntl(fds[k], F_DUPFD, 64) : -1;
  int devnull = open("/dev/null", O_RDONLY);
  dup2(devnull, 0);
  dup2(high[2], 1);
  dup2(high[3], 2);
  dup2(high[0], kRequestFd);
  dup2(high[1], kEventFd);
  if (high[4] >= 0) dup2(high[4], kProbeFd);
  if (high[5] >= 0) dup2(high[5], kInitPidFd);
  // dup2 clears close-on-exec on the targets; every other descriptor is closed.
  for (int fd = high[4] >= 0 ? kProbeFd + 1 : kEventFd + 1; fd < 1024; ++fd) {
    if (fd != kInitPidFd || high[5] < 0) close(fd);
  }
  rlimit core{0, 0};
  setrlimit(RLIMIT_CORE, &core);
  rlimit fsize{s.limits.max_file_bytes, s.limits.max_file_bytes};
  setrlimit(RLIMIT_FSIZE, &fsize);
  if (!s.cwd.empty() && chdir(s.cwd.c_str()) != 0) _exit(kExitExecFailed);
  execve(argv[0], argv, envp);
  _exit(kExitExecFailed);
}

/// Reads the init pid a confined child reports (a decimal number and a newline).
void read_init_pid(int fd, std::string& text, pid_t& pid) {
  char buf[32];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n > 0) text.append(buf, static_cast<size_t>(n));
  if (text.find('\n') != std::string::npos && pid == 0) {
    try {
      pid = static_cast<pid_t>(std::stol(text));
    } catch (const std::exception&) {
      pid = 0;
    }
  }
}

/// A confined worker's namespace init, held through a pidfd from the moment its pid is reported.
/// The pid alone is not enough: once the init has died and its waiter has reaped it, the number
/// may name another process by the time the supervisor kills the worker (at the waiter's end,
/// and again when the job is over).
class InitProcess {
 public:
  InitProcess() = default;
  InitProcess(const InitProcess&) = delete;
  InitProcess& operator=(const InitProcess&) = delete;
  ~InitProcess() {
    if (pidfd_ >= 0) close(pidfd_);
  }
  /// Takes hold of the reported init (once; a pid <= 0 is no init).
  void hold(pid_t pid) {
    if (pid <= 0 || held_) return;
    held_ = true;
    pid_ = pid;
    pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    by_pid_ = pidfd_ < 0 && errno == ENOSYS;  // a kernel before 5.3: the pid is all there is
  }
  /// SIGKILL to the init (and so to every process in its namespace), if it is still the one.
  void kill() const {
    if (pidfd_ >= 0) {
      syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
    } else if (by_pid_) {
      ::kill(pid_, SIGKILL);
    }
  }

 private:
  pid_t pid_ = 0;
  int pidfd_ = -1;
  bool held_ = false;
  bool by_pid_ = false;
};

/// Kills a worker: its namespace's init (and so every process in the namespace) and, while the
/// worker is not reaped, its group (the launchers kill the group when they reap: after that its
/// pid may name another group).
void kill_worker(pid_t pid, const InitProcess& init, bool reaped) {
  init.kill();
  if (!reaped) kill(-pid, SIGKILL);
}

/// The protocol error of a worker past Limits::max_events.
std::string event_count_over_limit(size_t max_events) {
  return fmt::format("the worker wrote more than {} events", max_events);
}

/// The protocol error of a worker past Limits::max_event_bytes.
std::string event_bytes_over_limit(const Limits& limits) {
  return fmt::format("the worker wrote more than {} MiB of events", limits.max_event_bytes >> 20);
}

/// Parses the complete event lines of buffer into out (and on_event), keeping an unfinished last
/// line; false, with nothing more parsed, once out holds max_events events or at the first line
/// that is no event (out.protocol_error says which). A worker's events after a malformed one are
/// never read: a status cannot depend on what an attacker writes once it broke the protocol.
bool parse_events(std::string& buffer, Outcome& out, double since_spawn,
                  const std::function<void(const nlohmann::json&)>& on_event, size_t max_events) {
  size_t start = 0;
  for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (out.events.size() >= max_events) {
      out.protocol_error = event_count_over_limit(max_events);
      return false;
    }
    std::string line = buffer.substr(start, nl - start);
    if (line.empty()) continue;
    try {
      auto ev = parse_json_bounded(line);
      if (!ev.is_object() || !ev.contains("ev")) throw std::runtime_error("no 'ev' field");
      if (on_event) on_event(ev);
      out.events.push_back(std::move(ev));
      out.event_seconds.push_back(since_spawn);
    } catch (const std::exception& e) {
      out.protocol_error = "malformed event: " + line.substr(0, 200) + " (" + e.what() + ")";
      return false;
    }
  }
  buffer.erase(0, start);
  return true;
}

}  // namespace

std::string Outcome::describe() const {
  switch (end) {
    case End::Exited: return fmt::format("exit {}", exit_code);
    case End::Signaled: return fmt::format("signal {} ({})", signal, strsignal(signal));
    case End::TimedOut: return fmt::format("timeout after {:.0f} s", wall_seconds);
    case End::SpawnFailed: return "could not start the worker";
  }
  return "?";
}

std::map<std::string, std::string> scrubbed_environment(
    const std::map<std::string, std::string>& overrides) {
  static const char* kExact[] = {"PATH",
                                 "LANG",
                                 "LC_ALL",
                                 "LD_LIBRARY_PATH",
                                 "CUDA_HOME",
                                 "CUDA_PATH",
                                 "CUDA_VISIBLE_DEVICES",
                                 "KBX_TENSOR_STAGING",
                                 "OMP_NUM_THREADS",
                                 "OPENBLAS_CORETYPE",
                                 "OPENBLAS_L2_SIZE",
                                 "TZ"};
  static const char* kPrefixes[] = {"NVIDIA_", "NCCL_", "TORCH_SYMM", "NVSHMEM_"};
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string key = entry.substr(0, eq);
    bool keep = false;
    for (const char* k : kExact) keep |= key == k;
    for (const char* p : kPrefixes) keep |= key.rfind(p, 0) == 0;
    if (keep) env[key] = entry.substr(eq + 1);
  }
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  if (!env.count("LANG")) env["LANG"] = "C.UTF-8";
  for (const auto& [k, v] : overrides) env[k] = v;
  return env;
}

namespace {

class DirectLauncher : public Launcher {
 public:
  pid_t launch(const Spawn& s, const int fds[kLaunchFds]) override {
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : s.env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    for (const auto& a : s.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) exec_child(s, fds, argv.data(), envp.data());
    if (pid > 0) setpgid(pid, pid);  // also done in the child; whichever runs first wins
    return pid;
  }
  bool try_reap(pid_t pid, int* status) override { return reap_ended(pid, status, false); }
  int reap(pid_t pid) override {
    int status = 0;
    reap_ended(pid, &status, true);
    return status;
  }

 private:
  /// Once pid has ended (waiting for it when `block`), kills what is left of its group while its
  /// zombie keeps the group's id, then reaps it; whether it was reaped.
  static bool reap_ended(pid_t pid, int* status, bool block) {
    siginfo_t info{};
    const int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
    int rc;
    while ((rc = waitid(P_PID, static_cast<id_t>(pid), &info, flags)) != 0 && errno == EINTR) {
    }
    if (rc != 0 || info.si_pid != pid) return false;
    kill(-pid, SIGKILL);
    return waitpid(pid, status, 0) == pid;
  }
};

}  // namespace

Launcher& direct_launcher() {
  static DirectLauncher launcher;
  return launcher;
}

namespace {

/// Where a job stands with its GPU slot (Spawn::slot).
struct SlotState {
  double wanted_at = -1;  ///< seconds after the spawn when the worker asked; -1: not yet
  size_t events_seen = 0;
  bool held = false;
  bool closed = false;         ///< handed back for good (Spawn::slot_handback_once)
  int member = -1;             ///< the job's id in Spawn::quiet; -1: none
  bool cuda_answered = false;  ///< "ok" sent for its "cuda_next" (Spawn::cpu_only_until_cuda)
  bool pinned = false;         ///< its main thread runs on Spawn::slot_cpu only
  cpu_set_t cpus_before{};     ///< the CPUs it had before
};

/// The slot holder's main thread (which launches its GPU work) runs at this nice value while it
/// holds the slot: a host-bound call (a sync inside, as masked_select's) is timed on the GPU's
/// clock from its first kernel to its last, so a holder kept off a core by other jobs' compiles
/// and file writes measured up to 8x slower on the H200 (16 cores, 14 busy workers). Needs
/// CAP_SYS_NICE (root, as on the GPU machines); without it nothing changes.
constexpr int kSlotNice = -10;

/// Calls fn with the id of every thread the worker has now (none when it is gone).
void for_each_thread(pid_t worker, const std::function<void(pid_t)>& fn) {
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(worker) + "/task", ec)) {
    pid_t tid = 0;
    const std::string name = entry.path().filename().string();
    if (std::from_chars(name.data(), name.data() + name.size(), tid).ec == std::errc() && tid > 0) {
      fn(tid);
    }
  }
}

/// Sets the holder's main thread to kSlotNice while it holds the slot; at the release, every
/// thread it has to 0 (the threads it made meanwhile inherited kSlotNice: after the slot they
/// would run above the other jobs).
void set_slot_priority(pid_t worker, bool holding) {
  if (worker <= 0) return;
  if (holding) {
    setpriority(PRIO_PROCESS, static_cast<id_t>(worker), kSlotNice);
  } else {
    for_each_thread(worker,
                    [](pid_t tid) { setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 0); });
  }
}

/// Gives every thread of the worker but `keep` (0: none) the CPUs `cpus`. A thread inherits the
/// CPUs of the thread that makes it: one made while the holder's main thread is pinned (as
/// OpenMP's pool, made at a process's first parallel call, often inside a timed case's warm-up)
/// would otherwise run on the slot's one CPU, its whole pool sharing it with the main thread
/// (bench/pinned_pool.py: five 400x400 eig took 61 s so against 0.43 s, on 2 CPUs); whether the
/// pool is made before or after the pin depends on what the worker ran before the slot.
void spread_threads(pid_t worker, const cpu_set_t& cpus, pid_t keep) {
  for_each_thread(worker, [&](pid_t tid) {
    if (tid != keep) sched_setaffinity(tid, sizeof cpus, &cpus);  // one that ended: ESRCH
  });
}

/// Pins the slot holder's main thread to Spawn::slot_cpu while it holds the slot (its CPUs as
/// they were are kept in `saved` and given back at the release, to every thread it has then).
void set_slot_cpu(pid_t worker, int cpu, bool holding, cpu_set_t& saved, bool& pinned) {
  if (worker <= 0 || cpu < 0 || cpu >= CPU_SETSIZE) return;
  if (holding && !pinned) {
    // The slot's CPU may be outside the worker's set: kbx keeps it for the holders alone.
    if (sched_getaffinity(worker, sizeof saved, &saved) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pinned = sched_setaffinity(worker, sizeof one, &one) == 0;
  } else if (!holding && pinned) {
    spread_threads(worker, saved, 0);
    pinned = false;
  }
}

/// Releases the job's slot; a quiet host it had asked for ends first.
void release_slot(const Spawn& s, SlotState& st) {
  if (!st.held) return;
  if (s.quiet) s.quiet->set_holding(st.member, false);
  s.slot->release();
  st.held = false;
}

/// Writes a line on the worker's request pipe (non-blocking: a worker that does not read its
/// answers cannot stall the supervisor; what does not fit is dropped).
void answer(int request_fd, const char* line) {
  if (request_fd < 0) return;
  [[maybe_unused]] const long n = write_without_sigpipe(request_fd, line, strlen(line));
}

/// Notes the worker's "slot_wanted" among the events that came since the last call, and, where
/// the spawn allows it, its "slot_done": the slot is released and may be asked for again. A
/// holder's "quiet_wanted" is answered on its request pipe ("quiet" or "loud"), "quiet_done" ends
/// it.
void note_slot_events(const Spawn& s, Outcome& out, SlotState& st, double t0, pid_t worker,
                      int request_fd) {
  for (; st.events_seen < out.events.size(); ++st.events_seen) {
    const std::string ev = out.events[st.events_seen].value("ev", "");
    if ((ev == "cuda_next" || ev == "slot_wanted") && s.quiet) s.quiet->gpu_from_now(st.member);
    if (ev == "cuda_next" && !st.cuda_answered) {
      st.cuda_answered = true;  // once: a frozen worker reads it when thawed
      answer(request_fd, "ok\n");
    } else if (ev == "slot_wanted" && st.closed) {
      out.slot_asked_after_close = true;  // never granted: the caller ends the worker
    } else if (st.wanted_at < 0 && ev == "slot_wanted") {
      st.wanted_at = monotonic_seconds() - t0;
    } else if (ev == "slot_done" && (s.slot_handback || s.slot_handback_once) && st.held) {
      // A candidate's interim hand-back (--slot-at launch, between its full-size calls): it may
      // ask again; no timing may come before the next grant (Outcome::slot_gaps).
      const nlohmann::json& done = out.events[st.events_seen];
      const bool again = !s.slot_handback && done.contains("again") && done["again"].is_boolean() &&
                         done["again"].get<bool>();
      set_slot_priority(worker, false);
      set_slot_cpu(worker, s.slot_cpu, false, st.cpus_before, st.pinned);
      release_slot(s, st);
      st.wanted_at = -1;
      if (again) {
        out.slot_gaps.emplace_back(static_cast<int>(st.events_seen) + 1, -1);
      } else if (!s.slot_handback) {
        st.closed = true;
        out.slot_released_after = static_cast<int>(st.events_seen) + 1;
        if (s.on_slot_handed_back) s.on_slot_handed_back();
      }
    } else if (ev == "quiet_wanted") {
      // After the case's warm-up, before its timed batches: threads the warm-up made run where
      // the worker's threads ran before the slot, not on the slot's CPU.
      if (st.pinned) spread_threads(worker, st.cpus_before, worker);
      // Unless it says its call only queues GPU work, kbx's comparisons wait the hush out too
      // (a holder that says so wrongly only lets kbx's CPU work run beside its own timing).
      const nlohmann::json& asked = out.events[st.events_seen];
      const bool host_bound = !(asked.contains("host_bound") && asked["host_bound"].is_boolean() &&
                                !asked["host_bound"].get<bool>());
      // A holder that asks again while its hush lasts (its next timed case) keeps it: "still"
      // tells its timer that no other job ran since its last settle. A hush past half its cap
      // starts anew ("quiet", the timer settles again), so that the cap does not end it inside
      // a later case's batches.
      double held_for = s.quiet && st.held ? s.quiet->hush_seconds(st.member) : -1;
      if (held_for >= s.quiet_renew_after_seconds) {
        s.quiet->unhush(st.member);
        held_for = -1;
      }
      const bool quiet = s.quiet && st.held && s.quiet->hush(st.member, host_bound);
      answer(request_fd, !quiet ? "loud\n" : held_for >= 0 ? "still\n" : "quiet\n");
    } else if (ev == "quiet_done" && s.quiet) {
      s.quiet->unhush(st.member);
    }
  }
}

/// Whether an event named `name` is among those from `scanned` on (which moves past them).
bool said(const Outcome& out, const char* name, size_t& scanned) {
  for (; scanned < out.events.size(); ++scanned) {
    if (out.events[scanned].value("ev", "") == name) return ++scanned, true;
  }
  return false;
}

/// Writes all of `text` on the (non-blocking) request pipe, waiting for room; false when the
/// worker closed its end or stays full for 10 s.
bool write_all(int fd, const std::string& text) {
  size_t sent = 0;
  const double until = monotonic_seconds() + 10;
  while (sent < text.size() && monotonic_seconds() < until) {
    const long n = write_without_sigpipe(fd, text.data() + sent, text.size() - sent);
    if (n > 0) sent += static_cast<size_t>(n);
    if (n < 0 && errno != EAGAIN) return false;
    if (n <= 0) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 100);
    }
  }
  return sent == text.size();
}

/// Gives the slot to a worker that asked for it once it is free: "go" on its request pipe.
/// Returns the seconds it waited when it was granted now (added to its time limit), else 0.
double grant_slot(const Spawn& s, SlotState& st, Outcome& out, int request_fd, double t0,
                  pid_t worker) {
  if (st.wanted_at < 0 || st.held || !s.slot->try_acquire()) return 0;
  st.held = true;
  if (s.quiet) s.quiet->set_holding(st.member, true);  // never frozen while it holds a slot
  set_slot_priority(worker, true);  // before "go": its slot work starts at the higher priority
  set_slot_cpu(worker, s.slot_cpu, true, st.cpus_before, st.pinned);
  if (out.slot_granted_after < 0) out.slot_granted_after = static_cast<int>(out.events.size());
  if (!out.slot_gaps.empty() && out.slot_gaps.back().second < 0)
    out.slot_gaps.back().second = static_cast<int>(out.events.size());
  const double waited = monotonic_seconds() - t0 - st.wanted_at;
  out.slot_wait_seconds += waited;
  static const char kGo[] = "go\n";
  // The worker has read its whole request before asking, so the pipe has room for 3 bytes; a
  // worker that closed its end gets nothing and ends without the slot's work.
  [[maybe_unused]] const long n = write_without_sigpipe(request_fd, kGo, sizeof kGo - 1);
  return waited;
}

}  // namespace

Outcome run(const Spawn& spawn, const std::function<void(const nlohmann::json&)>& on_event,
            Launcher& launcher) {
  Outcome out;
  Spawn s = spawn;
  s.limits.isolate_network = s.limits.isolate_network && abilities().network_namespace;
  out.network_isolated = s.limits.isolate_network;
  Pipe req, ev, sout, serr;
  std::optional<Pipe> probe, init;
  if (s.probe_pipe) probe.emplace();
  if (!s.confine.is_null()) {
    init.emplace();
    s.confine["init_pid_fd"] = kInitPidFd;
  }
  const int child_fds[kLaunchFds] = {req.read,
                                     ev.write,
                                     sout.write,
                                     serr.write,
                                     probe ? probe->write : -1,
                                     init ? init->write : -1};
  pid_t pid = launcher.launch(s, child_fds);
  // The job's clock starts at its fork: a warm parent still importing (minutes on a loaded
  // machine) is not the worker's time.
  const double t0 = monotonic_seconds();
  for (int fd : child_fds) {
    if (fd >= 0) close(fd);
  }
  if (pid < 0) {
    close(req.write), close(ev.read), close(sout.read), close(serr.read);
    if (probe) close(probe->read);
    if (init) close(init->read);
    out.end = Outcome::End::SpawnFailed;
    return out;
  }

  SlotState slot_state;
  if (s.quiet) {
    const std::string cgroup = s.confine.is_object() ? s.confine.value("cgroup", "") : "";
    slot_state.member = s.cpu_only_until_cuda && s.slot ? s.quiet->join_cpu_only(pid, cgroup)
                                                        : s.quiet->join(pid, cgroup);
  }
  fcntl(req.write, F_SETFL, O_NONBLOCK);
  size_t request_sent = 0;
  int request_fd = req.write;
  const bool keep_request_open = s.slot || s.more_work;
  if (keep_request_open) s.request += '\n';  // one line; fd 3 stays open for "go", more work
  if (s.request.empty()) close(request_fd), request_fd = -1;
  bool request_done = request_fd < 0;

  Capture cap_out(s.limits.keep_output_bytes), cap_err(s.limits.keep_output_bytes);
  std::string ev_buffer;
  int open_fds[5] = {ev.read, sout.read, serr.read, probe ? probe->read : -1,
                     init ? init->read : -1};
  std::string init_text;
  InitProcess init_process;
  bool exited = false, timed_out = false, ended_by_kbx = false, events_refused = false;
  size_t done_scan = 0, more_scan = 0;
  int status = 0;
  char buf[65536];
  // The process that runs the worker's code: its namespace's init when confined.
  const auto worker_pid = [&] { return out.init_pid > 0 ? out.init_pid : pid; };
  while (true) {
    if (!exited && launcher.try_reap(pid, &status)) {
      exited = true;
      out.exited_seconds = monotonic_seconds() - t0;
      kill_worker(pid, init_process, true);             // stragglers would hold the pipes open
      if (s.quiet) s.quiet->unhush(slot_state.member);  // a quiet host ends with its worker
    }
    if (s.slot && !exited && request_fd >= 0) {
      s.limits.wall_seconds += grant_slot(s, slot_state, out, request_fd, t0, worker_pid());
    }
    const double elapsed = monotonic_seconds() - t0;
    const double waiting = slot_state.wanted_at >= 0 && !slot_state.held
                               ? elapsed - slot_state.wanted_at
                               : 0;  // for the slot: not the worker's time either
    // Frozen while another job's host-bound calls were timed: not the worker's time either.
    const double frozen = s.quiet ? s.quiet->frozen_seconds(slot_state.member) : 0;
    if (s.quiet && slot_state.held) s.quiet->expire(slot_state.member);
    if (!exited && elapsed - waiting - frozen > s.limits.wall_seconds) {
      kill_worker(pid, init_process, false);
      timed_out = true;
    }
    std::vector<pollfd> fds;
    for (int fd : open_fds) {
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
    if (request_fd >= 0 && !request_done) fds.push_back({request_fd, POLLOUT, 0});
    if (fds.empty() && exited) break;
    if (fds.empty()) {
      // Nothing left to read, the worker still running (it closed every pipe): its end is
      // awaited here, its time limit still counting (a blocking reap would let it run on).
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const bool waiting_for_slot = slot_state.wanted_at >= 0 && !slot_state.held;
    int ready = poll(fds.data(), fds.size(), exited ? 200 : waiting_for_slot ? 5 : 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready == 0 && exited) break;  // the process is gone; what is left unread is lost
    for (const auto& p : fds) {
      if (!p.revents) continue;
      if (p.fd == request_fd) {
        const long n = write_without_sigpipe(request_fd, s.request.data() + request_sent,
                                             s.request.size() - request_sent);
        if (n > 0) request_sent += static_cast<size_t>(n);
        if (n < 0 && errno != EAGAIN) request_sent = s.request.size();
        if (request_sent >= s.request.size()) {
          request_done = true;
          if (!keep_request_open) close(request_fd), request_fd = -1;
        }
        continue;
      }
      if (init && p.fd == init->read) {
        const size_t before = init_text.size();
        read_init_pid(p.fd, init_text, out.init_pid);
        init_process.hold(out.init_pid);
        if (init_text.size() == before || init_text.size() > 64) {
          close(init->read);
          for (int& fd : open_fds) {
            if (fd == p.fd) fd = -1;
          }
        }
        continue;
      }
      ssize_t n = read(p.fd, buf, sizeof buf);
      if (n <= 0) {
        for (int& fd : open_fds) {
          if (fd == p.fd) close(fd), fd = -1;
        }
        continue;
      }
      if (p.fd == ev.read) {
        out.event_bytes += static_cast<std::uint64_t>(n);
        const bool bytes_ok = out.event_bytes <= s.limits.max_event_bytes;
        if (bytes_ok) ev_buffer.append(buf, static_cast<size_t>(n));
        if (!bytes_ok) out.protocol_error = event_bytes_over_limit(s.limits);
        if (!bytes_ok || !parse_events(ev_buffer, out, monotonic_seconds() - t0, on_event,
                                       s.limits.max_events)) {
          // Events without end, or one that is no event: the worker is ended, the rest of its
          // events never read.
          kill_worker(pid, init_process, exited);
          events_refused = true;
          ev_buffer.clear();
          for (int& fd : open_fds) {
            if (fd == p.fd) close(fd), fd = -1;
          }
          continue;
        }
        if (s.slot) note_slot_events(s, out, slot_state, t0, worker_pid(), request_fd);
        if (out.slot_asked_after_close && !exited && !ended_by_kbx) {
          // It would wait for a "go" that never comes, holding its lane until the time limit.
          kill_worker(pid, init_process, false);
          ended_by_kbx = true;
          release_slot(s, slot_state);
        }
        if (s.more_work && !exited && request_fd >= 0 && request_done &&
            said(out, "more_wanted", more_scan)) {
          const double asked = monotonic_seconds();
          const MoreWork more = s.more_work();
          s.limits.wall_seconds += monotonic_seconds() - asked + more.seconds;
          s.limits.max_events += spawn.limits.max_events;
          s.limits.max_event_bytes += spawn.limits.max_event_bytes;
          if (!write_all(request_fd, (more.line.empty() ? "end" : more.line) + "\n")) {
            kill_worker(pid, init_process, false);  // it would wait for a line that never comes
            ended_by_kbx = true;
          }
        }
        if (s.end_at_done && !exited && !ended_by_kbx && said(out, "done", done_scan)) {
          kill_worker(pid, init_process, false);
          ended_by_kbx = true;
          release_slot(s, slot_state);
        }
      } else if (probe && p.fd == probe->read) {
        const size_t room = kMaxProbeBytes - std::min(kMaxProbeBytes, out.probe_bytes.size());
        const size_t keep = std::min(room, static_cast<size_t>(n));
        out.probe_bytes.append(buf, keep);
        if (keep < static_cast<size_t>(n)) out.probe_truncated = true;
      } else if (p.fd == sout.read) {
        cap_out.add(buf, static_cast<size_t>(n));
      } else {
        cap_err.add(buf, static_cast<size_t>(n));
      }
    }
  }
  for (int fd : open_fds) {
    if (fd >= 0) close(fd);
  }
  if (request_fd >= 0) close(request_fd);
  if (!exited) {  // the loop ended on an error of poll(): the worker is not watched any more
    kill_worker(pid, init_process, false);
    status = launcher.reap(pid);
    out.exited_seconds = monotonic_seconds() - t0;
  }
  kill_worker(pid, init_process, true);
  release_slot(s, slot_state);  // only now: no process of the job is left
  if (s.quiet) {
    out.frozen_seconds = s.quiet->frozen_seconds(slot_state.member);
    s.quiet->leave(slot_state.member);
  }
  if (!events_refused) {
    ev_buffer += '\n';
    parse_events(ev_buffer, out, monotonic_seconds() - t0, on_event, s.limits.max_events);
  }
  out.wall_seconds = monotonic_seconds() - t0;
  out.stdout_kept = cap_out.text();
  out.stderr_kept = cap_err.text();
  out.stdout_bytes = cap_out.total;
  out.stderr_bytes = cap_err.total;
  if (timed_out) {
    out.end = Outcome::End::TimedOut;
  } else if (ended_by_kbx && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    out.end = Outcome::End::Exited;  // our kill (at its "done", or a refused ask), not its own end
    out.exit_code = 0;
  } else if (WIFSIGNALED(status)) {
    out.end = Outcome::End::Signaled;
    out.signal = WTERMSIG(status);
  } else {
    out.end = Outcome::End::Exited;
    out.exit_code = WEXITSTATUS(status);
    if (out.exit_code == kExitExecFailed) out.end = Outcome::End::SpawnFailed;
  }
  return out;
}

}  // namespace kbx::sandbox
