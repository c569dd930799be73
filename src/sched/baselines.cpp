#include "sched/baselines.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "common/util.h"
#include "sched/progress.h"
#include "timing/case_timing.h"

namespace kbx::sched {
using nlohmann::json;

void use_compile_baselines(store::Store& db, const std::string& fp,
                           const std::vector<ReferenceJob>& jobs,
                           const std::map<std::string, store::CaseSamples>& cached,
                           std::map<std::string, ReferenceCases>& refs) {
  for (const auto& job : jobs) {
    auto it = refs.find(job.task->id() + "|ref");
    if (it == refs.end() || !it->second.error.empty()) continue;
    auto& cases = it->second.cases;
    if (!job.compile_baseline) {
      const auto& samples = cached.at(job.task->id());
      for (auto& ev : cases) {
        auto s = samples.find(ev.value("case", ""));
        if (s != samples.end()) ev["compile_ms"] = s->second, ev["compile_cached"] = true;
      }
      continue;
    }
    store::CaseSamples fresh;
    for (const auto& ev : cases) {
      if (ev.contains("compile_error")) {  // the report shows "-"; the log says why
        say(fmt::format("torch.compile baseline of {} {}: {}", job.task->id(), ev.value("case", ""),
                        ev.value("compile_error", "")));
      }
      auto samples = timing::compile_samples(ev);
      if (!samples.empty()) fresh[ev.value("case", "")] = std::move(samples);
    }
    if (!fresh.empty())
      store::save_baseline(db, fp, job.task->id(), job.task->hash, "compile", fresh);
  }
}

std::pair<std::string, std::string> eager_kinds(std::uint64_t seed, const std::string& worker) {
  // the hash's first 16 digits, then the timer's settings after it as they are
  const auto slash = worker.find('/');
  const std::string shown = worker.substr(0, std::min<std::size_t>(16, slash)) +
                            (slash == std::string::npos ? "" : worker.substr(slash));
  return {fmt::format("eager/seed={}/worker={}", seed, shown),
          fmt::format("eager_probe/seed={}/worker={}", seed, shown)};
}

std::string eager_worker_key(const std::string& worker_hash, int keep_outputs, bool eager_redraw) {
  std::string key = worker_hash;
  if (keep_outputs > 0) key += fmt::format("/keep_outputs={}", keep_outputs);
  if (eager_redraw) key += "/eager_redraw";
  return key;
}

namespace {
/// The baseline kind beside an eager events kind that holds its host-waiting cases.
std::string host_waits_kind(const std::string& events_kind) {
  return events_kind + "/host_waits";
}

/// The baseline kind beside an eager events kind that holds its cases with launch gaps.
std::string launch_gaps_kind(const std::string& events_kind) {
  return events_kind + "/launch_gaps";
}

/// A number among a reference case's phases, if it is there.
std::optional<double> phase_value(const nlohmann::json& ev, const char* name) {
  const auto phases = ev.find("phases");
  if (phases == ev.end() || !phases->is_object()) return std::nullopt;
  const auto value = phases->find(name);
  if (value == phases->end() || !value->is_number()) return std::nullopt;
  return value->get<double>();
}

/// Puts a cached mark of a case (one value) back among its event's phases as `phase`.
void restore_mark(const store::CaseSamples& marks, const std::string& name, const char* phase,
                  json& ev) {
  if (auto m = marks.find(name); m != marks.end() && !m->second.empty()) {
    ev["phases"][phase] = m->second.front();
  }
}
}  // namespace

EagerSamples cached_eager(store::Store& db, const std::string& fp, const suite::Task& task,
                          std::uint64_t seed, const std::string& worker) {
  const auto [events_kind, probe_kind] = eager_kinds(seed, worker);
  return {store::cached_baseline(db, fp, task.id(), task.hash, events_kind),
          store::cached_baseline(db, fp, task.id(), task.hash, probe_kind),
          store::cached_baseline(db, fp, task.id(), task.hash, host_waits_kind(events_kind)),
          store::cached_baseline(db, fp, task.id(), task.hash, launch_gaps_kind(events_kind))};
}

void use_eager_baselines(store::Store& db, const std::string& fp, const std::string& worker,
                         const std::vector<ReferenceJob>& jobs,
                         const std::map<std::string, EagerSamples>& cached,
                         std::map<std::string, ReferenceCases>& refs) {
  for (const auto& job : jobs) {
    auto it = refs.find(job.task->id() + "|ref");
    if (it == refs.end() || !it->second.error.empty()) continue;
    auto& cases = it->second.cases;
    const auto [events_kind, probe_kind] = eager_kinds(job.seed, worker);
    if (!job.time_eager) {
      const auto& [events, probe, host_waits, launch_gaps] = cached.at(job.task->id());
      for (auto& ev : cases) {
        if (ev.value("tier", "") != "full") continue;
        const std::string name = ev.value("case", "");
        if (auto e = events.find(name); e != events.end()) ev["eager_ms"] = e->second;
        if (auto p = probe.find(name); p != probe.end()) ev["eager_probe_ms"] = p->second;
        restore_mark(host_waits, name, "eager_host_loop_ms", ev);
        restore_mark(launch_gaps, name, "eager_launch_gaps", ev);
        ev["eager_cached"] = true;
      }
      continue;
    }
    store::CaseSamples events, probe, host_waits, launch_gaps;
    bool all_events = true, all_probe = true;
    for (const auto& ev : cases) {
      if (ev.value("tier", "") != "full") continue;
      const std::string name = ev.value("case", "");
      auto e = ev.value("eager_ms", std::vector<double>{});
      auto p = ev.value("eager_probe_ms", std::vector<double>{});
      all_events = all_events && !e.empty();
      all_probe = all_probe && !p.empty();
      if (!e.empty()) events[name] = std::move(e);
      if (!p.empty()) probe[name] = std::move(p);
      if (const auto host_loop = phase_value(ev, "eager_host_loop_ms")) {
        host_waits[name] = {*host_loop};
      }
      if (phase_value(ev, "eager_launch_gaps").value_or(0) > 0) launch_gaps[name] = {1.0};
    }
    if (!all_events || events.empty()) continue;  // a case failed or was not timed
    store::save_baseline(db, fp, job.task->id(), job.task->hash, events_kind, events);
    store::save_baseline(db, fp, job.task->id(), job.task->hash, probe_kind,
                         all_probe ? probe : store::CaseSamples{});
    store::save_baseline(db, fp, job.task->id(), job.task->hash, host_waits_kind(events_kind),
                         host_waits);
    store::save_baseline(db, fp, job.task->id(), job.task->hash, launch_gaps_kind(events_kind),
                         launch_gaps);
  }
}

namespace {
std::string footprint_kind(const std::string& device) {
  return "reference_bytes/device=" + device;
}
}  // namespace

std::uint64_t remembered_footprint(store::Store& db, const std::string& fp, const suite::Task& task,
                                   const std::string& device) {
  const auto samples = store::cached_baseline(db, fp, task.id(), task.hash, footprint_kind(device));
  auto it = samples.find("all");
  if (it == samples.end() || it->second.empty() || !(it->second.front() > 0)) return 0;
  return static_cast<std::uint64_t>(it->second.front());
}

void remember_footprint(store::Store& db, const std::string& fp, const suite::Task& task,
                        const std::string& device, std::uint64_t bytes) {
  store::save_baseline(db, fp, task.id(), task.hash, footprint_kind(device),
                       {{"all", {static_cast<double>(bytes)}}});
}

double cached_eager_seconds(const EagerSamples& samples) {
  double ms = 0;
  for (const auto& [name, values] : samples.events) {
    for (double v : values) ms += v;
  }
  return ms / 1000.0;
}

std::vector<std::string> heavy_tasks_first(const std::vector<std::string>& order,
                                           const std::map<std::string, double>& weight_seconds,
                                           double heavy_seconds) {
  if (order.size() < 3) return order;
  auto weight = [&](const std::string& task) {
    auto it = weight_seconds.find(task);
    return it == weight_seconds.end() ? 0.0 : it->second;
  };
  std::vector<std::string> heavy, light;
  for (size_t k = 1; k < order.size(); ++k) {
    (weight(order[k]) >= heavy_seconds ? heavy : light).push_back(order[k]);
  }
  std::stable_sort(heavy.begin(), heavy.end(), [&](const std::string& a, const std::string& b) {
    return weight(a) > weight(b);
  });
  std::vector<std::string> out{order.front()};
  out.insert(out.end(), heavy.begin(), heavy.end());
  out.insert(out.end(), light.begin(), light.end());
  return out;
}

}  // namespace kbx::sched
