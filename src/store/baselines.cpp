#include "store/baselines.h"

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "common/util.h"
#include "store/statement.h"

namespace kbx::store {

CaseSamples cached_baseline(Store& db, const std::string& fingerprint, const std::string& task,
                            const std::string& task_hash, const std::string& kind) {
  Stmt q(db.handle(),
         "SELECT case_name, samples FROM baselines WHERE fingerprint=? AND task=? AND "
         "task_hash=? AND kind=?");
  q.bind(1, fingerprint).bind(2, task).bind(3, task_hash).bind(4, kind);
  CaseSamples out;
  while (q.step()) {
    out[q.text(0)] = nlohmann::json::parse(q.text(1)).get<std::vector<double>>();
  }
  return out;
}

void save_baseline(Store& db, const std::string& fingerprint, const std::string& task,
                   const std::string& task_hash, const std::string& kind,
                   const CaseSamples& samples) {
  Stmt del(db.handle(), "DELETE FROM baselines WHERE fingerprint=? AND task_hash=? AND kind=?");
  del.bind(1, fingerprint).bind(2, task_hash).bind(3, kind).step();
  Stmt ins(db.handle(),
           "INSERT INTO baselines(fingerprint, task, task_hash, kind, case_name, samples, "
           "measured_at) VALUES(?,?,?,?,?,?,?)");
  for (const auto& [name, values] : samples) {
    ins.reset();
    ins.bind(1, fingerprint).bind(2, task).bind(3, task_hash).bind(4, kind).bind(5, name);
    ins.bind(6, nlohmann::json(values).dump()).bind(7, utc_now_iso()).step();
  }
}

}  // namespace kbx::store
