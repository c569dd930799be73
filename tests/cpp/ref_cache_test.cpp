// The reference cache (issue 14): entries linked rather than copied on one filesystem, cases.json
// copied, and a run never evicting the entries it uses.
#include "sched/ref_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "common/util.h"
#include "test_util.h"

namespace kbx::sched {
namespace {

namespace fs = std::filesystem;

ino_t inode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_ino;
}

/// A computed reference job's folders: cases.json and one tensor file of `bytes` bytes.
ReferenceJob computed_job(const suite::Task& task, const fs::path& work, std::size_t bytes) {
  ReferenceJob job;
  job.task = &task;
  job.seed = 7;
  job.label = "ref";
  job.tiers = {"edge", "small", "full"};
  job.out_dir = work / "ref" / task.name;
  job.in_dir = work / "inputs" / task.name;
  fs::create_directories(job.out_dir);
  fs::create_directories(job.in_dir);
  write_file(job.out_dir / "cases.json", "[]");
  write_file(job.out_dir / "big.ref.kbt", std::string(bytes, 'r'));
  write_file(job.in_dir / "big.in.kbt", std::string(bytes, 'i'));
  return job;
}

// The cache keys and the eager baselines depend on the worker code that references run through;
// a change to how candidates are run or judged leaves them valid.
TEST(WorkerSourcesHash, FollowsTheReferencesCodeNotTheCandidatesOnly) {
  test::TempDir dir;
  write_file(dir.path() / "timer.py", "A = 1\n");
  write_file(dir.path() / "reference_mode.py", "B = 1\n");
  write_file(dir.path() / "candidate_mode.py", "C = 1\n");
  write_file(dir.path() / "notes.txt", "not a module\n");
  const std::string first = worker_sources_hash(dir.path());
  write_file(dir.path() / "candidate_mode.py", "C = 2\n");
  write_file(dir.path() / "judge_mode.py", "D = 1\n");
  write_file(dir.path() / "notes.txt", "changed\n");
  EXPECT_EQ(worker_sources_hash(dir.path()), first);
  write_file(dir.path() / "timer.py", "A = 2\n");
  EXPECT_NE(worker_sources_hash(dir.path()), first);
  write_file(dir.path() / "timer.py", "A = 1\n");
  write_file(dir.path() / "casegen.py", "E = 1\n");  // a new module references may import
  EXPECT_NE(worker_sources_hash(dir.path()), first);
  EXPECT_FALSE(worker_sources_hash().empty());  // kbx's own worker is found
}

suite::Task task_named(const std::string& name) {
  suite::Task t;
  t.category = "Math";
  t.name = name;
  t.hash = "hash-" + name;
  return t;
}

TEST(ReferenceCache, RestoresTensorFilesAsLinksAndCasesJsonAsACopy) {
  test::TempDir dir;
  const auto task = task_named("add");
  ReferenceCache cache(dir.path() / "cache", 1 << 20);
  ReferenceJob job = computed_job(task, dir.path() / "work1", 1000);
  const std::string key = cache.key(job, "fp", true);
  cache.store(key, job, ReferenceCases{});
  ReferenceJob again = job;
  again.out_dir = dir.path() / "work2" / "ref";
  again.in_dir = dir.path() / "work2" / "inputs";
  ASSERT_TRUE(cache.restore(key, again));
  EXPECT_EQ(read_file(again.out_dir / "big.ref.kbt"), std::string(1000, 'r'));
  EXPECT_EQ(read_file(again.in_dir / "big.in.kbt"), std::string(1000, 'i'));
  EXPECT_EQ(inode(again.out_dir / "big.ref.kbt"), inode(job.out_dir / "big.ref.kbt"));
  EXPECT_NE(inode(again.out_dir / "cases.json"), inode(job.out_dir / "cases.json"));
  // kbx rewrites cases.json in place (probe spans): the cache's copy must not change with it
  write_file(again.out_dir / "cases.json", "[{\"changed\": true}]");
  ReferenceJob third = again;
  third.out_dir = dir.path() / "work3" / "ref";
  third.in_dir = dir.path() / "work3" / "inputs";
  ASSERT_TRUE(cache.restore(key, third));
  EXPECT_EQ(read_file(third.out_dir / "cases.json"), "[]");
}

TEST(ReferenceCache, ARunLongerThanTheCapKeepsItsFirstEntriesInsteadOfEvictingThem) {
  test::TempDir dir;
  ReferenceCache cache(dir.path() / "cache", 5000);  // two jobs of 2 x 1000 bytes fit
  std::vector<suite::Task> tasks;
  for (const char* name : {"a", "b", "c", "d"}) tasks.push_back(task_named(name));
  std::vector<std::string> keys;
  for (const auto& t : tasks) {
    ReferenceJob job = computed_job(t, dir.path() / "work", 1000);
    keys.push_back(cache.key(job, "fp", true));
    cache.store(keys.back(), job, ReferenceCases{});
  }
  ReferenceCache next_run(dir.path() / "cache", 5000);
  int hits = 0;
  for (size_t k = 0; k < tasks.size(); ++k) {
    ReferenceJob job;
    job.task = &tasks[k];
    job.out_dir = dir.path() / "restored" / tasks[k].name;
    job.in_dir = dir.path() / "restored-in" / tasks[k].name;
    hits += next_run.restore(keys[k], job) ? 1 : 0;
  }
  // An evicting cache would hold c and d, and a second sweep in task order would miss a and b
  // first, evicting c and d in turn: no hit at all. Kept: a and b, hit by every later sweep.
  EXPECT_EQ(hits, 2);
  EXPECT_TRUE(fs::exists(dir.path() / "restored" / "a" / "cases.json"));
  EXPECT_TRUE(fs::exists(dir.path() / "restored" / "b" / "cases.json"));
}

TEST(ReferenceCache, OffByOptionOrEnvironmentAndTheOptionBeforeTheEnvironment) {
  EXPECT_FALSE(ReferenceCache::folder("off"));
  EXPECT_EQ(ReferenceCache::folder("/x/cache"), fs::path("/x/cache"));
  ::setenv("KBX_REF_CACHE", "off", 1);
  EXPECT_FALSE(ReferenceCache::folder(""));
  EXPECT_EQ(ReferenceCache::folder("/x/cache"), fs::path("/x/cache"));
  ::setenv("KBX_REF_CACHE", "/y/cache", 1);
  EXPECT_EQ(ReferenceCache::folder(""), fs::path("/y/cache"));
  ::unsetenv("KBX_REF_CACHE");
  ::setenv("XDG_CACHE_HOME", "/z", 1);
  EXPECT_EQ(ReferenceCache::folder(""), fs::path("/z/kbx/references"));
  ::unsetenv("XDG_CACHE_HOME");
}

}  // namespace
}  // namespace kbx::sched
