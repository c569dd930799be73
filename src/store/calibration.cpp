#include "store/calibration.h"

#include <sqlite3.h>

#include "common/error.h"
#include "common/fingerprint.h"
#include "common/util.h"
#include "revision.h"
#include "store/statement.h"

namespace kbx::store {
using nlohmann::json;

namespace {

constexpr const char* kColumns =
    "SELECT id, fingerprint, device, gpu, measured_at, peaks, environment FROM calibration ";

std::map<std::string, double> parse_peaks(const std::string& text, std::int64_t id) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) {
    throw Error("calibration " + std::to_string(id) +
                ": column peaks is not a JSON object (run kbx calibrate again)");
  }
  std::map<std::string, double> peaks;
  for (const auto& [name, v] : j.items()) {
    if (v.is_number()) peaks[name] = v.get<double>();
  }
  return peaks;
}

Calibration read_row(const Stmt& q) {
  Calibration c;
  c.id = q.integer(0);
  c.fingerprint = q.text(1);
  c.device = q.text(2);
  c.gpu = q.text(3);
  c.measured_at = q.text(4);
  c.peaks = parse_peaks(q.text(5), c.id);
  c.environment_json = q.text(6);
  return c;
}

std::optional<Calibration> first_row(Stmt& q) {
  if (!q.step()) return std::nullopt;
  return read_row(q);
}

/// The value of a numeric field of a peak event; throws naming the event and field.
double number_field(const json& ev, const char* field) {
  if (!ev.contains(field) || !ev.at(field).is_number()) {
    throw Error(std::string("calibrate worker: peak event ") + ev.dump() + " has no numeric '" +
                field + "' (python/kbx_worker/calibrate_mode.py)");
  }
  return ev.at(field).get<double>();
}

}  // namespace

std::int64_t save_calibration(Store& db, const Calibration& c) {
  json peaks = json::object();
  for (const auto& [name, v] : c.peaks) peaks[name] = v;
  Stmt q(db.handle(),
         "INSERT INTO calibration(fingerprint, device, gpu, measured_at, peaks, environment) "
         "VALUES(?,?,?,?,?,?)");
  q.bind(1, c.fingerprint).bind(2, c.device).bind(3, c.gpu);
  q.bind(4, c.measured_at.empty() ? utc_now_iso() : c.measured_at).bind(5, peaks.dump());
  q.bind(6, c.environment_json).step();
  return sqlite3_last_insert_rowid(db.handle());
}

std::optional<Calibration> latest_calibration(Store& db, const std::string& fingerprint) {
  Stmt q(db.handle(), std::string(kColumns) + "WHERE fingerprint=? ORDER BY id DESC LIMIT 1");
  q.bind(1, fingerprint);
  return first_row(q);
}

std::optional<Calibration> latest_calibration_for_gpu(Store& db, const std::string& device,
                                                      const std::string& gpu) {
  Stmt q(db.handle(), std::string(kColumns) + "WHERE device=? AND gpu=? ORDER BY id DESC LIMIT 1");
  q.bind(1, device).bind(2, gpu);
  return first_row(q);
}

std::map<std::string, double> floor_peaks(Store& db, const Run& run) {
  const RunCalibration rc = calibration_for_run(db, run);
  if (!rc.calibration) return {};
  const bool by_fingerprint = rc.matched_by == "fingerprint";
  Stmt q(db.handle(), std::string(kColumns) +
                          (by_fingerprint ? "WHERE fingerprint=?" : "WHERE device=? AND gpu=?"));
  if (by_fingerprint) {
    q.bind(1, rc.fingerprint);
  } else {
    q.bind(1, rc.calibration->device).bind(2, rc.calibration->gpu);
  }
  std::map<std::string, double> peaks = rc.calibration->peaks;
  while (q.step()) {
    for (const auto& [name, value] : read_row(q).peaks) {
      if (peaks.count(name) && value > peaks[name]) peaks[name] = value;  // only peaks it names
    }
  }
  return peaks;
}

std::optional<Calibration> newest_calibration(Store& db, const std::string& device) {
  Stmt q(db.handle(), std::string(kColumns) + "WHERE device=? ORDER BY id DESC LIMIT 1");
  q.bind(1, device);
  return first_row(q);
}

RunCalibration calibration_for_run(Store& db, const Run& run) {
  RunCalibration rc;
  const json env = json::parse(run.environment_json, nullptr, false);
  if (!env.is_object()) return rc;  // a run that never started a worker
  const auto fields = fingerprint_fields(env);
  rc.fingerprint = env.contains("fingerprint") && env.at("fingerprint").is_string()
                       ? env.at("fingerprint").get<std::string>()
                       : fingerprint(fields);
  if ((rc.calibration = latest_calibration(db, rc.fingerprint))) {
    rc.matched_by = "fingerprint";
  } else if (!fields.gpu.empty() &&
             (rc.calibration = latest_calibration_for_gpu(db, run.device, fields.gpu))) {
    rc.matched_by = "gpu model";
  }
  return rc;
}

Calibration calibration_from_events(const std::vector<json>& events, const std::string& device) {
  Calibration c;
  c.device = device;
  json env = json::object(), skipped = json::object(), samples = json::object();
  bool saw_gpu = false;
  for (const auto& ev : events) {
    const std::string kind = ev.value("ev", "");
    if (kind == "hello") {
      env.update(ev);
    } else if (kind == "gpu") {
      saw_gpu = true;
      c.gpu = ev.value("name", "");
      env["calibrated_device"] = ev;
    } else if (kind == "peak") {
      const std::string name = ev.value("name", "");
      c.peaks[name] = number_field(ev, "value");
      samples[name] = static_cast<std::int64_t>(number_field(ev, "samples"));
    } else if (kind == "skipped") {
      skipped[ev.value("name", "")] = ev.value("reason", "");
    } else if (kind == "clocks_end") {
      env["clocks_end"] = ev.contains("clocks") ? ev.at("clocks") : json(nullptr);
    }
  }
  if (!saw_gpu) throw Error("calibrate worker: no 'gpu' event (it ended before measuring)");
  if (c.peaks.empty()) throw Error("calibrate worker: no 'peak' event (nothing was measured)");
  env.erase("ev");
  env.erase("pid");
  if (env.contains("clocks")) {  // as the worker started, before measuring; named as in runs
    env["clocks_start"] = env["clocks"];
    env.erase("clocks");
  }
  env["calibrated_device"].erase("ev");
  env["skipped"] = skipped;
  env["samples"] = samples;
  env["kbx_version"] = KBX_VERSION;
  env["kbx_revision"] = kbx::revision();
  // From the hello event alone, as a run's is, so that calibration and runs match.
  c.fingerprint = fingerprint(fingerprint_fields(env));
  env["fingerprint"] = c.fingerprint;
  c.environment_json = env.dump();
  return c;
}

void record_end_clocks(Store& db, std::int64_t run_id) {
  std::string text;
  {
    Stmt q(db.handle(), "SELECT environment FROM runs WHERE id=?");
    q.bind(1, run_id);
    if (!q.step()) return;
    text = q.text(0);
  }
  json env = json::parse(text, nullptr, false);
  if (!env.is_object() || !env.contains("clocks_start") || env.at("clocks_start").is_null()) return;
  env["clocks_end"] = gpu_clocks();
  db.set_run_environment(run_id, env.dump());
}

}  // namespace kbx::store
