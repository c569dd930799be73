#include "plan/candidates.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_bounded.h"
#include "common/util.h"

namespace kbx::plan {
namespace fs = std::filesystem;

namespace {

/// What is said of a source longer than kMaxSourceBytes ("" when it is not): then it is cut to
/// kMaxSourceBytes + 1 bytes, which the judge takes for bad_input.
std::string cut_to_limit(std::string& source, std::uintmax_t full_bytes) {
  if (full_bytes <= kMaxSourceBytes) return "";
  source.resize(std::min<std::size_t>(source.size(), kMaxSourceBytes + 1));
  return fmt::format(
      "{} bytes, more than the {} a candidate's source may have; recorded as "
      "bad_input",
      full_bytes, kMaxSourceBytes);
}

/// The first `max_bytes` bytes of a file (all of it when shorter).
std::string read_prefix(const fs::path& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open for reading");
  std::string data(max_bytes, '\0');
  in.read(data.data(), static_cast<std::streamsize>(max_bytes));
  data.resize(static_cast<std::size_t>(in.gcount()));
  return data;
}

store::Candidate make(const std::string& method, const std::string& task, std::string source,
                      const std::string& origin) {
  store::Candidate c;
  c.method = method;
  c.task = task;
  c.sha256 = sha256_hex(source);
  c.source = std::move(source);
  c.origin = origin;
  return c;
}

/// "Category/name.py" -> "Category/name", or "" when the path has another shape.
std::string task_of(const std::string& rel) {
  fs::path p(rel);
  if (p.extension() != ".py") return "";
  auto parts = split(p.generic_string(), '/');
  if (parts.size() != 2) return "";
  return parts[0] + "/" + p.stem().string();
}

/// Reads a line's optional "round", "sample" (non-negative integers) and "worker" (a string or
/// an integer) into c; "" when they are usable, else what is wrong.
std::string read_generation_fields(const nlohmann::json& obj, store::Candidate& c) {
  for (auto [key, dest] : {std::pair{"round", &c.round}, std::pair{"sample", &c.sample}}) {
    if (!obj.contains(key) || obj[key].is_null()) continue;
    const auto& v = obj[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
      return fmt::format("field '{}' must be a non-negative integer, not {}", key, v.dump());
    }
    *dest = v.get<std::int64_t>();
  }
  if (obj.contains("worker") && !obj["worker"].is_null()) {
    const auto& w = obj["worker"];
    if (w.is_string()) {
      c.worker = w.get<std::string>();
    } else if (w.is_number_integer()) {
      c.worker = w.dump();
    } else {
      return "field 'worker' must be a string or an integer, not " + w.dump();
    }
  }
  return "";
}

/// What makes two candidates the same slot of a method: its task, round and sample.
std::string slot_of(const store::Candidate& c) {
  std::string slot = c.task;
  if (c.round) slot += fmt::format(" round {}", *c.round);
  if (c.sample) slot += fmt::format(" sample {}", *c.sample);
  return slot;
}

}  // namespace

Found from_directory(const fs::path& dir, const std::string& method) {
  Found found;
  if (!fs::is_directory(dir)) {
    found.problems.push_back(dir.string() + ": no such folder; expected Category/name.py files");
    return found;
  }
  const fs::path root = fs::canonical(dir);
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_symlink() && e.is_directory()) {
      found.problems.push_back(e.path().string() + ": a symlink to a folder (" +
                               fs::read_symlink(e.path()).string() + "), not followed; skipped");
    } else if (e.path().extension() == ".py" && (e.is_regular_file() || e.is_symlink())) {
      files.push_back(e.path());
    } else if (e.path().extension() == ".py" && !e.is_directory()) {
      found.problems.push_back(e.path().string() +
                               ": not a regular file (a FIFO, socket or "
                               "device); skipped");
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const std::string rel = f.lexically_relative(dir).generic_string();
    if (fs::is_symlink(f)) {  // read it only when it leads to a regular file inside the folder
      std::error_code ec;
      const fs::path target = fs::canonical(f, ec);
      const std::string inside = ec ? "" : target.lexically_relative(root).generic_string();
      if (ec || !fs::is_regular_file(target) || inside.empty() || inside.rfind("..", 0) == 0) {
        found.problems.push_back(f.string() + ": a symlink to " + fs::read_symlink(f).string() +
                                 ", which is not a regular file inside " + dir.string() +
                                 "; skipped");
        continue;
      }
    }
    const std::string task = task_of(rel);
    if (task.empty()) {
      found.problems.push_back(f.string() + ": not at Category/name.py under " + dir.string() +
                               "; skipped");
      continue;
    }
    std::error_code size_ec;
    const std::uintmax_t full_bytes = fs::file_size(f, size_ec);
    std::string source = read_prefix(f, kMaxSourceBytes + 1);
    if (const std::string too_long = cut_to_limit(source, size_ec ? source.size() : full_bytes);
        !too_long.empty()) {
      found.problems.push_back(f.string() + ": " + too_long);
    } else if (!is_valid_utf8(source)) {
      found.problems.push_back(f.string() + ": not valid UTF-8; recorded as bad_input");
    }
    found.candidates.push_back(make(method, task, std::move(source), f.string()));
  }
  if (files.empty()) found.problems.push_back(dir.string() + ": no .py candidate files found");
  return found;
}

Found from_jsonl(const fs::path& file, const std::string& method) {
  Found found;
  std::ifstream in(file);
  if (!in) {
    found.problems.push_back(file.string() + ": cannot open");
    return found;
  }
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    const std::string where = file.string() + ":" + std::to_string(lineno);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json obj;
    try {
      obj = parse_json_bounded(line);
    } catch (const std::exception& e) {
      found.problems.push_back(where + ": malformed JSON line (" + std::string(e.what()) +
                               "); skipped");
      continue;
    }
    if (!obj.is_object() || !obj.contains("file") || !obj["file"].is_string() ||
        !obj.contains("predict") || !obj["predict"].is_string()) {
      found.problems.push_back(where +
                               ": expected {\"file\": \"Category/name.py\", \"predict\": "
                               "\"<code>\"}; skipped");
      continue;
    }
    const std::string task = task_of(obj["file"].get<std::string>());
    if (task.empty()) {
      found.problems.push_back(where + ": file '" + obj["file"].get<std::string>() +
                               "' is not Category/name.py; skipped");
      continue;
    }
    std::string source = obj["predict"].get<std::string>();
    if (const std::string too_long = cut_to_limit(source, source.size()); !too_long.empty()) {
      found.problems.push_back(where + ": \"predict\" is " + too_long);
    }
    store::Candidate c = make(method, task, std::move(source), where);
    if (auto problem = read_generation_fields(obj, c); !problem.empty()) {
      found.problems.push_back(where + ": " + problem + "; skipped");
      continue;
    }
    found.candidates.push_back(std::move(c));
  }
  return found;
}

Found from_path(const fs::path& path, const std::string& method) {
  if (!fs::is_directory(path) && !fs::is_regular_file(path)) {
    throw Error(path.string() +
                ": no such file or folder (--candidates takes a folder of Category/name.py "
                "files or a .jsonl file)");
  }
  Found found = fs::is_directory(path) ? from_directory(path, method) : from_jsonl(path, method);
  keep_last_per_task(found);
  return found;
}

void keep_last_per_task(Found& found) {
  std::map<std::string, std::vector<size_t>> by_slot;
  for (size_t i = 0; i < found.candidates.size(); ++i) {
    by_slot[slot_of(found.candidates[i])].push_back(i);
  }
  std::vector<store::Candidate> kept;
  for (size_t i = 0; i < found.candidates.size(); ++i) {
    const auto& same = by_slot[slot_of(found.candidates[i])];
    if (same.back() != i) continue;
    if (same.size() > 1) {
      std::string origins;
      for (size_t k : same) origins += (origins.empty() ? "" : ", ") + found.candidates[k].origin;
      found.problems.push_back(fmt::format(
          "{}: {} candidates for this task ({}); the last one, {}, "
          "is evaluated",
          slot_of(found.candidates[i]), same.size(), origins, found.candidates[i].origin));
    }
    kept.push_back(std::move(found.candidates[i]));
  }
  found.candidates = std::move(kept);
}

void keep_known_tasks(Found& found, const suite::Suite& suite) {
  std::vector<store::Candidate> kept;
  for (auto& c : found.candidates) {
    if (suite.find(c.task)) {
      kept.push_back(std::move(c));
    } else {
      found.problems.push_back(c.origin + ": no task " + c.task + " in " + suite.root.string() +
                               "; skipped");
    }
  }
  found.candidates = std::move(kept);
}

std::string run_key(const std::string& method, const std::string& device, const std::string& track,
                    const std::vector<std::string>& tiers,
                    const std::vector<store::Candidate>& candidates, const std::string& shard) {
  std::vector<std::string> parts;
  for (const auto& c : candidates) parts.push_back(c.task + ":" + c.sha256);
  std::sort(parts.begin(), parts.end());
  std::string text = method + "|" + device + "|" + track + "|";
  for (const auto& t : tiers) text += t + ",";
  for (const auto& p : parts) text += "|" + p;
  if (!shard.empty()) text += "|shard " + shard;
  return sha256_hex(text).substr(0, 24);
}

}  // namespace kbx::plan
