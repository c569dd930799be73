#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kbx {

/// Whole file as bytes; throws Error naming the path when it cannot be read.
std::string read_file(const std::filesystem::path& path);

/// Writes (replacing) a file; throws Error naming the path on failure.
void write_file(const std::filesystem::path& path, std::string_view data);

/// True when data is well-formed UTF-8.
bool is_valid_utf8(std::string_view data);

/// write(2) that never raises SIGPIPE, whatever the process's disposition of it (kbx's CLI ignores
/// it; a test binary or another program using the library may not): when the reader has closed
/// its end, the answer is -1 with errno EPIPE and the process lives on.
long write_without_sigpipe(int fd, const void* data, std::size_t size);

/// Lower-case hex SHA-256 of data.
std::string sha256_hex(std::string_view data);

/// Current UTC time as ISO-8601 ("2026-11-30T05:45:23Z").
std::string utc_now_iso();

/// Seconds on a monotonic clock.
double monotonic_seconds();

/// A 63-bit random seed from the OS.
std::uint64_t random_seed();

/// The machine's physical memory in bytes (sysconf).
std::uint64_t physical_memory_bytes();

/// text whole when it has at most head + tail bytes, else its first `head` and last `tail`
/// bytes around a mark of what was left out (cut at UTF-8 character boundaries): a one-line
/// view of a long message whose end says most (a traceback's last line).
std::string head_and_tail(std::string_view text, std::size_t head, std::size_t tail);

/// Splits on a separator, dropping empty pieces.
std::vector<std::string> split(std::string_view text, char sep);

/// How many parts to split `amount` of work into: one per `unit` of it, at least one, at most
/// the machine's cores and `cap`.
std::size_t part_count(std::size_t amount, std::size_t unit, std::size_t cap);

/// Runs work(0), ..., work(parts - 1), each on a thread of its own when there are several.
void run_in_parts(std::size_t parts, const std::function<void(std::size_t)>& work);

/// The directory kbx's own files (python/, tasks/, solutions/) live in.
std::filesystem::path kbx_home();

}  // namespace kbx
