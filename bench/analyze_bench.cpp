// kbx analyze's speed on a large database: writes a synthetic one of N result rows (default one
// million: 8 methods on 2 GPUs, 176 tasks in 15 categories, 4 refinement rounds, as many samples
// as it takes), unless the file already holds that many, then times reading its verdicts,
// computing every analysis and rendering them as JSON, best of a few repetitions. The figure is
// in bench/README.md.
//
//   kbx_analyze_bench [--rows N] [--db PATH] [--bootstrap B] [--repeat R]
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "common/util.h"
#include "report/analyze.h"
#include "store/statement.h"
#include "store/store.h"
#include "store/verdicts.h"

namespace fs = std::filesystem;
using kbx::store::Stmt;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// CPU seconds of the process so far, all threads (the machine may be shared: wall time then
/// depends on the neighbours, CPU time does not).
double cpu() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

constexpr int kMethods = 8, kGpus = 2, kTasks = 176, kCategories = 15, kRounds = 4;

std::int64_t result_rows(kbx::store::Store& db) {
  Stmt s(db.handle(), "SELECT COUNT(*) FROM results");
  return s.step() ? s.integer(0) : 0;
}

/// A deterministic verdict for kernel i: the category sets the odds (as in the paper, some
/// categories are much harder), later rounds are more often right.
struct Synthetic {
  std::uint64_t state;
  double uniform() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  }
};

void write_database(const fs::path& path, std::int64_t rows) {
  fs::remove(path);
  kbx::store::Store db(path);  // the schema, as kbx creates it
  sqlite3* h = db.handle();
  sqlite3_exec(h, "PRAGMA synchronous=OFF; BEGIN", nullptr, nullptr, nullptr);
  std::vector<std::int64_t> run_of(kMethods * kGpus);
  for (int m = 0; m < kMethods; ++m) {
    for (int g = 0; g < kGpus; ++g) {
      Stmt run(h,
               "INSERT INTO runs(run_key, method, device, track, seed, started_at, environment) "
               "VALUES(?, ?, 'cuda', 'triton', 1, '2026-12-15T00:00:00Z', ?)");
      run.bind(1, "k" + std::to_string(m * kGpus + g)).bind(2, "method" + std::to_string(m));
      run.bind(3,
               std::string(g == 0 ? "{\"gpu\": \"NVIDIA H200\"}" : "{\"gpu\": \"NVIDIA A100\"}"));
      run.step();
      run_of[m * kGpus + g] = static_cast<std::int64_t>(sqlite3_last_insert_rowid(h));
    }
  }
  Stmt cand(h,
            "INSERT INTO candidates(method, task, sha256, source, origin, imported_at, round, "
            "sample) VALUES(?, ?, ?, ?, 'bench', '2026-12-15T00:00:00Z', ?, ?)");
  Stmt res(h,
           "INSERT INTO results(run_id, candidate_id, method, task, category, status, speedup, "
           "created_at) VALUES(?, ?, ?, ?, ?, ?, ?, '2026-12-15T00:00:00Z')");
  Stmt grade(h, "INSERT INTO result_grades VALUES(?, ?, ?, ?, ?, ?, ?, NULL)");
  Synthetic rng{42};
  const std::int64_t per_sample = std::int64_t{kMethods} * kGpus * kTasks * kRounds;
  const std::int64_t samples = (rows + per_sample - 1) / per_sample;
  std::int64_t written = 0;
  for (std::int64_t s = 0; s < samples && written < rows; ++s) {
    for (int m = 0; m < kMethods && written < rows; ++m) {
      for (int t = 0; t < kTasks && written < rows; ++t) {
        const int category = t % kCategories;
        const std::string task = "Cat" + std::to_string(category) + "/task" + std::to_string(t);
        for (int r = 1; r <= kRounds && written < rows; ++r) {
          const std::string source =
              std::to_string(m) + task + std::to_string(s) + "r" + std::to_string(r);
          cand.reset();
          cand.bind(1, "method" + std::to_string(m)).bind(2, task).bind(3, kbx::sha256_hex(source));
          cand.bind(4, source).bind(5, std::int64_t{r}).bind(6, s).step();
          const auto cid = static_cast<std::int64_t>(sqlite3_last_insert_rowid(h));
          const double odds = 0.15 + 0.05 * category + 0.05 * r + 0.02 * m;
          const bool compiles = rng.uniform() < 0.6 + 0.08 * r;
          for (int g = 0; g < kGpus && written < rows; ++g, ++written) {
            const bool ok = compiles && rng.uniform() < odds;
            const std::string status = ok         ? "passed"
                                       : compiles ? "numerical_mismatch"
                                                  : "compile_error";
            res.reset();
            res.bind(1, run_of[m * kGpus + g]).bind(2, cid).bind(3, "method" + std::to_string(m));
            res.bind(4, task).bind(5, "Cat" + std::to_string(category)).bind(6, status);
            res.bind(7,
                     ok ? std::optional<double>(0.3 + 3 * rng.uniform() * (g + 1)) : std::nullopt);
            res.step();
            grade.reset();
            grade.bind(1, static_cast<std::int64_t>(sqlite3_last_insert_rowid(h)))
                .bind(2, status)
                .bind(3, status);
            grade.bind(4, status).bind(5, std::int64_t{ok}).bind(6, std::int64_t{ok});
            grade.bind(7, std::int64_t{ok}).step();
          }
        }
      }
    }
  }
  sqlite3_exec(h, "COMMIT", nullptr, nullptr, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t rows = 1000000;
  fs::path db_path = fs::temp_directory_path() / "kbx-analyze-bench.db";
  kbx::report::AnalyzeOptions options;
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rows") rows = std::stoll(argv[i + 1]);
    if (flag == "--db") db_path = argv[i + 1];
    if (flag == "--bootstrap") options.bootstrap = std::stoi(argv[i + 1]);
    if (flag == "--repeat") repeat = std::stoi(argv[i + 1]);
  }
  bool fresh = !fs::exists(db_path);
  if (!fresh) {
    kbx::store::Store db(db_path);
    fresh = result_rows(db) != rows;
  }
  if (fresh) {
    const double t0 = now();
    write_database(db_path, rows);
    std::printf("wrote %lld result rows to %s in %.1f s\n", static_cast<long long>(rows),
                db_path.c_str(), now() - t0);
  }
  double best_read = 1e9, best_analyze = 1e9, best_render = 1e9, best_total = 1e9;
  double cpu_read = 1e9, cpu_analyze = 1e9, cpu_total = 1e9;
  std::size_t bytes = 0;
  for (int k = 0; k < repeat; ++k) {
    const double t0 = now(), c0 = cpu();
    kbx::store::Verdicts verdicts;
    {
      kbx::store::Store db(db_path);
      kbx::store::read_verdicts(db, db_path.string(), verdicts);
    }
    const double t1 = now(), c1 = cpu();
    const auto tables = kbx::report::analyze(verdicts, options);
    const double t2 = now(), c2 = cpu();
    bytes = kbx::report::tables_json(tables, kbx::report::analyze_header(verdicts, options)).size();
    const double t3 = now(), c3 = cpu();
    best_read = std::min(best_read, t1 - t0);
    best_analyze = std::min(best_analyze, t2 - t1);
    best_render = std::min(best_render, t3 - t2);
    best_total = std::min(best_total, t3 - t0);
    cpu_read = std::min(cpu_read, c1 - c0);
    cpu_analyze = std::min(cpu_analyze, c2 - c1);
    cpu_total = std::min(cpu_total, c3 - c0);
  }
  std::printf(
      "%lld rows, bootstrap %d: wall: read %.3f s, analyses %.3f s, JSON %.3f s (%zu bytes), "
      "total %.3f s; CPU (all threads): read %.3f s, analyses %.3f s, total %.3f s (best of %d)\n",
      static_cast<long long>(rows), options.bootstrap, best_read, best_analyze, best_render, bytes,
      best_total, cpu_read, cpu_analyze, cpu_total, repeat);
  return 0;
}
