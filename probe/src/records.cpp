// Encoding and parsing of the probe wire format (see kbx/probe_records.h and docs/probe.md).
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kbx/probe_records.h"

namespace kbx::probe {

// The byte offsets below are the wire format; docs/probe.md lists the same table.
static_assert(offsetof(Header, magic) == 0);
static_assert(offsetof(Header, version) == 8);
static_assert(offsetof(Header, header_size) == 10);
static_assert(offsetof(Header, record_size) == 12);
static_assert(offsetof(Header, pid) == 16);
static_assert(offsetof(Header, cupti_version) == 20);
static_assert(offsetof(Header, start_ns) == 24);

static_assert(offsetof(Record, kind) == 0);
static_assert(offsetof(Record, flags) == 2);
static_assert(offsetof(Record, device_id) == 4);
static_assert(offsetof(Record, start_ns) == 8);
static_assert(offsetof(Record, end_ns) == 16);
static_assert(offsetof(Record, external_id) == 24);
static_assert(offsetof(Record, correlation_id) == 32);
static_assert(offsetof(Record, stream_id) == 36);
static_assert(offsetof(Record, context_id) == 40);
static_assert(offsetof(Record, detail) == 44);
static_assert(offsetof(Record, grid) == 48);
static_assert(offsetof(Record, block) == 60);
static_assert(offsetof(Record, bytes) == 72);
static_assert(offsetof(Record, thread_id) == 80);
static_assert(offsetof(Record, name) == 88);

std::string_view Record::name_view() const {
  const auto* end = std::find(name.begin(), name.end(), '\0');
  return {name.data(), static_cast<std::size_t>(end - name.begin())};
}

void Record::set_name(std::string_view text) {
  const std::size_t n = std::min(text.size(), kNameCapacity - 1);
  name.fill('\0');
  std::memcpy(name.data(), text.data(), n);
  if (n < text.size()) {
    flags |= kNameTruncated;
  } else {
    flags &= static_cast<std::uint16_t>(~kNameTruncated);
  }
}

bool Record::is_activity() const {
  return kind == Kind::Kernel || kind == Kind::Memcpy || kind == Kind::Memset;
}

bool Record::is_timed() const {
  return is_activity() && !has(kNoTimestamp);
}

std::uint64_t Record::duration_ns() const {
  return end_ns > start_ns ? end_ns - start_ns : 0;
}

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::Kernel: return "kernel";
    case Kind::Memcpy: return "memcpy";
    case Kind::Memset: return "memset";
    case Kind::Push: return "push";
    case Kind::Pop: return "pop";
    case Kind::Flush: return "flush";
    case Kind::Error: return "error";
  }
  return "unknown";
}

namespace {

template <class T>
void append_bytes(std::vector<std::byte>& out, const T& value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

bool known_kind(std::uint16_t value) {
  return value >= static_cast<std::uint16_t>(Kind::Kernel) &&
         value <= static_cast<std::uint16_t>(Kind::Error);
}

}  // namespace

void append_header(std::vector<std::byte>& out, const Header& header) {
  append_bytes(out, header);
}

void append_record(std::vector<std::byte>& out, const Record& record) {
  append_bytes(out, record);
}

bool StreamParser::fail(std::string message) {
  error_ = "probe stream: " + std::move(message);
  return false;
}

bool StreamParser::feed(std::span<const std::byte> bytes) {
  if (failed()) return false;
  pending_.insert(pending_.end(), bytes.begin(), bytes.end());
  std::size_t pos = 0;
  if (!has_header_) {
    if (pending_.size() < kHeaderSize) return true;
    std::memcpy(&header_, pending_.data(), kHeaderSize);
    if (header_.magic != kMagic) return fail("bad magic at offset 0 (not a kbx probe stream)");
    if (header_.version != kFormatVersion) {
      return fail("format version " + std::to_string(header_.version) + ", this parser reads " +
                  std::to_string(kFormatVersion));
    }
    if (header_.header_size != kHeaderSize || header_.record_size != kRecordSize) {
      return fail("header_size " + std::to_string(header_.header_size) + " / record_size " +
                  std::to_string(header_.record_size) + ", expected " +
                  std::to_string(kHeaderSize) + " / " + std::to_string(kRecordSize));
    }
    has_header_ = true;
    pos = kHeaderSize;
  }
  for (; pending_.size() - pos >= kRecordSize; pos += kRecordSize) {
    std::uint16_t kind = 0;
    std::memcpy(&kind, pending_.data() + pos, sizeof kind);
    if (!known_kind(kind)) {
      return fail("record " + std::to_string(count_) + " at offset " +
                  std::to_string(offset_ + pos) + ": unknown kind " + std::to_string(kind));
    }
    Record& r = records_.emplace_back();
    std::memcpy(&r, pending_.data() + pos, kRecordSize);
    if (r.name.back() != '\0') {
      records_.pop_back();
      return fail("record " + std::to_string(count_) + " at offset " +
                  std::to_string(offset_ + pos) + ": name is not NUL-terminated");
    }
    ++count_;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(pos));
  offset_ += pos;
  return true;
}

bool StreamParser::finish() {
  if (failed()) return false;
  if (!has_header_) {
    return fail(pending_.empty() ? "empty stream (no header)"
                                 : "truncated header (" + std::to_string(pending_.size()) + " of " +
                                       std::to_string(kHeaderSize) + " bytes)");
  }
  if (!pending_.empty()) {
    return fail("truncated record " + std::to_string(count_) + " at offset " +
                std::to_string(offset_) + " (" + std::to_string(pending_.size()) + " of " +
                std::to_string(kRecordSize) + " bytes)");
  }
  return true;
}

std::vector<Record> StreamParser::take_records() {
  std::vector<Record> out;
  out.swap(records_);
  return out;
}

bool parse_stream(std::span<const std::byte> bytes, Stream& out, std::string* error) {
  StreamParser parser;
  const bool ok = parser.feed(bytes) && parser.finish();
  out.header = parser.header();
  out.records = parser.take_records();
  if (!ok && error != nullptr) *error = parser.error();
  return ok;
}

std::vector<Record> parse_records(std::span<const std::byte> bytes, std::string* error) {
  Stream stream;
  parse_stream(bytes, stream, error);
  return std::move(stream.records);
}

}  // namespace kbx::probe
