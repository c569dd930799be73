#include "common/util.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/error.h"

namespace kbx {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open for reading: " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void write_file(const std::filesystem::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path.string() + ": cannot open for writing: " + std::strerror(errno));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw Error(path.string() + ": write failed");
}

long write_without_sigpipe(int fd, const void* data, std::size_t size) {
  sigset_t pipe_only, before, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &before);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;  // not ours to take
  const ssize_t written = write(fd, data, size);
  const int write_errno = errno;
  if (written < 0 && write_errno == EPIPE && !was_pending) {
    // The write raised SIGPIPE on this thread, held by the mask: take it before unblocking.
    const timespec at_once{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &at_once) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  errno = write_errno;
  return written;
}

bool is_valid_utf8(std::string_view s) {
  static constexpr unsigned kMin[4] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int extra = 0;
    unsigned cp = 0;
    if ((c & 0xE0) == 0xC0) {
      extra = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= n) return false;
    for (int k = 1; k <= extra; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    throw Error("sha256 failed");
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xF];
  }
  return out;
}

std::string utc_now_iso() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double monotonic_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::uint64_t random_seed() {
  std::random_device rd;
  return ((static_cast<std::uint64_t>(rd()) << 32) ^ rd()) & 0x7FFFFFFFFFFFFFFFULL;
}

std::size_t part_count(std::size_t amount, std::size_t unit, std::size_t cap) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<std::size_t>(amount / unit, 1, std::min(cores, cap));
}

void run_in_parts(std::size_t parts, const std::function<void(std::size_t)>& work) {
  if (parts <= 1) {
    work(0);
    return;
  }
  std::vector<std::thread> pool;
  for (std::size_t k = 0; k < parts; ++k) pool.emplace_back(work, k);
  for (auto& th : pool) th.join();
}

namespace {

/// The nearest UTF-8 character boundary at or before `at` (a continuation byte is 10xxxxxx).
std::size_t char_boundary(std::string_view text, std::size_t at) {
  while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) {
    --at;
  }
  return at;
}

}  // namespace

std::string head_and_tail(std::string_view text, std::size_t head, std::size_t tail) {
  if (text.size() <= head + tail) return std::string(text);
  const std::size_t head_end = char_boundary(text, head);
  const std::size_t tail_start = char_boundary(text, text.size() - tail);
  return std::string(text.substr(0, head_end)) + " [... " + std::to_string(tail_start - head_end) +
         " bytes ...] " + std::string(text.substr(tail_start));
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::filesystem::path kbx_home() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("KBX_HOME"); env && *env) return fs::path(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      if (fs::exists(dir / "python" / "kbx_worker" / "__init__.py")) return dir;
      if (fs::exists(dir / "share" / "kbx" / "python")) return dir / "share" / "kbx";
    }
  }
  return fs::path(KBX_SOURCE_DIR);
}

}  // namespace kbx

namespace kbx {

std::uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0
             ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
             : 0;
}

}  // namespace kbx
