// kbx probe records: the wire format that libkbx_probe.so writes and the supervisor reads,
// its parser, and the per-call analyses the supervisor's timing and attribution use.
// No CUDA dependency. The byte layout is documented in docs/probe.md.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kbx::probe {

static_assert(std::endian::native == std::endian::little,
              "the probe wire format is little-endian and written in native order");

// ---------------------------------------------------------------------------------------------
// Format constants
// ---------------------------------------------------------------------------------------------

/// First eight bytes of every probe stream.
inline constexpr std::array<char, 8> kMagic = {'K', 'B', 'X', 'P', 'R', 'O', 'B', 'E'};
/// Bumped on any change of Header or Record layout or of the meaning of a field.
inline constexpr std::uint16_t kFormatVersion = 1;
/// Bytes of the stream header.
inline constexpr std::size_t kHeaderSize = 32;
/// Bytes of every record after the header.
inline constexpr std::size_t kRecordSize = 288;
/// Bytes of Record::name, including the terminating NUL (so at most 199 name characters).
inline constexpr std::size_t kNameCapacity = 200;

/// What a record describes. Values are part of the wire format.
enum class Kind : std::uint16_t {
  Kernel = 1,  ///< a kernel execution (CUPTI CONCURRENT_KERNEL)
  Memcpy = 2,  ///< a memory copy (CUPTI MEMCPY)
  Memset = 3,  ///< a memory set (CUPTI MEMSET)
  Push = 4,    ///< kbx_probe_push was called: start_ns = CUPTI host timestamp, external_id = id
  Pop = 5,     ///< kbx_probe_pop was called: start_ns = timestamp, external_id = the id popped
  Flush = 6,   ///< end of one kbx_probe_flush (or the exit flush): detail = flush sequence number
  Error = 7,   ///< the probe could not do something: name = message, detail = CUptiResult
};

/// Bits of Record::flags.
enum Flag : std::uint16_t {
  kNameTruncated = 1u << 0,   ///< the kernel name was longer than kNameCapacity - 1 bytes
  kNoTimestamp = 1u << 1,     ///< CUPTI gave start = end = 0 (timing could not be collected)
  kGraphLaunched = 1u << 2,   ///< executed through a CUDA graph launch (graph id != 0)
  kDeviceLaunched = 1u << 3,  ///< launched from the device (CDP or device graph launch)
  kExitFlush = 1u << 4,       ///< on a Flush record: the flush made at process exit
};

/// The stream header: written once, before any record.
struct Header {
  std::array<char, 8> magic = kMagic;
  std::uint16_t version = kFormatVersion;
  std::uint16_t header_size = kHeaderSize;
  std::uint32_t record_size = kRecordSize;
  std::uint32_t pid = 0;            ///< process that wrote the stream
  std::uint32_t cupti_version = 0;  ///< cuptiGetVersion() of the CUPTI the probe runs against
  std::uint64_t start_ns = 0;       ///< CUPTI timestamp when the probe was initialised
};

/// One fixed-size record. All timestamps are CUPTI timestamps in ns (one time base for host
/// markers and GPU activity). Fields that do not apply to a kind are zero.
struct Record {
  Kind kind = Kind::Kernel;
  std::uint16_t flags = 0;           ///< Flag bits
  std::uint32_t device_id = 0;       ///< CUDA device ordinal (activity records)
  std::uint64_t start_ns = 0;        ///< GPU start (activity) or host timestamp (markers)
  std::uint64_t end_ns = 0;          ///< GPU end (activity); equals start_ns on markers
  std::uint64_t external_id = 0;     ///< external correlation id pushed around the launch; 0: none
  std::uint32_t correlation_id = 0;  ///< CUPTI correlation id of the launching API call
  std::uint32_t stream_id = 0;       ///< CUPTI stream id
  std::uint32_t context_id = 0;      ///< CUPTI context id
  std::uint32_t detail = 0;          ///< Memcpy: CUpti_ActivityMemcpyKind; Memset: value;
                                     ///< Flush: sequence number; Error: CUptiResult
  std::array<std::int32_t, 3> grid{};      ///< Kernel grid dimensions
  std::array<std::int32_t, 3> block{};     ///< Kernel block dimensions
  std::uint64_t bytes = 0;                 ///< Memcpy/Memset: bytes; Flush: records dropped so far
  std::uint64_t thread_id = 0;             ///< Push/Pop: OS thread id of the caller
  std::array<char, kNameCapacity> name{};  ///< Kernel name or Error message, NUL-terminated

  /// The name up to its terminating NUL.
  std::string_view name_view() const;
  /// Stores `text`, cut to kNameCapacity - 1 bytes, and sets or clears kNameTruncated.
  void set_name(std::string_view text);
  /// True for Kernel, Memcpy and Memset: the records that take GPU time.
  bool is_activity() const;
  /// True when the record has GPU timestamps (an activity record without kNoTimestamp).
  bool is_timed() const;
  /// end_ns - start_ns, or 0 when end_ns < start_ns.
  std::uint64_t duration_ns() const;
  bool has(Flag f) const { return (flags & f) != 0; }
};

static_assert(sizeof(Header) == kHeaderSize);
static_assert(sizeof(Record) == kRecordSize);
static_assert(std::is_trivially_copyable_v<Header> && std::is_standard_layout_v<Header>);
static_assert(std::is_trivially_copyable_v<Record> && std::is_standard_layout_v<Record>);

/// A short lower-case name of a kind ("kernel", "memcpy" ...); "unknown" for other values.
std::string_view kind_name(Kind kind);

// ---------------------------------------------------------------------------------------------
// Encoding and parsing
// ---------------------------------------------------------------------------------------------

/// Appends the kHeaderSize bytes of `header` to `out`.
void append_header(std::vector<std::byte>& out, const Header& header);
/// Appends the kRecordSize bytes of `record` to `out`.
void append_record(std::vector<std::byte>& out, const Record& record);

/// Incremental parser for a stream read in pieces (for instance from the probe's pipe).
/// Once it has failed it stays failed and ignores further input.
class StreamParser {
 public:
  /// Consumes `bytes`; parses the header and every whole record now available.
  /// Returns false once the stream is invalid (see error()).
  bool feed(std::span<const std::byte> bytes);
  /// Declares the end of the stream. Returns false if the stream was invalid, had no header,
  /// or ended inside the header or a record (a truncated stream).
  bool finish();
  /// True once a valid header has been read.
  bool has_header() const { return has_header_; }
  /// The header; meaningful only when has_header().
  const Header& header() const { return header_; }
  /// Moves out the records parsed so far, in stream order.
  std::vector<Record> take_records();
  /// Records parsed since the start, including those already taken.
  std::size_t record_count() const { return count_; }
  /// Why the stream is invalid; empty while it is valid.
  const std::string& error() const { return error_; }
  bool failed() const { return !error_.empty(); }

 private:
  bool fail(std::string message);
  std::vector<std::byte> pending_;  // bytes of an incomplete header or record
  std::vector<Record> records_;
  Header header_{};
  bool has_header_ = false;
  std::size_t count_ = 0;
  std::size_t offset_ = 0;  // stream offset of pending_[0], for error messages
  std::string error_;
};

/// A whole parsed stream.
struct Stream {
  Header header{};
  std::vector<Record> records;
};

/// Parses a complete stream. On error returns false, fills `*error` (when not null) and leaves
/// in `out.records` the whole records read before the error.
bool parse_stream(std::span<const std::byte> bytes, Stream& out, std::string* error);

/// Parses a complete stream and returns its records; on error fills `*error` (when not null) and
/// returns the whole records read before the error.
std::vector<Record> parse_records(std::span<const std::byte> bytes, std::string* error);

// ---------------------------------------------------------------------------------------------
// Per-call analysis
// ---------------------------------------------------------------------------------------------

/// A half-open time interval [start_ns, end_ns) in CUPTI ns.
struct Interval {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t length_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
  bool operator==(const Interval&) const = default;
};

/// Activity records (Kernel, Memcpy, Memset) grouped by external id, in stream order within a
/// group. Records without an external id (0) and marker records are left out.
std::map<std::uint64_t, std::vector<Record>> group_by_external_id(std::span<const Record> records);

/// From the earliest start to the latest end of the timed activity records; nullopt if none.
std::optional<Interval> device_span(std::span<const Record> records);

/// Total time during which at least one timed activity record ran (the union of their intervals).
std::uint64_t busy_ns(std::span<const Record> records);

/// The window of call `external_id`: from its Push marker (or its first record's start when the
/// marker is missing) to the later of its Pop marker and its last record's end. nullopt when the
/// stream has neither a marker nor a record of that id.
std::optional<Interval> call_window(std::span<const Record> records, std::uint64_t external_id);

/// Timed activity records without an external id that overlap `window`: GPU work that ran
/// during a call but was not launched by the calling thread inside it.
std::vector<Record> unattributed(std::span<const Record> records, Interval window);

/// Where a kernel came from.
enum class KernelOrigin {
  Candidate,  ///< compiled from one of the candidate's @triton.jit functions
  Library,    ///< aten, cuBLAS(Lt), cuDNN, CUTLASS, CUB/Thrust, flash-attention ...
  Inductor,   ///< Triton code generated by torch.compile (triton_poi_..., triton_red_ ...)
  Unknown,    ///< none of the above
};

/// A short name of an origin ("candidate", "library", "inductor", "unknown").
std::string_view origin_name(KernelOrigin origin);

/// True when `name` (mangled or demangled) looks like a library kernel. Also useful to flag
/// candidate functions whose names imitate library kernels.
bool looks_like_library_kernel(std::string_view name);

/// True when `name` is a library kernel that only moves data: PyTorch's copies (contiguous,
/// clone, transposing or broadcasting copies), dtype casts (direct_copy_kernel_cuda and the
/// float16/bfloat16/float8 copy kernels), fills (FillFunctor: zeros, full, zero_) and cat's
/// batched copy. Such glue is not the op's work done by a library (docs/probe.md).
bool looks_like_glue_kernel(std::string_view name);

/// Classifies a kernel name given the candidate's @triton.jit function names. Library patterns
/// win over candidate names, so a candidate cannot claim a cuBLAS kernel by naming a function
/// after it. A Triton kernel is named after its function, optionally followed (older Triton) by
/// "_" and a specialisation suffix starting with a digit ("add_kernel_0d1d2de"). When
/// `truncated`, a function name that starts with the stored name counts as a match.
KernelOrigin classify_kernel(std::string_view name, std::span<const std::string> triton_functions,
                             bool truncated = false);

/// classify_kernel on a Kernel record's name and truncation flag.
KernelOrigin classify_kernel(const Record& record, std::span<const std::string> triton_functions);

/// GPU time of one call split by origin (sums of record durations, not unions).
struct Attribution {
  std::uint64_t candidate_ns = 0;
  std::uint64_t library_ns = 0;
  std::uint64_t inductor_ns = 0;
  std::uint64_t unknown_ns = 0;
  std::uint64_t copy_ns = 0;  ///< Memcpy and Memset: glue, not counted in kernel_ns()
  std::uint64_t glue_ns = 0;  ///< library kernels that only copy, cast or fill: not in kernel_ns()
  std::uint64_t kernel_ns() const { return candidate_ns + library_ns + inductor_ns + unknown_ns; }
  /// Glue kernels, copies and sets: data movement around the candidate's kernels.
  std::uint64_t all_glue_ns() const { return glue_ns + copy_ns; }
  /// candidate_ns / kernel_ns(); 0 when the call ran no kernel.
  double candidate_share() const;
};

/// Sums the durations of the timed activity records by origin; library kernels that
/// looks_like_glue_kernel() go to glue_ns, copies and sets to copy_ns.
Attribution attribute(std::span<const Record> records,
                      std::span<const std::string> triton_functions);

}  // namespace kbx::probe
