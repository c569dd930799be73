// The supervisor against what a candidate (or a second kbx) can do to it: unusable output files,
// broken event streams, duplicate and symlinked candidates, a second writer, interrupted jobs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/util.h"
#include "plan/candidates.h"
#include "sched/events.h"
#include "store/lock.h"
#include "store/store.h"
#include "test_util.h"
#include "verdict/tensor_file.h"

namespace kbx {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using test::f32;

/// Expects read_tensor_file(path) to throw BadTensorFile mentioning `words`, quickly.
void expect_bad(const fs::path& path, const std::string& words) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    verdict::read_tensor_file(path);
    ADD_FAILURE() << path << " was read";
  } catch (const verdict::BadTensorFile& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    EXPECT_EQ(e.path, path);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

TEST(TensorFileSafety, FifoInPlaceOfAnOutputIsAnErrorNotAHang) {
  test::TempDir dir;
  const auto path = dir.path() / "case.cand.kbt";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  expect_bad(path, "FIFO");
}

TEST(TensorFileSafety, SymlinkIsNotFollowed) {
  test::TempDir dir;
  const auto real = dir.path() / "elsewhere.kbt";
  verdict::write_tensor_file(real, {f32("out", {1, 2})});
  const auto link = dir.path() / "case.cand.kbt";
  fs::create_symlink(real, link);
  expect_bad(link, "symlink");
}

TEST(TensorFileSafety, ReferenceFilesAreMappedWithTheSameChecks) {
  test::TempDir dir;
  const auto real = dir.path() / "case.ref.kbt";
  verdict::write_tensor_file(real, {f32("out", {1, 2, 3})});
  const auto mapped = verdict::read_reference_tensor_file(real);
  const auto copied = verdict::read_tensor_file(real);
  ASSERT_EQ(mapped.tensors.size(), 1u);
  EXPECT_EQ(mapped.tensors[0].name, "out");
  const auto& m = mapped.tensors[0];
  const auto& c = copied.tensors[0];
  ASSERT_EQ(m.size_bytes(), c.size_bytes());
  EXPECT_EQ(std::memcmp(m.data(), c.data(), m.size_bytes()), 0);
  const auto link = dir.path() / "case.shadow.kbt";
  fs::create_symlink(real, link);
  EXPECT_THROW(verdict::read_reference_tensor_file(link), verdict::BadTensorFile);
}

TEST(TensorFileSafety, FolderAndDeviceAreRefused) {
  test::TempDir dir;
  fs::create_directory(dir.path() / "case.cand.kbt");
  expect_bad(dir.path() / "case.cand.kbt", "folder");
  expect_bad("/dev/zero", "device");
}

TEST(TensorFileSafety, TruncatedAfterOpenGivesAnErrorNotSigbus) {
  test::TempDir dir;
  const auto path = dir.path() / "case.cand.kbt";
  verdict::write_tensor_file(path, {f32("out", std::vector<float>(4096, 1.0f))});
  try {
    verdict::read_tensor_file(path, [&] { fs::resize_file(path, 100); });
    ADD_FAILURE() << "a file truncated while read was accepted";
  } catch (const verdict::BadTensorFile& e) {
    EXPECT_NE(std::string(e.what()).find("truncated while being read"), std::string::npos);
  }
}

TEST(TensorFileSafety, ALargeFileIsReadWholeInPartsAndItsTruncationIsCaught) {
  // 96 MiB: read by several threads, one part each (verdict/tensor_file.cpp)
  test::TempDir dir;
  const auto path = dir.path() / "case.cand.kbt";
  std::vector<float> values(24u << 20);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 9973) - 17.5f;
  verdict::write_tensor_file(path, {f32("out", values)});
  const auto read = verdict::read_tensor_file(path);
  EXPECT_TRUE(
      read.tensors.at(0).bitwise_equal(verdict::read_reference_tensor_file(path).tensors[0]));
  EXPECT_EQ(std::memcmp(read.tensors.at(0).data(), values.data(), values.size() * 4), 0);
  try {
    verdict::read_tensor_file(path, [&] { fs::resize_file(path, fs::file_size(path) / 2); });
    ADD_FAILURE() << "a large file truncated while read was accepted";
  } catch (const verdict::BadTensorFile& e) {
    EXPECT_NE(std::string(e.what()).find("truncated while being read"), std::string::npos);
  }
}

TEST(TensorFileSafety, HeaderLargerThanFileIsAnError) {
  test::TempDir dir;
  const auto path = dir.path() / "x.kbt";
  verdict::write_tensor_file(path, {f32("out", {1, 2, 3, 4})});
  // shape dimension patched to 2^40: the size check must not overflow or allocate
  std::string bytes = read_file(path);
  const std::int64_t huge = std::int64_t{1} << 40;
  const size_t dim_at = 8 + 4 + 2 + 3 + 2 + 7 + 1;  // magic, count, name, dtype, ndim
  std::memcpy(bytes.data() + dim_at, &huge, 8);
  write_file(path, bytes);
  expect_bad(path, "does not match its shape");
  write_file(path, "KBX");
  expect_bad(path, "truncated");
}

TEST(TensorFileSafety, RegularFileStillReads) {
  test::TempDir dir;
  const auto path = dir.path() / "x.kbt";
  verdict::write_tensor_file(
      path, {f32("out", {1, 2, 3}), f32("empty", {}, {1000, 0, 7}), f32("scalar", {5}, {})});
  auto file = verdict::read_tensor_file(path);
  ASSERT_EQ(file.tensors.size(), 3u);
  EXPECT_EQ(file.tensors[0].to_doubles(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(file.tensors[1].numel(), 0);
  EXPECT_EQ(file.tensors[2].to_doubles(), (std::vector<double>{5}));
}

json good_case() {
  return {
      {"ev", "case"},          {"case", "edge0"},
      {"structure", "single"}, {"outputs", json::array({{{"name", "out"}, {"kind", "tensor"}}})},
      {"triton_launches", 2},  {"call_s", 0.1},
      {"save_s", 0.01},        {"read_s", 0.02},
      {"inputs_from", "file"}};
}

TEST(Events, ValidStreamParses) {
  std::vector<json> evs = {{{"ev", "hello"}, {"python", "3.11"}},
                           {{"ev", "static"},
                            {"syntax_ok", true},
                            {"entry_found", true},
                            {"triton_kernels", {"k"}},
                            {"suspicious_imports", json::array()}},
                           {{"ev", "imported"}, {"seconds", 1.5}},
                           good_case(),
                           {{"ev", "timing"},
                            {"case", "edge0"},
                            {"ms", {1.0, "inf"}},
                            {"seconds", 2.0},
                            {"probe_ids", {1, 2}},
                            {"tampered", json::array()},
                            {"host_ms", {0.1, 0.2}}},
                           {{"ev", "error"},
                            {"phase", "run"},
                            {"kind", "runtime_error"},
                            {"type", "ValueError"},
                            {"message", "m"},
                            {"trace", "t"},
                            {"case", nullptr}},
                           {{"ev", "done"}}};
  auto p = sched::parse_candidate_events(evs);
  EXPECT_EQ(p.problem, "");
  ASSERT_TRUE(p.static_facts);
  EXPECT_EQ(p.static_facts->triton_kernels, std::vector<std::string>{"k"});
  ASSERT_EQ(p.cases.size(), 1u);
  EXPECT_EQ(p.cases[0].triton_launches, 2);
  ASSERT_EQ(p.timings.size(), 1u);
  EXPECT_TRUE(std::isinf(p.timings[0].ms[1]));
  EXPECT_FALSE(p.timings[0].varied);  // no variants: timed on the same values every call
  evs[4]["variants"] = {0, 1, 0, 2};
  EXPECT_TRUE(sched::parse_candidate_events(evs).timings.at(0).varied);
  EXPECT_FALSE(p.timings[0].contended);  // absent: the timer's settle did not give up
  evs[4]["contended"] = true;
  EXPECT_TRUE(sched::parse_candidate_events(evs).timings.at(0).contended);
  EXPECT_FALSE(p.timings[0].waits_on_host);  // no host_loop_ms: a call that only queues work
  evs[4]["host_loop_ms"] = nullptr;
  EXPECT_FALSE(sched::parse_candidate_events(evs).timings.at(0).waits_on_host);
  evs[4]["host_loop_ms"] = 0.25;
  EXPECT_TRUE(sched::parse_candidate_events(evs).timings.at(0).waits_on_host);
  EXPECT_EQ(p.timings[0].short_holds, 0);  // absent: none
  evs[4]["batches"] = 5, evs[4]["short_holds"] = 2;
  EXPECT_EQ(sched::parse_candidate_events(evs).timings.at(0).batches, 5);
  EXPECT_EQ(sched::parse_candidate_events(evs).timings.at(0).short_holds, 2);
  EXPECT_FALSE(sched::parse_candidate_events(evs).timings.at(0).holds_outrun());  // 2 of 5
  evs[4]["short_holds"] = 3;
  EXPECT_TRUE(sched::parse_candidate_events(evs).timings.at(0).holds_outrun());
  evs[4]["short_holds"] = -1;  // present, a count
  EXPECT_NE(sched::parse_candidate_events(evs).problem.find("'short_holds'"), std::string::npos);
  evs[4]["short_holds"] = 2;
  EXPECT_EQ(p.timings[0].gpu_ooms, 0);  // absent: no allocation failed
  evs[4]["gpu_ooms"] = 6;
  EXPECT_EQ(sched::parse_candidate_events(evs).timings.at(0).gpu_ooms, 6);
  evs[4]["gpu_ooms"] = "6";  // present, a count
  EXPECT_NE(sched::parse_candidate_events(evs).problem.find("'gpu_ooms'"), std::string::npos);
  evs[4]["gpu_ooms"] = 0;
  evs[4]["contended"] = "yes";  // present, it must be true or false
  EXPECT_NE(sched::parse_candidate_events(evs).problem.find("'contended'"), std::string::npos);
  ASSERT_TRUE(p.error);
  EXPECT_FALSE(p.error->case_name);
  EXPECT_TRUE(p.done);
}

TEST(Events, MissingOrMistypedRequiredFieldIsAProtocolError) {
  json no_launches = good_case();
  no_launches.erase("triton_launches");  // once silently 0, hence no_triton_launch
  auto p = sched::parse_candidate_events({no_launches});
  EXPECT_NE(p.problem.find("event 1 (case): field 'triton_launches' missing"), std::string::npos)
      << p.problem;
  json text_launches = good_case();
  text_launches["triton_launches"] = "3";
  EXPECT_NE(sched::parse_candidate_events({text_launches}).problem.find("expected a non-negative"),
            std::string::npos);
  json negative = good_case();
  negative["triton_launches"] = -1;
  EXPECT_FALSE(sched::parse_candidate_events({negative}).problem.empty());
  EXPECT_FALSE(sched::parse_candidate_events({{{"ev", 5}}}).problem.empty());
  EXPECT_FALSE(
      sched::parse_candidate_events({{{"ev", "static"}, {"syntax_ok", "yes"}}}).problem.empty());
  json bad_output = good_case();
  bad_output["outputs"] = json::array({{{"kind", "tensor"}}});
  EXPECT_FALSE(sched::parse_candidate_events({bad_output}).problem.empty());
  EXPECT_FALSE(sched::parse_candidate_events({{{"ev", "timing"}, {"case", "a"}, {"ms", {"fast"}}}})
                   .problem.empty());
}

TEST(Events, UnknownEventsAreSkipped) {
  auto p = sched::parse_candidate_events({{{"ev", "chatter"}, {"x", 1}}, good_case()});
  EXPECT_EQ(p.problem, "");
  EXPECT_EQ(p.cases.size(), 1u);
}

TEST(PlanSafety, DuplicateJsonlLinesLastWinsAndAreReported) {
  test::TempDir dir;
  const auto path = dir.path() / "c.jsonl";
  write_file(path,
             "{\"file\": \"Math/add.py\", \"predict\": \"first\"}\n"
             "{\"file\": \"Math/sub.py\", \"predict\": \"sub\"}\n"
             "{\"file\": \"Math/add.py\", \"predict\": \"second\"}\n");
  auto found = plan::from_path(path, "m");
  ASSERT_EQ(found.candidates.size(), 2u);
  EXPECT_EQ(found.candidates[0].task, "Math/sub");
  EXPECT_EQ(found.candidates[1].source, "second");
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_NE(found.problems[0].find("c.jsonl:1"), std::string::npos) << found.problems[0];
  EXPECT_NE(found.problems[0].find("c.jsonl:3"), std::string::npos) << found.problems[0];
  EXPECT_NE(found.problems[0].find("the last one"), std::string::npos);
}

TEST(PlanSafety, SymlinkedCandidatesInsideAreReadOutsideAreRejected) {
  test::TempDir dir;
  const auto root = dir.path() / "cands";
  fs::create_directories(root / "Math");
  fs::create_directories(root / "drafts");
  write_file(root / "drafts" / "add_v2.txt", "inside");
  fs::create_symlink("../drafts/add_v2.txt", root / "Math" / "add.py");
  write_file(dir.path() / "secret.py", "outside");
  fs::create_symlink(dir.path() / "secret.py", root / "Math" / "sub.py");
  fs::create_symlink(dir.path() / "nowhere.py", root / "Math" / "mul.py");
  ASSERT_EQ(mkfifo((root / "Math" / "div.py").c_str(), 0600), 0);  // never opened
  fs::create_directories(dir.path() / "other");
  fs::create_directory_symlink(dir.path() / "other", root / "Activation");
  auto found = plan::from_path(root, "m");
  ASSERT_EQ(found.candidates.size(), 1u);
  EXPECT_EQ(found.candidates[0].task, "Math/add");
  EXPECT_EQ(found.candidates[0].source, "inside");
  std::string all;
  for (const auto& p : found.problems) all += p + "\n";
  EXPECT_NE(all.find((root / "Math" / "sub.py").string() + ": a symlink to"), std::string::npos)
      << all;
  EXPECT_NE(all.find((root / "Math" / "mul.py").string() + ": a symlink to"), std::string::npos);
  EXPECT_NE(all.find("a symlink to a folder"), std::string::npos);
  EXPECT_NE(all.find("div.py: not a regular file"), std::string::npos) << all;
  EXPECT_EQ(all.find("not at Category/name.py"), std::string::npos) << all;
}

store::Run a_run() {
  store::Run r;
  r.run_key = "key";
  r.method = "m";
  r.device = "cpu";
  r.track = "triton";
  return r;
}

store::Result result_of(std::int64_t run, std::int64_t cand, const std::string& status) {
  store::Result r;
  r.run_id = run;
  r.candidate_id = cand;
  r.method = "m";
  r.task = "Math/add";
  r.category = "Math";
  r.status = status;
  store::CaseResult c;
  c.name = "edge0";
  c.status = status;
  c.cand_samples = {1.0};
  r.cases.push_back(c);
  return r;
}

int count(store::Store& db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &st, nullptr);
  int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  sqlite3_finalize(st);
  return n;
}

TEST(StoreSafety, HarnessErrorIsNoVerdictAndIsReplacedOnce) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  auto c = db.add_candidate({0, "m", "Math/add", sha256_hex("1"), "1", ""});
  auto run = db.add_run(a_run());
  ASSERT_GT(db.add_result(result_of(run, c, "harness_error")), 0);
  EXPECT_FALSE(db.has_result(run, c));
  ASSERT_GT(db.add_result(result_of(run, c, "passed")), 0);
  EXPECT_TRUE(db.has_result(run, c));
  EXPECT_EQ(db.add_result(result_of(run, c, "crash")), 0);  // a verdict stays
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM results"), 1);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM case_results"), 1);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM samples"), 1);
  EXPECT_EQ(db.results("m", run).at(0).status, "passed");
}

TEST(StoreSafety, AttemptsWithoutEndAndWarmParentDeathsAreStrikes) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  auto c = db.add_candidate({0, "m", "Math/add", sha256_hex("1"), "1", ""});
  auto run = db.add_run(a_run());
  db.begin_attempt(run, c);  // kbx died here
  db.end_attempt(db.begin_attempt(run, c), "retry");
  EXPECT_EQ(db.strikes(run, c), 1);
  db.end_attempt(db.begin_attempt(run, c), "warm_parent_died");
  EXPECT_EQ(db.strikes(run, c), 2);
  db.end_attempt(db.begin_attempt(run, c), "passed");
  EXPECT_EQ(db.strikes(run, c), 2);
}

TEST(StoreSafety, AttemptOutcomesAreCountedPerRun) {
  test::TempDir dir;
  store::Store db(dir.path() / "k.db");
  auto c = db.add_candidate({0, "m", "Math/add", sha256_hex("1"), "1", ""});
  auto run = db.add_run(a_run());
  db.end_attempt(db.begin_attempt(run, c), "contended_beside");
  db.end_attempt(db.begin_attempt(run, c), "verdict");
  db.begin_attempt(run, c);  // open: not counted
  EXPECT_EQ(db.attempt_outcomes(run),
            (std::map<std::string, int>{{"contended_beside", 1}, {"verdict", 1}}));
  EXPECT_TRUE(db.attempt_outcomes(run + 1).empty());
}

TEST(StoreSafety, SchemaVersion2IsMigrated) {
  test::TempDir dir;
  const auto path = dir.path() / "v2.db";
  { store::Store db(path); }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    sqlite3_exec(raw, "DROP TABLE attempts; UPDATE meta SET value='2' WHERE key='schema_version';",
                 nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  store::Store db(path);
  EXPECT_EQ(count(db, "SELECT value FROM meta WHERE key='schema_version'"), store::kSchemaVersion);
  auto c = db.add_candidate({0, "m", "Math/add", sha256_hex("1"), "1", ""});
  auto run = db.add_run(a_run());
  db.begin_attempt(run, c);
  EXPECT_EQ(db.strikes(run, c), 1);
}

TEST(WriterLockTest, SecondWriterIsToldWhoHoldsTheDatabase) {
  test::TempDir dir;
  const auto db = dir.path() / "k.db";
  std::string holder;
  auto first = store::WriterLock::try_take(db, "expert", &holder);
  ASSERT_TRUE(first);
  first->set_run(7);
  auto second = store::WriterLock::try_take(db, "other", &holder);
  EXPECT_FALSE(second);
  EXPECT_NE(holder.find("run 7 of method expert"), std::string::npos) << holder;
  EXPECT_NE(holder.find("kbx pid " + std::to_string(getpid())), std::string::npos) << holder;
  first.reset();  // as when its holder dies: the kernel drops the lock
  EXPECT_TRUE(store::WriterLock::try_take(db, "other", &holder));
}

}  // namespace
}  // namespace kbx
