#include "common/fingerprint.h"

#include <array>
#include <cstdio>

#include "common/util.h"

namespace kbx {
using nlohmann::json;

namespace {

std::string text_of(const json& env, const char* key) {
  if (!env.is_object() || !env.contains(key)) return "";
  const json& v = env.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

/// A clock reading in MHz, or null for "[N/A]" and other non-numbers.
json clock_value(const std::string& field) {
  const std::string t = trimmed(field);
  if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return nullptr;
  return std::stoll(t);
}

}  // namespace

FingerprintFields fingerprint_fields(const json& environment) {
  FingerprintFields f;
  f.gpu = text_of(environment, "gpu");
  if (environment.is_object() && environment.contains("gpu_count") &&
      environment.at("gpu_count").is_number_integer()) {
    f.gpu_count = environment.at("gpu_count").get<int>();
  }
  f.driver = text_of(environment, "driver");
  f.cuda = text_of(environment, "cuda");
  f.torch = text_of(environment, "torch");
  f.triton = text_of(environment, "triton");
  return f;
}

std::string fingerprint(const FingerprintFields& f) {
  // A JSON array quotes every field, so no choice of values can make two inputs read alike.
  const json canonical = {
      "kbx-fingerprint-1", f.gpu, f.gpu_count, f.driver, f.cuda, f.torch, f.triton};
  return sha256_hex(canonical.dump()).substr(0, 16);
}

json parse_gpu_clocks(const std::string& out) {
  json rows = json::array();
  for (const auto& line : split(out, '\n')) {
    const auto fields = split(line, ',');
    if (fields.size() < 2) continue;
    rows.push_back({{"sm", clock_value(fields[0])}, {"mem", clock_value(fields[1])}});
  }
  return rows.empty() ? json(nullptr) : rows;
}

json gpu_clocks() {
  FILE* p = popen(
      "nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv,noheader,nounits 2>/dev/null", "r");
  if (!p) return nullptr;
  std::array<char, 4096> buf{};
  std::string out;
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  if (pclose(p) != 0) return nullptr;
  return parse_gpu_clocks(out);
}

}  // namespace kbx
