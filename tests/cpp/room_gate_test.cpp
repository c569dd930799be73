// The reference chunks' room gate: a chunk starts only while the free bytes cover the reserve
// plus every chunk in flight, and always when nothing is live.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sched/room.h"

namespace kbx::sched {
namespace {

constexpr std::uint64_t kGiB = 1ULL << 30;

TEST(RoomGate, StartsAtOnceWithRoomAndCountsEachChunkInFlight) {
  std::atomic<std::uint64_t> free{10 * kGiB};
  RoomGate gate(2 * kGiB, 3 * kGiB, [&] { return free.load(); });
  EXPECT_LT(gate.enter([] { return false; }), 0.2);  // 2 + 3 <= 10
  EXPECT_LT(gate.enter([] { return false; }), 0.2);  // 2 + 6 <= 10
  EXPECT_EQ(gate.in_flight(), 2);
  // a third needs 2 + 9 = 11 GiB: it waits until one of the two leaves
  std::atomic<bool> entered{false};
  std::thread third([&] {
    gate.enter([] { return false; });
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(entered);
  gate.leave();
  third.join();
  EXPECT_TRUE(entered);
  EXPECT_EQ(gate.in_flight(), 2);
}

TEST(RoomGate, WaitsForTheFreeBytesToGrow) {
  std::atomic<std::uint64_t> free{4 * kGiB};  // below 2 + 3
  RoomGate gate(2 * kGiB, 3 * kGiB, [&] { return free.load(); });
  std::atomic<bool> entered{false};
  std::thread chunk([&] {
    gate.enter([] { return false; });  // something is live: its files may go
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(entered);
  free = 6 * kGiB;  // a task's last job ended: its files went
  chunk.join();     // polled: no leave() needed
  EXPECT_TRUE(entered);
}

TEST(RoomGate, AlwaysStartsWhenNothingIsLiveOrInFlight) {
  RoomGate gate(2 * kGiB, 3 * kGiB, [] { return std::uint64_t{0}; });
  EXPECT_LT(gate.enter([] { return true; }), 0.2);
  EXPECT_EQ(gate.in_flight(), 1);
}

TEST(RoomGate, FreeBytesOfTheWorkFolderAreKnown) {
  const std::uint64_t free = free_bytes_for("/tmp/kbx-room-gate-test-missing/sub");
  EXPECT_GT(free, 0u);
  EXPECT_GE(room_reserve_bytes(), 2 * kGiB);
  EXPECT_GT(task_bytes_guess("cuda"), task_bytes_guess("cpu"));
}

}  // namespace
}  // namespace kbx::sched
