#include "dist/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <numeric>

#include "common/error.h"

namespace kbx::dist {
namespace {

/// A non-negative whole number, or -1 when the text is not one.
int parse_count(std::string_view s) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return -1;
  return v;
}

}  // namespace

std::string Shard::text() const {
  return fmt::format("{}/{}", index, count);
}

Shard parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  const std::string given(text);
  if (slash == std::string_view::npos) {
    throw Error("--shard " + given + ": expected i/N (shard i of N, numbered from 1, e.g. 1/4)");
  }
  const int i = parse_count(text.substr(0, slash));
  const int n = parse_count(text.substr(slash + 1));
  if (i < 0 || n < 0) {
    throw Error("--shard " + given + ": i and N must be whole numbers (e.g. 1/4)");
  }
  if (n < 1) throw Error("--shard " + given + ": N must be at least 1");
  if (i < 1 || i > n) {
    throw Error(
        fmt::format("--shard {}: shards are numbered from 1 to N (1/{} .. {}/{})", given, n, n, n));
  }
  return {i, n};
}

std::vector<std::size_t> shard_members(const std::vector<std::string>& job_keys, Shard shard) {
  std::vector<std::size_t> order(job_keys.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return job_keys[a] < job_keys[b]; });
  std::vector<std::size_t> mine;
  for (std::size_t k = static_cast<std::size_t>(shard.index - 1); k < order.size();
       k += static_cast<std::size_t>(shard.count)) {
    mine.push_back(order[k]);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

}  // namespace kbx::dist
