// The reference chunks' room gate: a chunk starts only while the free bytes cover the reserve,
// every chunk in flight and its own guess, and always when nothing is live; the guesses come
// from the category's tasks measured so far.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "sched/room.h"

namespace kbx::sched {
namespace {

constexpr std::uint64_t kGiB = 1ULL << 30;

TEST(RoomGate, StartsAtOnceWithRoomAndCountsEachChunkInFlight) {
  std::atomic<std::uint64_t> free{10 * kGiB};
  RoomGate gate(2 * kGiB, [&] { return free.load(); });
  EXPECT_LT(gate.enter(3 * kGiB, [] { return false; }), 0.2);  // 2 + 3 <= 10
  EXPECT_LT(gate.enter(3 * kGiB, [] { return false; }), 0.2);  // 2 + 3 + 3 <= 10
  EXPECT_EQ(gate.in_flight(), 2);
  // a third needs 2 + 6 + 3 = 11 GiB: it waits until one of the two leaves
  std::atomic<bool> entered{false};
  std::thread third([&] {
    gate.enter(3 * kGiB, [] { return false; });
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(entered);
  gate.leave(3 * kGiB);
  third.join();
  EXPECT_TRUE(entered);
  EXPECT_EQ(gate.in_flight(), 2);
  // a small chunk still fits beside them: 2 + 6 + 1 <= 10
  EXPECT_LT(gate.enter(1 * kGiB, [] { return false; }), 0.2);
}

TEST(RoomGate, WaitsForTheFreeBytesToGrow) {
  std::atomic<std::uint64_t> free{4 * kGiB};  // below 2 + 3
  RoomGate gate(2 * kGiB, [&] { return free.load(); });
  std::atomic<bool> entered{false};
  std::thread chunk([&] {
    gate.enter(3 * kGiB, [] { return false; });  // something is live: its files may go
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(entered);
  free = 6 * kGiB;  // a task's last job ended: its files went
  chunk.join();     // polled: no leave() needed
  EXPECT_TRUE(entered);
}

TEST(RoomGate, AlwaysStartsWhenNothingIsLiveOrInFlight) {
  RoomGate gate(2 * kGiB, [] { return std::uint64_t{0}; });
  EXPECT_LT(gate.enter(3 * kGiB, [] { return true; }), 0.2);
  EXPECT_EQ(gate.in_flight(), 1);
}

TEST(RoomGate, FreeBytesOfTheWorkFolderAreKnown) {
  const std::uint64_t free = free_bytes_for("/tmp/kbx-room-gate-test-missing/sub");
  EXPECT_GT(free, 0u);
  EXPECT_GE(room_reserve_bytes(), 2 * kGiB);
  EXPECT_GT(task_bytes_guess("cuda"), task_bytes_guess("cpu"));
}

TEST(FootprintGuess, TheCategorysLargestTaskSoFarElseTheDefault) {
  FootprintGuess guess(8 * kGiB);
  EXPECT_EQ(guess.guess("Math"), 8 * kGiB);
  guess.measured("Math", 1 * kGiB);
  guess.measured("Math", 3 * kGiB);
  guess.measured("Math", 2 * kGiB);
  EXPECT_EQ(guess.guess("Math"), 3 * kGiB);
  EXPECT_EQ(guess.guess("Loss"), 8 * kGiB);
}

TEST(FootprintGuess, FolderBytesCountsTheFilesBelow) {
  const auto dir = std::filesystem::temp_directory_path() / "kbx-folder-bytes-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "sub");
  std::ofstream(dir / "a") << std::string(1000, 'x');
  std::ofstream(dir / "sub" / "b") << std::string(24, 'y');
  EXPECT_EQ(folder_bytes(dir), 1024u);
  EXPECT_EQ(folder_bytes(dir / "missing"), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kbx::sched
