#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace kbx::store {

/// The one writer of a results database: an advisory flock on `<db>.lock`, whose text says who
/// holds it (pid, host, method, run, start time). The kernel drops the lock when its holder dies,
/// so a lock left by a killed kbx is taken over without a question. Readers (`kbx results`) take
/// no lock.
class WriterLock {
 public:
  /// Takes the lock of db without waiting; nullopt (with *holder saying who holds it) when
  /// another process has it. Throws Error when the lock file cannot be opened.
  static std::optional<WriterLock> try_take(const std::filesystem::path& db,
                                            const std::string& method, std::string* holder);
  ~WriterLock();
  WriterLock(WriterLock&& other) noexcept;
  WriterLock& operator=(WriterLock&&) = delete;
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

  /// Adds the run id to the text of the lock file once the run is known.
  void set_run(std::int64_t run_id);

 private:
  WriterLock(int fd, std::string method) : fd_(fd), method_(std::move(method)) {}
  void write_text(const std::string& run);
  int fd_ = -1;
  std::string method_;
  std::string started_;
};

/// The path of db's lock file.
std::filesystem::path lock_path(const std::filesystem::path& db);

}  // namespace kbx::store
