#include "sched/suite_check.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "common/error.h"
#include "common/util.h"
#include "sched/progress.h"
#include "sched/reference.h"
#include "verdict/case_judge.h"

namespace kbx::sched {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path role(const fs::path& dir, const std::string& c, const char* r) {
  return dir / (c + "." + r + ".kbt");
}

bool files_equal(const fs::path& a, const fs::path& b) {
  if (!fs::exists(a) || !fs::exists(b)) return fs::exists(a) == fs::exists(b);
  const auto fa = verdict::read_tensor_file(a);
  const auto fb = verdict::read_tensor_file(b);
  if (fa.tensors.size() != fb.tensors.size()) return false;
  for (size_t i = 0; i < fa.tensors.size(); ++i) {
    if (fa.tensors[i].name != fb.tensors[i].name || !fa.tensors[i].bitwise_equal(fb.tensors[i])) {
      return false;
    }
  }
  return true;
}

/// Same outputs and same inputs-after-the-call in two reference runs of a case.
bool same_outputs(const fs::path& a, const fs::path& b, const std::string& name) {
  return files_equal(role(a, name, "ref"), role(b, name, "ref")) &&
         files_equal(role(a, name, "ref_after"), role(b, name, "ref_after"));
}

/// Output file with the first input tensor in place of the first output (rest zeros).
verdict::TensorFile identity_outputs(const verdict::TensorFile& ref,
                                     const verdict::TensorFile& in) {
  verdict::TensorFile out;
  for (size_t i = 0; i < ref.tensors.size(); ++i) {
    verdict::Tensor t = verdict::zeros_like(ref.tensors[i]);
    if (i == 0 && !in.tensors.empty()) {
      std::string name = t.name;
      t = in.tensors.front();
      t.name = name;
    }
    out.tensors.push_back(std::move(t));
  }
  return out;
}

verdict::TensorFile zero_outputs(const verdict::TensorFile& ref) {
  verdict::TensorFile out;
  for (const auto& t : ref.tensors) out.tensors.push_back(verdict::zeros_like(t));
  return out;
}

std::vector<std::string> check_task(const suite::Task& t, const ReferenceCases& a,
                                    const ReferenceCases& b, const ReferenceCases& c,
                                    const WorkerEnv& env, std::vector<json>* judge_jobs) {
  std::vector<std::string> problems;
  for (const auto* rc : {&a, &b, &c}) {
    if (!rc->error.empty()) problems.push_back("reference failed: " + rc->error);
  }
  if (!problems.empty()) return problems;
  if (a.cases.empty()) return {"no cases in the tiers run on " + env.device};
  bool zero_fails = false, ident_fails = false, varies = false, deterministic_cases = false;
  for (const auto& ev : a.cases) {
    const std::string name = ev.value("case", "");
    const bool random = ev.value("random", false);
    if (t.contract.tolerance == suite::Tolerance::Shadow && !random && !ev.value("shadow", false)) {
      problems.push_back("case " + name + ": no float64 shadow");
    }
    if (!ev.value("saved", true)) continue;  // a full-size case: it ran, and that is the check
    const bool in_b = std::any_of(b.cases.begin(), b.cases.end(),
                                  [&](const json& e) { return e.value("case", "") == name; });
    if (in_b) {
      if (!files_equal(role(a.dir, name, "in"), role(b.dir, name, "in"))) {
        problems.push_back("case " + name + ": inputs differ for the same seed");
      }
      if (!random && !same_outputs(a.dir, b.dir, name)) {
        // Not bit-identical (atomics on the GPU): the rerun must still pass as a candidate would.
        fs::copy_file(role(b.dir, name, "ref"), role(b.dir, name, "cand"),
                      fs::copy_options::overwrite_existing);
        if (fs::exists(role(b.dir, name, "ref_after"))) {
          fs::copy_file(role(b.dir, name, "ref_after"), role(b.dir, name, "cand_after"),
                        fs::copy_options::overwrite_existing);
        }
        auto v2 = verdict::judge_case({a.dir / name, b.dir / name, ev, ev}, t.contract, env.device);
        if (v2.status != verdict::Status::Passed) {
          problems.push_back("case " + name + ": not deterministic for a seed (" + v2.detail + ")");
        }
      }
    }
    const bool in_c = std::any_of(c.cases.begin(), c.cases.end(),
                                  [&](const json& e) { return e.value("case", "") == name; });
    if (in_c && !same_outputs(a.dir, c.dir, name)) varies = true;
    if (random) {
      judge_jobs->push_back({{"case", t.id() + "|" + name},
                             {"task_dir", fs::absolute(t.dir).string()},
                             {"entry", t.entry},
                             {"inputs", fs::absolute(role(a.dir, name, "in")).string()},
                             {"call", ev.at("call")},
                             {"structure", ev.value("structure", "single")},
                             {"out_a", fs::absolute(role(a.dir, name, "ref")).string()},
                             {"out_b", fs::absolute(role(b.dir, name, "ref")).string()}});
      continue;
    }
    deterministic_cases = true;
    verdict::CaseFiles f{a.dir / name, a.dir / name, ev, ev};
    const auto ref = verdict::reference_outputs(f);
    const auto in = verdict::read_tensor_file(role(a.dir, name, "in"));
    if (verdict::judge_synthetic(f, zero_outputs(ref), t.contract).status !=
        verdict::Status::Passed)
      zero_fails = true;
    if (verdict::judge_synthetic(f, identity_outputs(ref, in), t.contract).status !=
        verdict::Status::Passed)
      ident_fails = true;
  }
  if (!varies) problems.push_back("outputs never change with the seed (degenerate task)");
  if (deterministic_cases && !zero_fails)
    problems.push_back("an all-zeros candidate passes every case");
  if (deterministic_cases && !ident_fails)
    problems.push_back("an identity candidate passes every case");
  return problems;
}

}  // namespace

int run_suite_check(const CheckOptions& o) {
  const suite::Suite suite = suite::load_suite(o.suite_root);
  int bad = static_cast<int>(suite.errors.size());
  for (const auto& e : suite.errors) std::printf("FAIL manifest: %s\n", e.c_str());
  auto tasks = suite::select(suite, o.category, o.tasks);
  if (tasks.empty()) throw Error("no tasks selected");
  WorkerEnv env;
  env.python = find_python(o.python);
  env.device = o.device;
  env.timeout_s = o.timeout_s;
  const char* tmp = std::getenv("KBX_WORK");
  fs::path root = o.work_root.empty() ? fs::path(tmp && *tmp ? tmp : "/tmp") : o.work_root;
  env.work_dir = root / fmt::format("kbx-check-{}-{}", getpid(), random_seed() % 100000);
  fs::create_directories(env.work_dir);
  std::fprintf(stderr, "kbx: checking %zu tasks on %s with %s\n", tasks.size(), o.device.c_str(),
               env.python.path.c_str());

  const std::uint64_t seed1 = random_seed(), seed2 = seed1 ^ 0x5DEECE66DULL;
  const auto tiers = tiers_for(o.device);
  const std::vector<std::string> repeat_tiers = {"edge", "small"};  // full shapes run once
  std::vector<json> judge_jobs;
  std::map<std::string, std::vector<std::string>> problems;
  // Tasks go in chunks so that the tensor files of only a few tasks exist at a time.
  const size_t chunk = o.device == "cuda" ? 6 : 24;
  for (size_t first = 0; first < tasks.size(); first += chunk) {
    std::vector<const suite::Task*> part(tasks.begin() + first,
                                         tasks.begin() + std::min(tasks.size(), first + chunk));
    std::vector<ReferenceJob> jobs;
    for (const auto* t : part) {
      fs::path d = env.work_dir / t->category / t->name;
      jobs.push_back({t, seed1, "a", tiers, d / "a", repeat_tiers, false, {}});
      jobs.push_back({t, seed1, "b", repeat_tiers, d / "b", {}, false, {}});
      jobs.push_back({t, seed2, "c", repeat_tiers, d / "c", {}, false, {}});
    }
    json hello;
    auto refs = run_references(env, jobs, false, &hello);
    if (o.device == "cuda" && !hello.is_null() && !hello.value("cuda_available", false)) {
      throw Error("--device cuda: torch sees no CUDA GPU here");
    }
    for (const auto* t : part) {
      try {
        problems[t->id()] = check_task(*t, refs[t->id() + "|a"], refs[t->id() + "|b"],
                                       refs[t->id() + "|c"], env, &judge_jobs);
      } catch (const std::exception& e) {
        problems[t->id()].push_back(std::string("check failed: ") + e.what());
      }
      const bool has_random = std::any_of(judge_jobs.begin(), judge_jobs.end(), [&](const json& j) {
        return j["case"].get<std::string>().rfind(t->id() + "|", 0) == 0;
      });
      if (!has_random) fs::remove_all(env.work_dir / t->category / t->name);
    }
  }
  if (!judge_jobs.empty()) {
    // The reference's own two draws must pass its judge; all-zeros outputs must fail it.
    json zero_jobs = json::array();
    for (auto j : judge_jobs) {
      auto ref = verdict::read_tensor_file(j["out_a"].get<std::string>());
      fs::path zp = j["out_a"].get<std::string>() + ".zeros.kbt";
      verdict::write_tensor_file(zp, zero_outputs(ref).tensors);
      j["case"] = j["case"].get<std::string>() + "|zeros";
      j["out_a"] = zp.string();
      j["out_b"] = zp.string();
      zero_jobs.push_back(j);
    }
    for (const auto& j : judge_jobs) zero_jobs.push_back(j);
    auto out = run_worker(env, {{"mode", "judge"}, {"device", env.device}, {"jobs", zero_jobs}},
                          env.work_dir / "judge");
    std::map<std::string, json> verdicts;
    for (const auto& e : out.events) {
      if (e.value("ev", "") == "judged") verdicts[e.value("case", "")] = e;
    }
    for (const auto& j : judge_jobs) {
      const std::string id = j["case"];
      const std::string task = id.substr(0, id.find('|'));
      const std::string cname = id.substr(id.find('|') + 1);
      if (!verdicts.count(id) || !verdicts[id].value("ok", false)) {
        problems[task].push_back(
            "case " + cname + ": judge rejects the reference's own draws: " +
            (verdicts.count(id) ? verdicts[id].value("message", "") : "no verdict"));
      }
      if (verdicts.count(id + "|zeros") && verdicts[id + "|zeros"].value("ok", false)) {
        problems[task].push_back("case " + cname + ": judge accepts all-zeros outputs");
      }
    }
  }
  for (const auto* t : tasks) {
    const auto& p = problems[t->id()];
    std::printf("%s %s\n", p.empty() ? "ok  " : "FAIL", t->id().c_str());
    for (const auto& line : p) std::printf("     - %s\n", line.c_str());
    bad += !p.empty();
  }
  std::printf("%zu passed, %d failed\n", tasks.size() + suite.errors.size() - bad, bad);
  fs::remove_all(env.work_dir);
  return bad ? 1 : 0;
}

}  // namespace kbx::sched
