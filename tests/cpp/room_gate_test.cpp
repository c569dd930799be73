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

#include "sched/reference.h"
#include "sched/room.h"
#include "suite/task.h"

namespace kbx::sched {
namespace {

constexpr std::uint64_t kGiB = 1ULL << 30;

TEST(RoomGate, StartsAtOnceWithRoomAndCountsEachChunkInFlight) {
  std::atomic<std::uint64_t> free{10 * kGiB};
  RoomGate gate(2 * kGiB, [&] { return free.load(); });
  const auto first = gate.enter(3 * kGiB, [] { return false; });  // 2 + 3 <= 10
  EXPECT_LT(first.waited_s, 0.2);
  EXPECT_LT(gate.enter(3 * kGiB, [] { return false; }).waited_s, 0.2);  // 2 + 3 + 3 <= 10
  EXPECT_EQ(gate.in_flight(), 2);
  // a third needs 2 + 6 + 3 = 11 GiB: it waits until one of the two leaves
  std::atomic<bool> entered{false};
  std::thread third([&] {
    gate.enter(3 * kGiB, [] { return false; });
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(entered);
  gate.leave(first.ticket);
  third.join();
  EXPECT_TRUE(entered);
  EXPECT_EQ(gate.in_flight(), 2);
  // a small chunk still fits beside them: 2 + 6 + 1 <= 10
  EXPECT_LT(gate.enter(1 * kGiB, [] { return false; }).waited_s, 0.2);
}

// A chunk's files, once written, are gone from the free bytes: counting its whole guess as
// well would count them twice, and the gate would hold the others back for room they have.
TEST(RoomGate, CountsOnlyWhatAChunkInFlightHasStillToWrite) {
  std::atomic<std::uint64_t> free{10 * kGiB};
  std::atomic<std::uint64_t> written{0};
  RoomGate gate(2 * kGiB, [&] { return free.load(); });
  gate.enter(
      6 * kGiB, [] { return false; }, [&] { return written.load(); });
  std::atomic<bool> entered{false};
  std::thread second([&] {
    gate.enter(3 * kGiB, [] { return false; });  // needs 2 + (6 - written) + 3 <= free
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(entered);  // 2 + 6 + 3 = 11 > 10
  free = 6 * kGiB;        // the first wrote 4 of its 6 GiB: free fell by as much
  written = 4 * kGiB;     // 2 + 2 + 3 = 7 > 6: still no room (set after free: the waiter polls)
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(entered);
  free = 5 * kGiB;
  written = 6 * kGiB;  // all written: 2 + 0 + 3 = 5 <= 5
  second.join();
  EXPECT_TRUE(entered);
}

// A chunk that writes more than its guess counts for nothing more (its files are in the free
// bytes already), never for less than nothing.
TEST(RoomGate, AChunkOverItsGuessCountsForNothingMore) {
  std::atomic<std::uint64_t> free{6 * kGiB};
  RoomGate gate(2 * kGiB, [&] { return free.load(); });
  gate.enter(
      1 * kGiB, [] { return false; }, [] { return 5 * kGiB; });
  EXPECT_LT(gate.enter(4 * kGiB, [] { return false; }).waited_s, 0.2);  // 2 + 0 + 4 <= 6
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
  EXPECT_LT(gate.enter(3 * kGiB, [] { return true; }).waited_s, 0.2);
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

TEST(FootprintGuess, ATaskRememberedFromAnEarlierRunGoesByItsOwnBytes) {
  FootprintGuess guess(8 * kGiB);
  guess.measured("Math", 6 * kGiB);
  guess.remembered("Math/sub", 1 * kGiB);
  guess.remembered("Math/add", 0);  // nothing known: the category's
  EXPECT_EQ(guess.guess("Math", "Math/sub"), 1 * kGiB + kGiB / 8);
  EXPECT_EQ(guess.guess("Math", "Math/add"), 6 * kGiB);
  EXPECT_EQ(guess.guess("Loss", "Loss/mse"), 8 * kGiB);
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

// A task whose files are all written (its worker said files_written, before its eager timing
// waits for the slot) has nothing left to write: its guess, not its smaller folder, counts.
TEST(ChunkWrittenBytes, ATaskWithItsFilesWrittenCountsItsWholeGuess) {
  const auto dir = std::filesystem::temp_directory_path() / "kbx-chunk-written-test";
  std::filesystem::remove_all(dir);
  suite::Task add, mul;
  add.category = mul.category = "Math";
  add.name = "add";
  mul.name = "mul";
  ReferenceJob a, b;
  a.task = &add;
  b.task = &mul;
  a.out_dir = dir / "add";
  b.out_dir = dir / "mul";
  std::filesystem::create_directories(a.out_dir);
  std::filesystem::create_directories(b.out_dir);
  std::ofstream(a.out_dir / "x.ref.kbt") << std::string(1000, 'x');
  std::ofstream(b.out_dir / "x.ref.kbt") << std::string(300, 'y');
  const std::vector<ReferenceJob> jobs = {a, b};
  const std::vector<std::uint64_t> guesses = {8000, 9000};
  std::vector<std::atomic<bool>> done(2);
  EXPECT_EQ(chunk_written_bytes(jobs, done, guesses), 1300u);  // both still writing
  done[0] = true;
  EXPECT_EQ(chunk_written_bytes(jobs, done, guesses), 8300u);  // add: nothing more to write
  done[1] = true;
  EXPECT_EQ(chunk_written_bytes(jobs, done, guesses), 17000u);
  std::filesystem::remove_all(dir);
}

TEST(ReferenceRetryAlone, OnlyGpuMemoryAndContendedBaselinesAreComputedAgainAlone) {
  // The worker's "type: message" of a task's failure (sched/reference.cpp)
  const std::string oom = "OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 GiB";
  const std::string contended =
      "GpuContended: another process's work shared the GPU while case perf's eager baseline was "
      "timed (it did not drain in 1 s)";
  const std::string broken = "RuntimeError: shape mismatch";
  EXPECT_TRUE(out_of_gpu_memory(oom));
  EXPECT_FALSE(gpu_contended(oom));
  EXPECT_TRUE(gpu_contended(contended));
  EXPECT_FALSE(out_of_gpu_memory(contended));
  // only the worker's exception type counts, not the words in another error's message
  EXPECT_FALSE(gpu_contended("RuntimeError: GpuContended: no"));
  ASSERT_TRUE(alone_retry(oom).has_value());
  EXPECT_NE(alone_retry(oom)->prefix.find("memory"), std::string::npos);
  EXPECT_NE(alone_retry(oom)->deferred_because.find("beside other work"), std::string::npos);
  ASSERT_TRUE(alone_retry(contended).has_value());
  EXPECT_NE(alone_retry(contended)->prefix.find("another process's GPU work"), std::string::npos);
  EXPECT_NE(alone_retry(contended)->deferred_because.find("did not drain"), std::string::npos);
  EXPECT_FALSE(alone_retry(broken).has_value());
  EXPECT_FALSE(alone_retry("").has_value());
  // session 41: a worker that found no room for an allocation may hold cuDNN's slower plan
  const std::string starved =
      "GpuStarved: this worker's process found no room on the GPU for 6 allocation(s) by the end "
      "of case perf's timings, beside other work";
  EXPECT_TRUE(gpu_starved(starved));
  EXPECT_FALSE(gpu_starved("RuntimeError: GpuStarved: no"));
  EXPECT_FALSE(out_of_gpu_memory(starved)) << "its words are not an error of the reference's own";
  ASSERT_TRUE(alone_retry(starved).has_value());
  EXPECT_NE(alone_retry(starved)->deferred_because.find("slower plan"), std::string::npos);
  EXPECT_NE(alone_retry(starved)->prefix.find("to itself"), std::string::npos);
  // a GPU library's failed allocation, or cuDNN's internal error (session 35 on an H100)
  EXPECT_TRUE(out_of_gpu_memory("RuntimeError: CUDA error: CUSOLVER_STATUS_ALLOC_FAILED"));
  const std::string cudnn = "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR";
  EXPECT_FALSE(out_of_gpu_memory(cudnn));
  ASSERT_TRUE(alone_retry(cudnn).has_value());
  EXPECT_NE(alone_retry(cudnn)->deferred_because.find("beside other work"), std::string::npos);
  EXPECT_NE(alone_retry(cudnn)->prefix.find("to itself"), std::string::npos);
  // session 40 (12 jobs on an H100): an honest QR's reference lost its cuSOLVER handle
  const std::string cusolver =
      "RuntimeError: cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling "
      "`cusolverDnCreate(handle)`.";
  EXPECT_FALSE(out_of_gpu_memory(cusolver));
  ASSERT_TRUE(alone_retry(cusolver).has_value());
  EXPECT_NE(alone_retry(cusolver)->deferred_because.find("CUSOLVER_STATUS_INTERNAL_ERROR"),
            std::string::npos);
  EXPECT_TRUE(
      gpu_library_internal_error("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when "
                                 "calling `cublasCreate(handle)`"));
  EXPECT_TRUE(gpu_library_internal_error("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR"));
  // a status word of no failed allocation stays the candidate's (or the reference's) own error
  EXPECT_FALSE(gpu_library_internal_error("RuntimeError: CUSOLVER_STATUS_INVALID_VALUE"));
  EXPECT_FALSE(gpu_library_internal_error("RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED"));
}

}  // namespace
}  // namespace kbx::sched
