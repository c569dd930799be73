#include "dist/shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "common/error.h"

namespace kbx {
namespace {

std::vector<std::string> keys(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back("Cat" + std::to_string(i % 7) + "/t" + std::to_string(i));
  return out;
}

/// The keys of a shard's members, as a set.
std::set<std::string> member_keys(const std::vector<std::string>& k, dist::Shard s) {
  std::set<std::string> out;
  for (auto i : dist::shard_members(k, s)) out.insert(k[i]);
  return out;
}

TEST(Shard, ParsesOneBasedIndexAndCount) {
  auto s = dist::parse_shard("2/4");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.text(), "2/4");
  EXPECT_EQ(dist::parse_shard("1/1").text(), "1/1");
}

TEST(Shard, RejectsBadInputWithTheFlagAndAnExample) {
  for (const char* bad : {"", "3", "0/2", "3/2", "1/0", "-1/2", "a/b", "1/2/3", "1 /2", "1/2x"}) {
    try {
      dist::parse_shard(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--shard"), std::string::npos) << e.what();
    }
  }
  try {
    dist::parse_shard("0/2");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("numbered from 1"), std::string::npos) << e.what();
  }
}

TEST(Shard, ShardsCoverEveryJobExactlyOnce) {
  for (int jobs : {0, 1, 2, 5, 12, 184}) {
    const auto k = keys(jobs);
    for (int n : {1, 2, 3, 4, 7, 200}) {
      std::vector<int> seen(k.size(), 0);
      std::size_t smallest = k.size(), largest = 0;
      for (int i = 1; i <= n; ++i) {
        const auto mine = dist::shard_members(k, {i, n});
        EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
        for (auto j : mine) ++seen[j];
        smallest = std::min(smallest, mine.size());
        largest = std::max(largest, mine.size());
      }
      EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }))
          << jobs << " jobs, " << n << " shards";
      if (jobs) {
        EXPECT_LE(largest - smallest, 1u) << "balanced within one job";
      }
    }
  }
}

TEST(Shard, MembershipDoesNotDependOnTheOrderOfTheJobs) {
  auto k = keys(40);
  std::vector<std::set<std::string>> before;
  for (int i = 1; i <= 3; ++i) before.push_back(member_keys(k, {i, 3}));
  std::mt19937 rng(7);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(k.begin(), k.end(), rng);
    for (int i = 1; i <= 3; ++i) EXPECT_EQ(member_keys(k, {i, 3}), before[i - 1]);
  }
}

TEST(Shard, StableAcrossVersionsOfThisCode) {
  // Sorted keys dealt round-robin: a change here reshuffles shards of runs already started.
  const std::vector<std::string> k = {"Math/add", "Activation/relu", "Loss/mse_loss", "Math/abs"};
  EXPECT_EQ(member_keys(k, {1, 2}), (std::set<std::string>{"Activation/relu", "Math/abs"}));
  EXPECT_EQ(member_keys(k, {2, 2}), (std::set<std::string>{"Loss/mse_loss", "Math/add"}));
  EXPECT_EQ(member_keys(k, {3, 3}), (std::set<std::string>{"Math/abs"}));
}

}  // namespace
}  // namespace kbx
