#include "store/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/util.h"

namespace kbx::store {

std::filesystem::path lock_path(const std::filesystem::path& db) {
  return db.string() + ".lock";
}

namespace {

/// "run 3 of method expert, kbx pid 1234 on host gpu7, started 2025-01-01T00:00:00Z", from the
/// holder's lock file (or a plainer line when it cannot be read yet).
std::string describe_holder(int fd) {
  std::string text(4096, '\0');
  const ssize_t n = pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  try {
    const auto j = nlohmann::json::parse(text);
    std::string run = j.contains("run")
                          ? "run " + std::to_string(j["run"].get<long long>()) + " of "
                          : std::string("a run of ");
    return run + "method " + j.value("method", "?") + ", kbx pid " +
           std::to_string(j.value("pid", 0)) + " on host " + j.value("host", "?") + ", started " +
           j.value("started", "?");
  } catch (const std::exception&) {
    return "a kbx eval that is starting";
  }
}

}  // namespace

std::optional<WriterLock> WriterLock::try_take(const std::filesystem::path& db,
                                               const std::string& method, std::string* holder) {
  const auto path = lock_path(db);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw Error(path.string() + ": cannot open the lock file: " + std::strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (holder) *holder = err == EWOULDBLOCK ? describe_holder(fd) : std::strerror(err);
    close(fd);
    if (err != EWOULDBLOCK) throw Error(path.string() + ": cannot lock: " + std::strerror(err));
    return std::nullopt;
  }
  WriterLock lock(fd, method);
  lock.started_ = utc_now_iso();
  lock.write_text("");
  return lock;
}

WriterLock::WriterLock(WriterLock&& other) noexcept
    : fd_(other.fd_), method_(std::move(other.method_)), started_(std::move(other.started_)) {
  other.fd_ = -1;
}

WriterLock::~WriterLock() {
  if (fd_ < 0) return;
  if (ftruncate(fd_, 0) != 0) {  // nothing to do: the lock goes with the descriptor all the same
  }
  close(fd_);
}

void WriterLock::set_run(std::int64_t run_id) {
  write_text(std::to_string(run_id));
}

void WriterLock::write_text(const std::string& run) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  nlohmann::json j = {{"pid", static_cast<long long>(getpid())},
                      {"host", host},
                      {"method", method_},
                      {"started", started_}};
  if (!run.empty()) j["run"] = std::stoll(run);
  const std::string text = j.dump() + "\n";
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, text.data(), text.size(), 0) < 0) {
    // the text only informs a second kbx; the lock itself holds regardless
  }
}

}  // namespace kbx::store
