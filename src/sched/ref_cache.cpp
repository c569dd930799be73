#include "sched/ref_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <system_error>
#include <vector>

#include "common/util.h"
#include "sched/room.h"

namespace kbx::sched {
namespace fs = std::filesystem;

/// SHA-256 over the worker package's Python sources, in name order.
std::string worker_sources_hash(const fs::path& worker_dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(worker_dir, ec)) {
    if (e.path().extension() != ".py") continue;
    const std::string name = e.path().filename().string();
    if (std::find(std::begin(kCandidateOnlyModules), std::end(kCandidateOnlyModules), name) !=
        std::end(kCandidateOnlyModules)) {
      continue;
    }
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) all += f.filename().string() + '\0' + read_file(f) + '\0';
  return sha256_hex(all);
}

std::string worker_sources_hash() {
  return worker_sources_hash(kbx_home() / "python" / "kbx_worker");
}

namespace {

/// Puts a folder's files, subfolders included, into `to`: hard links where both are on one
/// filesystem (a task's entry is gigabytes; nothing rewrites a written .kbt file in place, a
/// recomputed folder is removed first), copies otherwise. cases.json, which kbx rewrites in
/// place, is always copied.
void link_or_copy_folder(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    const fs::path target = to / e.path().filename();
    if (e.is_directory()) {
      link_or_copy_folder(e.path(), target);
      continue;
    }
    std::error_code ec;
    fs::remove(target, ec);
    if (e.path().filename() != "cases.json") {
      fs::create_hard_link(e.path(), target, ec);
      if (!ec) continue;
    }
    fs::copy_file(e.path(), target, fs::copy_options::overwrite_existing);
  }
}

}  // namespace

ReferenceCache::ReferenceCache(fs::path root, std::uint64_t max_bytes)
    : root_(std::move(root)), max_bytes_(max_bytes), worker_hash_(worker_sources_hash()) {}

std::optional<fs::path> ReferenceCache::folder(const std::string& option) {
  if (option == "off") return std::nullopt;
  if (!option.empty()) return fs::path(option);
  if (const char* dir = std::getenv("KBX_REF_CACHE"); dir && *dir) {
    if (std::string(dir) == "off") return std::nullopt;
    return fs::path(dir);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return fs::path(xdg) / "kbx" / "references";
  }
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "kbx" / "references";
}

std::string ReferenceCache::key(const ReferenceJob& job, const std::string& fingerprint,
                                bool time) const {
  const nlohmann::json parts = {{"task", job.task->id()}, {"hash", job.task->hash},
                                {"seed", job.seed},       {"label", job.label},
                                {"tiers", job.tiers},     {"save_tiers", job.save_tiers},
                                {"time", time},           {"machine", fingerprint},
                                {"worker", worker_hash_}, {"lean_inputs", job.lean_inputs}};
  return sha256_hex(parts.dump()).substr(0, 32);
}

bool ReferenceCache::restore(const std::string& key, const ReferenceJob& job) const {
  const fs::path entry = root_ / key;
  std::error_code ec;
  if (!fs::exists(entry / "ref" / "cases.json", ec)) return false;
  try {
    fs::remove_all(job.out_dir);
    link_or_copy_folder(entry / "ref", job.out_dir);
    if (!job.in_dir.empty() && job.in_dir != job.out_dir) {
      fs::remove_all(job.in_dir);
      link_or_copy_folder(entry / "inputs", job.in_dir);
    }
    fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);  // used: trimmed last
    const std::uint64_t bytes = folder_bytes(entry);
    std::lock_guard<std::mutex> lock(mu_);
    if (in_use_.insert(entry).second) in_use_bytes_ += bytes;
    return true;
  } catch (const std::exception&) {
    fs::remove_all(job.out_dir, ec);  // half a copy is no reference: compute it
    return false;
  }
}

void ReferenceCache::store(const std::string& key, const ReferenceJob& job,
                           const ReferenceCases& computed) const {
  if (!computed.error.empty() || !fs::exists(job.out_dir / "cases.json")) return;
  std::error_code ec;
  const fs::path entry = root_ / key;
  if (fs::exists(entry, ec)) return;
  // An entry that does not fit beside those this run uses is not kept: evicting them would make
  // a sweep over more tasks than the cap holds miss on every task, and pay every copy.
  const std::uint64_t bytes = reference_folder_bytes(job);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_use_bytes_ + bytes > max_bytes_) {
      if (!told_full_) {
        std::fprintf(stderr,
                     "kbx: the reference cache %s is full for this run (%.1f GiB kept, cap %.1f "
                     "GiB): later references are not kept (--ref-cache-mb raises the cap)\n",
                     root_.c_str(), static_cast<double>(in_use_bytes_) / (1 << 30),
                     static_cast<double>(max_bytes_) / (1 << 30));
        told_full_ = true;
      }
      return;
    }
    in_use_bytes_ += bytes;
    in_use_.insert(entry);
  }
  const fs::path tmp = root_ / fmt::format(".{}.{}.tmp", key, ::getpid());
  try {
    fs::create_directories(root_);
    fs::permissions(root_, fs::perms::owner_all, fs::perm_options::replace, ec);
    fs::remove_all(tmp, ec);
    link_or_copy_folder(job.out_dir, tmp / "ref");
    if (!job.in_dir.empty() && job.in_dir != job.out_dir)
      link_or_copy_folder(job.in_dir, tmp / "inputs");
    fs::rename(tmp, entry);
  } catch (const std::exception& e) {
    fs::remove_all(tmp, ec);
    if (fs::exists(entry / "ref" / "cases.json", ec)) return;  // another kbx kept it first
    std::fprintf(stderr, "kbx: the reference cache %s kept nothing for %s: %s\n", root_.c_str(),
                 job.task->id().c_str(), e.what());
    return;
  }
  trim();
}

void ReferenceCache::trim() const {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    std::uint64_t bytes;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_, ec)) {
    if (!e.is_directory(ec) || e.path().filename().string().front() == '.') continue;
    Entry entry{e.path(), fs::last_write_time(e.path(), ec), folder_bytes(e.path())};
    total += entry.bytes;
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : entries) {
    if (total <= max_bytes_) break;
    if (in_use_.count(e.path)) continue;  // this run's own
    fs::remove_all(e.path, ec);
    total -= e.bytes;
  }
}

}  // namespace kbx::sched
