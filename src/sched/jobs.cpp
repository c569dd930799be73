#include "sched/jobs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <thread>

#include "common/util.h"
#include "sched/gpu_slot.h"
#include "sched/reference.h"
#include "timing/case_timing.h"
#include "verdict/job_status.h"
#include "verdict/status.h"

namespace kbx::sched {
namespace fs = std::filesystem;

namespace {

/// Most warm parents started in one run; past it, candidates start cold.
constexpr int kMaxWarmStarts = 20;

store::Result blank_result(const store::Candidate& c, const suite::Task& t) {
  store::Result r;
  r.candidate_id = c.id;
  r.method = c.method;
  r.task = t.id();
  r.category = t.category;
  return r;
}

/// One run of a job: its result, unless the warm parent died meanwhile (then the result says
/// nothing about the candidate).
struct Attempt {
  store::Result result;
  bool parent_died = false;
};

Attempt attempt(JobContext& ctx, const store::Candidate& c, const suite::Task& t,
                const ReferenceCases& rc, std::int64_t* attempt_id, size_t lane,
                std::function<void()> on_lane_free = {}) {
  {
    std::lock_guard<std::mutex> lock(ctx.db_mu);
    *attempt_id = ctx.db.begin_attempt(ctx.run_id, c.id);
  }
  Attempt a;
  const auto parent = ctx.warm.get();
  const auto trusted_parent = ctx.trusted_warm ? ctx.trusted_warm->get() : nullptr;
  WorkerEnv env = ctx.cand_env;
  env.launcher = parent.get();
  env.trusted_launcher = trusted_parent.get();
  (ctx.finishing_from_exit ? env.on_worker_exited : env.on_slot_handed_back) =
      std::move(on_lane_free);
  if (!ctx.gpus.empty()) {
    const size_t k = lane % ctx.gpus.size();
    env.gpu = ctx.gpus[k];
    if (k < ctx.slot_cpus.size()) env.slot_cpu = ctx.slot_cpus[k];
  }
  const fs::path job_dir =
      env.work_dir / "jobs" / (t.category + "__" + t.name + "__" + std::to_string(c.id));
  try {
    a.result = evaluate(env, ctx.settings, t, c, rc, job_dir);
  } catch (const std::exception& e) {
    a.result = blank_result(c, t);
    a.result.status = verdict::status_name(verdict::Status::HarnessError);
    a.result.detail = e.what();
  }
  a.parent_died = parent && !parent->ok();
  a.result.run_id = ctx.run_id;
  return a;
}

/// Stores a job's verdict and closes its attempt.
void store_verdict(JobContext& ctx, const store::Result& r, std::int64_t attempt_id) {
  {
    std::lock_guard<std::mutex> lock(ctx.db_mu);
    if (ctx.db.add_result(r) == 0) {
      say(fmt::format("{}: already has a verdict in run {}; this one ({}) is dropped", r.task,
                      ctx.run_id, r.status));
    }
    if (attempt_id) ctx.db.end_attempt(attempt_id, r.status);
  }
  if (r.status == verdict::status_name(verdict::Status::HarnessError)) ++ctx.harness_errors;
  if (r.status != "passed") {
    // the detail's end too: a crash's stderr ends with the exception that says why
    ctx.progress.note(
        fmt::format("{}: {}: {}", r.task, r.status, head_and_tail(r.detail, 200, 400)));
  }
  ctx.progress.finished(r.task, r.status == "passed", r.status, r.wall_s);
}

void end_attempt(JobContext& ctx, std::int64_t attempt_id, const std::string& outcome) {
  std::lock_guard<std::mutex> lock(ctx.db_mu);
  ctx.db.end_attempt(attempt_id, outcome);
}

store::Result killed_harness(JobContext& ctx, const store::Candidate& c, const suite::Task& t,
                             int strikes) {
  store::Result r = blank_result(c, t);
  r.run_id = ctx.run_id;
  r.status = verdict::status_name(verdict::Status::KilledHarness);
  r.detail = fmt::format(
      "kbx or its warm parent died {} times while this candidate ran; it is not run again",
      strikes);
  return r;
}

int strikes_of(JobContext& ctx, const store::Candidate& c) {
  std::lock_guard<std::mutex> lock(ctx.db_mu);
  return ctx.db.strikes(ctx.run_id, c.id);
}

/// Runs a job alone until it has a verdict: again after each warm parent death, until it has
/// kStrikesToSkip strikes and is stored as killed_harness.
void run_alone(JobContext& ctx, const store::Candidate& c, const suite::Task& t,
               const ReferenceCases& rc) {
  while (true) {
    const int strikes = strikes_of(ctx, c);
    if (strikes >= kStrikesToSkip) {
      store_verdict(ctx, killed_harness(ctx, c, t, strikes), 0);
      return;
    }
    std::int64_t id = 0;
    Attempt a = attempt(ctx, c, t, rc, &id, 0);
    if (!a.parent_died) {
      store_verdict(ctx, a.result, id);
      return;
    }
    end_attempt(ctx, id, "warm_parent_died");
    ctx.progress.note(fmt::format("{}: the warm parent died while it ran; restarting it", c.task));
  }
}

/// The write end of the pipe the signal handler reports to; -1 when no guard is alive.
std::atomic<int> g_signal_pipe{-1};

/// What the handler passes on: the signal and who sent it.
struct SignalNote {
  int sig;
  pid_t sender;
  int code;
};

void on_signal(int sig, siginfo_t* info, void*) {
  const SignalNote note{sig, info ? info->si_pid : 0, info ? info->si_code : 0};
  const int fd = g_signal_pipe.load();
  if (fd < 0 || write(fd, &note, sizeof note) < 0) {
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

/// True when pid is this process or one of its descendants (walking /proc's parent links).
bool is_descendant(pid_t pid) {
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    if (pid == getpid()) return true;
    std::string stat;
    try {
      stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    } catch (const std::exception&) {
      return false;
    }
    const size_t paren = stat.rfind(')');  // the name may hold spaces and parentheses
    if (paren == std::string::npos) return false;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) != 2) return false;
    pid = ppid;
  }
  return false;
}

}  // namespace

InterruptGuard::InterruptGuard(store::Store& db, std::mutex& db_mu, std::int64_t run_id) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  if (pipe2(stop_, O_CLOEXEC) != 0) {
    close(fds[0]), close(fds[1]);
    return;
  }
  g_signal_pipe = fds[1];
  watcher_ = std::thread([this, &db, &db_mu, run_id, in = fds[0], out = fds[1]] {
    pollfd p[2] = {{in, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    while (poll(p, 2, -1) >= 0 || errno == EINTR) {
      if (p[1].revents) break;
      if (!(p[0].revents & POLLIN)) continue;
      SignalNote note{};
      if (read(in, &note, sizeof note) != sizeof note) continue;
      if (!is_descendant(note.sender)) {
        try {
          std::lock_guard<std::mutex> lock(db_mu);
          db.interrupt_attempts(run_id);
        } catch (const std::exception&) {  // dying all the same: the attempts stay open
        }
        say(
            fmt::format("interrupted by signal {}; the jobs that were running run again on the "
                        "next kbx eval",
                        note.sig));
      }
      signal(note.sig, SIG_DFL);
      raise(note.sig);
    }
    g_signal_pipe = -1;
    close(in);
    close(out);
  });
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

InterruptGuard::~InterruptGuard() {
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (stop_[1] >= 0 && write(stop_[1], "x", 1) < 0) {
  }
  if (watcher_.joinable()) watcher_.join();
  for (int fd : stop_) {
    if (fd >= 0) close(fd);
  }
}

void WarmParents::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  current_.reset();
}

WarmParents::WarmParents(bool enabled, std::vector<std::string> argv,
                         std::map<std::string, std::string> env, std::filesystem::path cwd,
                         std::string whose)
    : enabled_(enabled),
      argv_(std::move(argv)),
      env_(std::move(env)),
      cwd_(std::move(cwd)),
      whose_(std::move(whose)) {}

std::shared_ptr<sandbox::WarmParent> WarmParents::get() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!enabled_) return nullptr;
  if (current_ && current_->ok()) return current_;
  if (starts_ >= kMaxWarmStarts) {
    enabled_ = false;
    current_.reset();
    say(fmt::format("the warm parent of {} died {} times; they start cold from now on", whose_,
                    starts_));
    return nullptr;
  }
  if (current_) say(fmt::format("the warm parent of {} died; starting a new one", whose_));
  ++starts_;
  current_ = std::make_shared<sandbox::WarmParent>(argv_, env_, cwd_);
  if (!current_->ok()) {
    enabled_ = false;
    current_.reset();
    say(fmt::format("the warm parent of {} did not start; they start cold", whose_));
  }
  return current_;
}

std::vector<store::Candidate> skip_struck(JobContext& ctx, std::vector<store::Candidate> pending,
                                          const std::map<std::string, const suite::Task*>& tasks) {
  std::vector<store::Candidate> left;
  for (auto& c : pending) {
    const int strikes = strikes_of(ctx, c);
    if (strikes >= kStrikesToSkip) {
      store_verdict(ctx, killed_harness(ctx, c, *tasks.at(c.task), strikes), 0);
    } else {
      left.push_back(std::move(c));
    }
  }
  return left;
}

JobFeed::JobFeed(TaskDone on_task_done) : on_task_done_(std::move(on_task_done)) {}

void JobFeed::add(const std::string& task, ReferenceCases refs,
                  std::vector<const store::Candidate*> jobs) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!jobs.empty()) {
      const ReferenceCases* kept = &(refs_[task] = std::move(refs));
      open_jobs_[task] += jobs.size();
      for (const auto* c : jobs) ready_.push_back({c, kept});
    }
  }
  if (jobs.empty() && on_task_done_) on_task_done_(task, refs);
  changed_.notify_all();
}

void JobFeed::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
}

bool JobFeed::drain_due_locked() const {
  if (parked_.empty()) return false;
  if (closed_ && ready_.empty()) return true;
  return drain_asked_ || (parked_bound_ > 0 && parked_jobs_.size() >= parked_bound_);
}

std::optional<JobFeed::Item> JobFeed::next() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (!draining_ && drain_due_locked()) {
      draining_ = true;
      drain_asked_ = false;
      alone_.insert(alone_.end(), parked_.begin(), parked_.end());
      parked_.clear();
    }
    if (draining_) {
      if (alone_.empty() && !alone_running_) {
        draining_ = false;
        changed_.notify_all();
        continue;
      }
      if (!alone_.empty() && !alone_running_ && running_ == 0 && references_in_flight_ == 0) {
        Item item = alone_.front();
        alone_.pop_front();
        item.alone = true;
        alone_running_ = true;
        return item;
      }
    } else if (!ready_.empty()) {
      Item item = ready_.front();
      ready_.pop_front();
      ++running_;
      return item;
    } else if (closed_) {
      return std::nullopt;  // nothing parked either (drain_due_locked)
    }
    changed_.wait(lock);
  }
}

void JobFeed::job_ended(const std::string& task) {
  const ReferenceCases* task_done = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_jobs_.find(task);
    if (it == open_jobs_.end()) return;
    if (auto parked = parked_jobs_.find(task); parked != parked_jobs_.end()) {
      if (--parked->second == 0) parked_jobs_.erase(parked);
    }
    // while draining_ only the alone job is out (next() hands out nothing else)
    if (alone_running_) {
      alone_running_ = false;
      if (alone_.empty()) draining_ = false;  // the reference lanes go on
    } else if (running_ > 0) {
      --running_;
    }
    if (--it->second == 0) {
      open_jobs_.erase(it);
      task_done = &refs_.at(task);  // a map node: it stays put
    }
  }
  // The task's references stay in refs_ (small: case events); its files go.
  if (task_done && on_task_done_) on_task_done_(task, *task_done);
  changed_.notify_all();
}

void JobFeed::park(const Item& item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++parked_jobs_[item.candidate->task];
    Item kept = item;
    kept.alone = false;
    parked_.push_back(kept);
    if (running_ > 0) --running_;
  }
  changed_.notify_all();
}

void JobFeed::set_parked_bound(size_t tasks) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    parked_bound_ = tasks;
  }
  changed_.notify_all();
}

bool JobFeed::parked_hold_files() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (parked_jobs_.empty()) return false;
    if (!parked_.empty()) drain_asked_ = true;
  }
  changed_.notify_all();
  return true;
}

void JobFeed::reference_started() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return !draining_ && !drain_due_locked(); });
  ++references_in_flight_;
}

void JobFeed::reference_ended() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (references_in_flight_ > 0) --references_in_flight_;
  }
  changed_.notify_all();
}

size_t JobFeed::live_locked() const {
  size_t busy = 0;
  for (const auto& [task, open] : open_jobs_) {
    auto parked = parked_jobs_.find(task);
    busy += open > (parked == parked_jobs_.end() ? 0 : parked->second);
  }
  return busy;
}

size_t JobFeed::live() {
  std::lock_guard<std::mutex> lock(mu_);
  return live_locked();
}

void JobFeed::wait_until_live_at_most(size_t live) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return live_locked() <= live && !draining_ && !drain_due_locked(); });
}

LaneGate::Hold::Hold(LaneGate& gate) : gate_(gate) {
  std::unique_lock<std::mutex> lock(gate_.mu_);
  gate_.freed_.wait(lock, [&] { return gate_.free_ > 0; });
  --gate_.free_;
}

void LaneGate::Hold::release() {
  if (!held_.exchange(false)) return;
  {
    std::lock_guard<std::mutex> lock(gate_.mu_);
    ++gate_.free_;
  }
  gate_.freed_.notify_one();
}

int LaneGate::free_lanes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_;
}

namespace {

/// Whether a case of the result has the timing flag `flag`.
bool a_case_flagged(const store::Result& result, const char* flag) {
  for (const auto& c : result.cases) {
    if (timing::has_flag(c.timing_flags, flag)) return true;
  }
  return false;
}

}  // namespace

bool timed_contended(const store::Result& result) {
  return a_case_flagged(result, "contended");
}

bool timed_starved(const store::Result& result) {
  return a_case_flagged(result, "starved");
}

std::string again_alone_summary(const std::map<std::string, int>& outcomes) {
  int total = 0;
  std::string why;
  for (const char* outcome :
       {"contended_beside", "oom_beside", "starved_beside", "warm_parent_died", "retry"}) {
    const auto it = outcomes.find(outcome);
    if (it == outcomes.end() || it->second <= 0) continue;
    total += it->second;
    why += fmt::format("{}{} {}", why.empty() ? "" : ", ", outcome, it->second);
  }
  if (total == 0) return "";
  return fmt::format("{} job{} ran again alone ({})", total, total == 1 ? "" : "s", why);
}

std::string not_a_verdict_beside_others(const store::Result& result, bool parent_died) {
  // with several lanes the parent's death may be another job's doing
  if (parent_died) return "warm_parent_died";
  // a harness error is kbx's own; its random cases' judge out of the GPU's memory is the shared
  // memory's doing (session 38 on an H100: the dropout tasks' judges, beside 6 jobs)
  if (result.status == verdict::status_name(verdict::Status::HarnessError)) {
    return result.detail.find(verdict::kJudgeOutOfGpuMemory) != std::string::npos ? "oom_beside"
                                                                                  : "retry";
  }
  // out of the GPU's memory, which other jobs share (not the job's own host-memory limit)
  if (result.status == verdict::status_name(verdict::Status::Oom) &&
      !result.detail.starts_with(verdict::kOwnMemoryLimit)) {
    return "oom_beside";
  }
  // the same, in a GPU library's words: a failed allocation (cuBLAS's handle, session 35 on an
  // H100) or a library's internal error (cuDNN's, cuSOLVER's handle), which memory running out
  // gives too
  if ((result.status == verdict::status_name(verdict::Status::CudaError) ||
       result.status == verdict::status_name(verdict::Status::RuntimeError)) &&
      (out_of_gpu_memory(result.detail) || gpu_library_internal_error(result.detail))) {
    return "oom_beside";
  }
  // a neighbour's GPU work (a candidate's queue left running while it is frozen) slowed a timed
  // call: a hostile candidate could lower its method's other candidates' speedups that way
  if (timed_contended(result)) return "contended_beside";
  // a neighbour's memory may have left the job's library without workspace: a slower plan, kept
  // for the rest of the process (session 41: cuDNN's convolution, up to 9.5x on an H100)
  if (timed_starved(result)) return "starved_beside";
  return "";
}

namespace {

/// The words for an outcome of not_a_verdict_beside_others.
std::string why_again_alone(const std::string& outcome) {
  if (outcome == "warm_parent_died") return "the warm parent died while it ran";
  if (outcome == "oom_beside") return "out of the GPU's memory beside other jobs";
  if (outcome == "contended_beside") {
    return "a timed case met another process's GPU work that did not drain";
  }
  if (outcome == "starved_beside") {
    return "its process ran out of the GPU's memory before a timing ended (a library may keep "
           "a slower plan)";
  }
  return "kbx failed on it";
}

/// kbx itself failed on a job (no verdict stored): counted and said; the job runs again on the
/// next kbx eval.
void lane_failed(JobContext& ctx, const std::string& task, const std::exception& e) {
  ++ctx.harness_errors;
  say(fmt::format("{}: kbx failed on this job: {} (it runs again on the next kbx eval)", task,
                  e.what()));
}

}  // namespace

void run_jobs(JobContext& ctx, JobFeed& feed,
              const std::map<std::string, const suite::Task*>& tasks) {
  // With --finishing-jobs, a lane is a job from its start until its worker exits (or hands the
  // GPU's slot back): what follows, kbx's comparisons (and the files and teardown), runs beside
  // the lane's next job, which starts its CUDA, imports and small cases meanwhile (session 25 on
  // the H200: jobs spent 2.1 s on average after the hand-back, two lanes' worth of a warm run,
  // while the slot idled 30 s for want of a job ready to take it; session 26: 2.0 s on average
  // from the exit to the verdict).
  LaneGate gate(ctx.lanes);
  auto lane = [&](size_t k) {
    while (true) {
      LaneGate::Hold hold(gate);
      auto item = feed.next();
      if (!item) break;
      const store::Candidate& c = *item->candidate;
      if (item->alone) {  // no other job and no reference runs until it ends
        hold.release();
        try {
          run_alone(ctx, c, *tasks.at(c.task), *item->refs);
        } catch (const std::exception& e) {
          lane_failed(ctx, c.task, e);
        }
        feed.job_ended(c.task);
        continue;
      }
      std::int64_t id = 0;
      try {
        const suite::Task& t = *tasks.at(c.task);
        trace_pipeline("job_start", c.task);
        Attempt a = attempt(ctx, c, t, *item->refs, &id, k, [&hold, &c] {
          trace_pipeline("lane_free", c.task);
          hold.release();
        });
        trace_pipeline("job_end", c.task);
        if (const std::string why = not_a_verdict_beside_others(a.result, a.parent_died);
            !why.empty()) {
          end_attempt(ctx, id, why);
          ctx.progress.note(
              fmt::format("{}: {}; it runs again alone", c.task, why_again_alone(why)));
          feed.park(*item);
          continue;
        }
        store_verdict(ctx, a.result, id);
      } catch (const std::exception& e) {
        lane_failed(ctx, c.task, e);
        try {
          if (id) end_attempt(ctx, id, "lane_error");  // a fault of kbx, no strike for the job
        } catch (const std::exception&) {
        }
      }
      feed.job_ended(c.task);
    }
  };
  std::vector<std::thread> threads;
  int threads_n = std::max(1, ctx.lanes) + std::max(0, ctx.finishing_jobs);
  if (ctx.finishing_jobs > 0 && ctx.gpus.size() > 1) {  // as many threads for each GPU
    const int gpus = static_cast<int>(ctx.gpus.size());
    threads_n = (threads_n + gpus - 1) / gpus * gpus;
  }
  for (int k = 0; k < threads_n; ++k) threads.emplace_back(lane, size_t(k));
  for (auto& th : threads) th.join();
}

}  // namespace kbx::sched
