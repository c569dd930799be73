#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace kbx::dist {

/// What `kbx slurm submit` is asked to do: N shards of one kbx eval as a Slurm array job, then
/// a merge job that runs after every shard succeeded.
struct SlurmOptions {
  int shards = 0;                      ///< N: array tasks 1..N, shard i/N each
  std::string partition;               ///< --partition of both jobs; empty: the cluster's default
  int gpus_per_task = 1;               ///< --gres=gpu:K per array task; 0 (CPU nodes): no --gres
  int cpus_per_task = 0;               ///< --cpus-per-task of an array task; 0: Slurm's default
  std::string time;                    ///< --time of each job; empty: the partition's default
  std::vector<std::string> extra;      ///< more #SBATCH options for both jobs, e.g. "--account=p1"
  std::filesystem::path out;           ///< folder of the scripts, logs/ and databases (absolute)
  std::filesystem::path kbx;           ///< the kbx binary the jobs run (absolute)
  std::filesystem::path suite_root;    ///< the tasks folder, passed to the jobs as --suite
  std::filesystem::path workdir;       ///< the jobs' --chdir, where relative eval paths point
  std::vector<std::string> eval_args;  ///< kbx eval's own arguments, without --shard and --db
  bool dry_run = false;                ///< write and print the scripts, submit nothing
};

/// The files `kbx slurm submit` writes into its folder, for the user to read and edit.
struct SlurmScripts {
  std::string shards;  ///< shards.sbatch: the array job; task i runs kbx eval --shard i/N
                       ///< --db <out>/shard-i.db
  std::string merge;   ///< merge.sbatch: kbx merge of shard-1.db .. shard-N.db into all.db
  std::string submit;  ///< submit.sh: both sbatch calls, the merge after the array succeeded
};

/// The scripts for these options (no file is touched). Throws Error when an option cannot go into
/// a script (N < 1, a path with white space or quotes, an eval argument that sets --db or
/// --shard).
SlurmScripts slurm_scripts(const SlurmOptions& o);

/// Throws Error naming the argument when kbx eval's arguments set --db or --shard, which the
/// array job sets for each shard.
void check_eval_args(const std::vector<std::string>& eval_args);

/// Writes the scripts into o.out (created, with logs/), then with dry_run prints them and the
/// sbatch commands; without, submits the array job (`sbatch --parsable`) and the merge job
/// (`--dependency=afterok:<array job>`) and prints their ids. Throws Error naming the sbatch
/// command that failed, with its output.
void slurm_submit(const SlurmOptions& o);

/// The text quoted for bash where it needs to be (single quotes), else as it is.
std::string shell_quote(const std::string& text);

}  // namespace kbx::dist
