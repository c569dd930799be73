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

namespace {

/// An option's folder: none for "off"; the option; else $variable (none when "off"), else
/// kbx's cache folder (~/.cache/kbx, or under XDG_CACHE_HOME) / name.
std::optional<fs::path> cache_folder(const std::string& option, const char* variable,
                                     const char* name) {
  if (option == "off") return std::nullopt;
  if (!option.empty()) return fs::path(option);
  if (const char* dir = std::getenv(variable); dir && *dir) {
    if (std::string(dir) == "off") return std::nullopt;
    return fs::path(dir);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return fs::path(xdg) / "kbx" / name;
  }
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "kbx" / name;
}

}  // namespace

std::optional<fs::path> ReferenceCache::folder(const std::string& option) {
  return cache_folder(option, "KBX_REF_CACHE", "references");
}

std::optional<fs::path> kernel_cache_folder(const std::string& option) {
  return cache_folder(option, "KBX_KERNEL_CACHE", "torch-kernels");
}

std::string ReferenceCache::key(const ReferenceJob& job, const std::string& fingerprint, bool time,
                                const std::string& timer) const {
  nlohmann::json parts = {{"task", job.task->id()}, {"hash", job.task->hash},
                          {"seed", job.seed},       {"label", job.label},
                          {"tiers", job.tiers},     {"save_tiers", job.save_tiers},
                          {"time", time},           {"machine", fingerprint},
                          {"worker", worker_hash_}, {"lean_inputs", job.lean_inputs}};
  if (!timer.empty()) parts["timer"] = timer;  // absent otherwise: earlier keys stay valid
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
    return true;
  } catch (const std::exception&) {
    fs::remove_all(job.out_dir, ec);  // half a copy (an entry evicted meanwhile): compute it
    return false;
  }
}

double reference_seconds(const ReferenceCases& computed) {
  double total = 0;
  for (const auto& ev : computed.cases) {
    double seconds = ev.value("seconds", 0.0);
    if (const auto phases = ev.find("phases"); phases != ev.end() && phases->is_object()) {
      for (const char* slot_step : {"eager", "compiled", "remake"}) {
        seconds -= phases->value(slot_step, 0.0);
      }
    }
    total += std::max(seconds, 0.0);
  }
  return total;
}

double seconds_per_gib(double seconds, std::uint64_t bytes) {
  const double gib = static_cast<double>(std::max<std::uint64_t>(bytes, 1 << 20)) / (1 << 30);
  return seconds / gib;
}

namespace {

constexpr const char* kWorthFile = "worth.json";

/// A stored entry: its folder, size and worth (0 for an entry without its worth file).
struct StoredEntry {
  fs::path path;
  std::uint64_t bytes = 0;
  double worth = 0;
};

/// The cache's entries, each with its size and worth as its worth file says (written with the
/// entry, before it was renamed into place): one small read an entry, where walking each entry's
/// files on every store cost a run O(entries x files) stat calls (a cache of 1950 small entries
/// on the CPU: a third of a 30-task run's CPU time). An entry without a readable worth file (an
/// older kbx's, or damaged) is measured by its files and worth nothing: evicted first.
std::vector<StoredEntry> stored_entries(const fs::path& root) {
  std::vector<StoredEntry> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory(ec) || e.path().filename().string().front() == '.') continue;
    StoredEntry entry{e.path(), 0, 0};
    bool sized = false;
    try {
      const auto worth = nlohmann::json::parse(read_file(e.path() / kWorthFile));
      entry.worth = worth.value("seconds_per_gib", 0.0);
      if (const auto bytes = worth.find("bytes");
          bytes != worth.end() && bytes->is_number_unsigned()) {
        entry.bytes = bytes->get<std::uint64_t>();
        sized = true;
      }
    } catch (const std::exception&) {
      entry.worth = 0;
    }
    if (!sized) entry.bytes = folder_bytes(e.path());
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace

bool ReferenceCache::make_room(std::uint64_t bytes, double worth) const {
  auto entries = stored_entries(root_);
  std::uint64_t total = pending_bytes_;
  for (const auto& e : entries) total += e.bytes;
  std::sort(entries.begin(), entries.end(),
            [](const StoredEntry& a, const StoredEntry& b) { return a.worth < b.worth; });
  std::uint64_t freed = 0;
  size_t victims = 0;
  // the cap first (lowered since these were kept): least worth first, whatever their worth
  while (total - freed > max_bytes_ && victims < entries.size()) {
    freed += entries[victims++].bytes;
  }
  const size_t over_cap = victims;
  while (total - freed + bytes > max_bytes_ && victims < entries.size() &&
         entries[victims].worth < worth) {
    freed += entries[victims++].bytes;
  }
  const bool fits = total - freed + bytes <= max_bytes_;
  std::error_code ec;
  for (size_t k = 0; k < (fits ? victims : over_cap); ++k) fs::remove_all(entries[k].path, ec);
  return fits;
}

void ReferenceCache::store(const std::string& key, const ReferenceJob& job,
                           const ReferenceCases& computed) const {
  if (!computed.error.empty() || !fs::exists(job.out_dir / "cases.json")) return;
  std::error_code ec;
  const fs::path entry = root_ / key;
  if (fs::exists(entry, ec)) return;
  const std::uint64_t bytes = reference_folder_bytes(job);
  const double seconds = reference_seconds(computed);
  const double worth = seconds_per_gib(seconds, bytes);
  if (worth < kMinSecondsPerGiB) return;  // a hit would save about what restoring it costs
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!make_room(bytes, worth)) {
      if (!told_full_) {
        std::fprintf(stderr,
                     "kbx: the reference cache %s is full of entries worth more than %s's (%.1f "
                     "s of reference work per GiB; cap %.1f GiB): it and others worth less are "
                     "not kept (--ref-cache-mb raises the cap)\n",
                     root_.c_str(), job.task->id().c_str(), worth,
                     static_cast<double>(max_bytes_) / (1 << 30));
        told_full_ = true;
      }
      return;
    }
    pending_bytes_ += bytes;
  }
  const fs::path tmp = root_ / fmt::format(".{}.{}.tmp", key, ::getpid());
  try {
    fs::create_directories(root_);
    fs::permissions(root_, fs::perms::owner_all, fs::perm_options::replace, ec);
    fs::remove_all(tmp, ec);
    link_or_copy_folder(job.out_dir, tmp / "ref");
    if (!job.in_dir.empty() && job.in_dir != job.out_dir)
      link_or_copy_folder(job.in_dir, tmp / "inputs");
    write_file(tmp / kWorthFile, nlohmann::json{{"seconds", seconds},
                                                {"bytes", bytes},
                                                {"seconds_per_gib", worth},
                                                {"task", job.task->id()}}
                                     .dump());
    fs::rename(tmp, entry);
  } catch (const std::exception& e) {
    fs::remove_all(tmp, ec);
    if (!fs::exists(entry / "ref" / "cases.json", ec)) {  // else another kbx kept it first
      std::fprintf(stderr, "kbx: the reference cache %s kept nothing for %s: %s\n", root_.c_str(),
                   job.task->id().c_str(), e.what());
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  pending_bytes_ -= bytes;
}

}  // namespace kbx::sched
