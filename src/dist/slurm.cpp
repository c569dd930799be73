#include "dist/slurm.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/error.h"
#include "common/util.h"

namespace kbx::dist {
namespace fs = std::filesystem;

namespace {

/// A folder that can go into an #SBATCH line and a script: absolute, no white space or quotes.
void check_path(const char* what, const fs::path& p) {
  const std::string s = p.string();
  if (!p.is_absolute()) throw Error(fmt::format("{} {}: must be an absolute path", what, s));
  if (s.find_first_of(" \t\n'\"\\$`") != std::string::npos) {
    throw Error(fmt::format(
        "{} {}: white space, quotes, $ or ` cannot go into #SBATCH lines; pick another path", what,
        s));
  }
}

/// The #SBATCH lines both jobs share: partition, time, environment, folder and extra options.
std::string common_lines(const SlurmOptions& o) {
  std::string out;
  if (!o.partition.empty()) out += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.time.empty()) out += "#SBATCH --time=" + o.time + "\n";
  out += "#SBATCH --export=ALL\n";
  out += "#SBATCH --chdir=" + o.workdir.string() + "\n";
  for (const auto& e : o.extra) out += "#SBATCH " + e + "\n";
  return out;
}

std::string shards_script(const SlurmOptions& o) {
  const std::string out = o.out.string();
  std::string s = fmt::format(
      "#!/bin/bash\n"
      "# kbx slurm submit: {0} shards of one kbx eval, array task i runs shard i/{0} into\n"
      "# {1}/shard-i.db (kbx eval --shard: every job in exactly one shard).\n"
      "# Edit freely, then run submit.sh. A shard that stopped (time limit, node failure, harness\n"
      "# fault) resumes where it stopped when run again: sbatch --array=<i> {1}/shards.sbatch\n"
      "#SBATCH --job-name=kbx-eval\n"
      "#SBATCH --array=1-{0}\n"
      "#SBATCH --ntasks=1\n",
      o.shards, out);
  if (o.gpus_per_task > 0) s += fmt::format("#SBATCH --gres=gpu:{}\n", o.gpus_per_task);
  if (o.cpus_per_task > 0) s += fmt::format("#SBATCH --cpus-per-task={}\n", o.cpus_per_task);
  s += common_lines(o);
  s += "#SBATCH --output=" + out + "/logs/shard-%a.out\n";
  s += "set -euo pipefail\n";
  s += "i=${SLURM_ARRAY_TASK_ID:?submit this array job with sbatch}\n";
  std::string args;
  for (const auto& a : o.eval_args) args += " " + shell_quote(a);
  s += fmt::format("exec {} --suite {} eval{} --shard \"$i/{}\" --db \"{}/shard-$i.db\"\n",
                   shell_quote(o.kbx.string()), shell_quote(o.suite_root.string()), args, o.shards,
                   out);
  return s;
}

std::string merge_script(const SlurmOptions& o) {
  const std::string out = o.out.string();
  std::string s = fmt::format(
      "#!/bin/bash\n"
      "# kbx slurm submit: merges the {0} shards' databases into {1}/all.db once every shard\n"
      "# succeeded (submit.sh runs it with --dependency=afterok on the array job).\n"
      "#SBATCH --job-name=kbx-merge\n"
      "#SBATCH --ntasks=1\n"
      "#SBATCH --kill-on-invalid-dep=yes\n",
      o.shards, out);
  s += common_lines(o);
  s += "#SBATCH --output=" + out + "/logs/merge.out\n";
  s += "set -euo pipefail\n";
  s += fmt::format("dbs=()\nfor i in $(seq 1 {}); do dbs+=(\"{}/shard-$i.db\"); done\n", o.shards,
                   out);
  s += fmt::format("exec {} merge \"${{dbs[@]}}\" -o \"{}/all.db\" --force\n",
                   shell_quote(o.kbx.string()), out);
  return s;
}

std::string submit_script(const SlurmOptions& o) {
  const std::string out = o.out.string();
  return fmt::format(
      "#!/bin/bash\n"
      "# Submits the {0} shards (one array job) and the merge job that runs once all succeeded.\n"
      "set -euo pipefail\n"
      "array=$(sbatch --parsable {1}/shards.sbatch)\n"
      "array=${{array%%;*}}\n"
      "merge=$(sbatch --parsable --dependency=afterok:$array {1}/merge.sbatch)\n"
      "echo \"array job $array ({0} shards), merge job ${{merge%%;*}}; results: {1}/all.db\"\n",
      o.shards, out);
}

/// What a command printed (stdout and stderr together) and how it ended.
struct CommandOutput {
  int status = -1;  ///< exit code; -1 when it did not exit normally or could not start
  std::string text;
};

/// Runs argv[0] (found on PATH) with these arguments and waits for it.
CommandOutput run_command(const std::vector<std::string>& argv) {
  std::vector<char*> args;  // made before the fork: the child only calls exec
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string not_found = "cannot run " + argv[0] + ": not found on PATH\n";
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error("pipe: cannot run " + argv[0]);
  const pid_t pid = fork();
  if (pid < 0) throw Error("fork: cannot run " + argv[0]);
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execvp(args[0], args.data());
    (void)!write(2, not_found.data(), not_found.size());
    _exit(127);
  }
  close(fds[1]);
  CommandOutput out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno != EINTR) break;
    if (n > 0) out.text.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) out.status = WEXITSTATUS(status);
  return out;
}

/// Submits one script with `sbatch --parsable` (plus options); returns the job id.
std::string sbatch(const std::vector<std::string>& options, const fs::path& script) {
  std::vector<std::string> argv{"sbatch", "--parsable"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(script.string());
  const CommandOutput r = run_command(argv);
  std::string id = r.text.substr(0, r.text.find_first_of(";\n"));
  const bool numeric = !id.empty() && id.find_first_not_of("0123456789") == std::string::npos;
  if (r.status != 0 || !numeric) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + shell_quote(a);
    throw Error(fmt::format("{} failed (exit {}): {}", cmd, r.status, r.text));
  }
  return id;
}

void write_script(const fs::path& path, const std::string& text) {
  write_file(path, text);
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
}

}  // namespace

std::string shell_quote(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_@%+=:,./-") == std::string::npos;
  if (plain) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void check_eval_args(const std::vector<std::string>& eval_args) {
  for (const auto& a : eval_args) {
    for (const char* flag : {"--db", "--shard"}) {
      if (a == flag || a.rfind(std::string(flag) + "=", 0) == 0) {
        throw Error(fmt::format(
            "kbx eval argument {}: kbx slurm submit gives each shard its own --shard i/N and "
            "--db <out>/shard-i.db; leave {} out",
            a, flag));
      }
    }
  }
}

SlurmScripts slurm_scripts(const SlurmOptions& o) {
  if (o.shards < 1) throw Error(fmt::format("--shards {}: must be at least 1", o.shards));
  if (o.gpus_per_task < 0) throw Error("--gpus-per-task: must be 0 (CPU nodes) or more");
  check_path("--out", o.out);
  check_path("--chdir (the current folder)", o.workdir);
  check_eval_args(o.eval_args);
  for (const auto& e : o.extra) {
    if (e.rfind("--", 0) != 0 || e.find('\n') != std::string::npos) {
      throw Error("--sbatch " + e + ": expected one sbatch option such as --account=NAME");
    }
  }
  return {shards_script(o), merge_script(o), submit_script(o)};
}

void slurm_submit(const SlurmOptions& o) {
  const SlurmScripts scripts = slurm_scripts(o);
  fs::create_directories(o.out / "logs");
  write_script(o.out / "shards.sbatch", scripts.shards);
  write_script(o.out / "merge.sbatch", scripts.merge);
  write_script(o.out / "submit.sh", scripts.submit);
  const std::string out = o.out.string();
  if (o.dry_run) {
    std::printf("# --- %s/shards.sbatch ---\n%s", out.c_str(), scripts.shards.c_str());
    std::printf("# --- %s/merge.sbatch ---\n%s", out.c_str(), scripts.merge.c_str());
    std::printf(
        "# --- commands (%s/submit.sh runs them) ---\n"
        "sbatch --parsable %s/shards.sbatch\n"
        "sbatch --parsable --dependency=afterok:<array job id> %s/merge.sbatch\n",
        out.c_str(), out.c_str(), out.c_str());
    std::fflush(stdout);
    return;
  }
  const std::string array = sbatch({}, o.out / "shards.sbatch");
  const std::string merge = sbatch({"--dependency=afterok:" + array}, o.out / "merge.sbatch");
  std::printf(
      "array job %s (%d shards, logs in %s/logs), merge job %s after it; results: %s/all.db\n",
      array.c_str(), o.shards, out.c_str(), merge.c_str(), out.c_str());
  std::fflush(stdout);
}

}  // namespace kbx::dist
