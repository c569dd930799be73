#include "dist/slurm.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace kbx {
namespace {

dist::SlurmOptions options() {
  dist::SlurmOptions o;
  o.shards = 3;
  o.partition = "gpu";
  o.time = "2:00:00";
  o.out = "/scratch/run1";
  o.kbx = "/opt/kbx/bin/kbx";
  o.suite_root = "/opt/kbx/tasks";
  o.workdir = "/home/me";
  o.eval_args = {"--method", "mine", "--candidates", "my kernels", "--seed", "7"};
  return o;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Slurm, ArrayJobRunsOneShardPerTaskWithOneGpu) {
  const auto s = dist::slurm_scripts(options());
  EXPECT_TRUE(has(s.shards, "#SBATCH --array=1-3\n")) << s.shards;
  EXPECT_TRUE(has(s.shards, "#SBATCH --gres=gpu:1\n"));
  EXPECT_TRUE(has(s.shards, "#SBATCH --partition=gpu\n"));
  EXPECT_TRUE(has(s.shards, "#SBATCH --time=2:00:00\n"));
  EXPECT_TRUE(has(s.shards, "#SBATCH --export=ALL\n"));
  EXPECT_TRUE(has(s.shards, "#SBATCH --chdir=/home/me\n"));
  EXPECT_TRUE(has(s.shards, "#SBATCH --output=/scratch/run1/logs/shard-%a.out\n"));
  EXPECT_TRUE(has(s.shards,
                  "exec /opt/kbx/bin/kbx --suite /opt/kbx/tasks eval --method mine --candidates "
                  "'my kernels' --seed 7 --shard \"$i/3\" --db \"/scratch/run1/shard-$i.db\"\n"))
      << s.shards;
}

TEST(Slurm, CpuNodesGetNoGres) {
  auto o = options();
  o.gpus_per_task = 0;
  o.cpus_per_task = 4;
  const auto s = dist::slurm_scripts(o);
  EXPECT_FALSE(has(s.shards, "--gres"));
  EXPECT_TRUE(has(s.shards, "#SBATCH --cpus-per-task=4\n"));
}

TEST(Slurm, MergeJobWaitsForTheArrayAndMergesEveryShard) {
  auto o = options();
  o.extra = {"--account=proj"};
  const auto s = dist::slurm_scripts(o);
  EXPECT_TRUE(has(s.merge, "for i in $(seq 1 3); do dbs+=(\"/scratch/run1/shard-$i.db\"); done"));
  EXPECT_TRUE(
      has(s.merge, "exec /opt/kbx/bin/kbx merge \"${dbs[@]}\" -o \"/scratch/run1/all.db\""));
  EXPECT_FALSE(has(s.merge, "--gres"));
  EXPECT_TRUE(has(s.merge, "#SBATCH --account=proj\n"));
  EXPECT_TRUE(has(s.shards, "#SBATCH --account=proj\n"));
  EXPECT_TRUE(has(s.submit, "array=$(sbatch --parsable /scratch/run1/shards.sbatch)"));
  EXPECT_TRUE(has(s.submit,
                  "sbatch --parsable --dependency=afterok:$array "
                  "/scratch/run1/merge.sbatch"));
}

TEST(Slurm, RefusesWhatTheScriptsSetOrCannotHold) {
  auto o = options();
  o.eval_args.push_back("--db=x.db");
  EXPECT_THROW(dist::slurm_scripts(o), Error);
  o = options();
  o.eval_args.insert(o.eval_args.end(), {"--shard", "1/2"});
  EXPECT_THROW(dist::slurm_scripts(o), Error);
  o = options();
  o.out = "/scratch/my run";
  EXPECT_THROW(dist::slurm_scripts(o), Error);
  o = options();
  o.out = "relative";
  EXPECT_THROW(dist::slurm_scripts(o), Error);
  o = options();
  o.shards = 0;
  EXPECT_THROW(dist::slurm_scripts(o), Error);
  o = options();
  o.extra = {"account=x"};
  EXPECT_THROW(dist::slurm_scripts(o), Error);
}

TEST(Slurm, ShellQuoteOnlyWhereNeeded) {
  EXPECT_EQ(dist::shell_quote("Math/add,Loss/mse_loss"), "Math/add,Loss/mse_loss");
  EXPECT_EQ(dist::shell_quote("a b"), "'a b'");
  EXPECT_EQ(dist::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(dist::shell_quote(""), "''");
  EXPECT_EQ(dist::shell_quote("$HOME"), "'$HOME'");
}

}  // namespace
}  // namespace kbx
