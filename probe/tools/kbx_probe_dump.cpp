// kbx_probe_dump: prints a probe stream (a KBX_PROBE_FILE capture) as text, one record a line,
// then one summary line per timed call. Exit status 1 when the stream is invalid or truncated.
//
//   kbx_probe_dump [--triton fn1,fn2,...] FILE
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kbx/probe_records.h"

namespace {

using namespace kbx::probe;

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1) {
    if (comma > start) out.push_back(list.substr(start, comma - start));
  }
  if (start < list.size()) out.push_back(list.substr(start));
  return out;
}

// Offsets from the probe's start time keep the lines short; raw values would be 19 digits.
std::int64_t rel(std::uint64_t t, std::uint64_t base) {
  return static_cast<std::int64_t>(t - base);
}

void print_record(const Record& r, std::uint64_t base, const std::vector<std::string>& triton) {
  std::printf("%-6s ext=%-4" PRIu64 " corr=%-7u dev=%u stream=%-4u t=%+" PRId64 " ns",
              std::string(kind_name(r.kind)).c_str(), r.external_id, r.correlation_id, r.device_id,
              r.stream_id, rel(r.start_ns, base));
  if (r.is_activity()) std::printf(" dur=%" PRIu64 " ns", r.duration_ns());
  if (r.kind == Kind::Kernel) {
    std::printf(" grid=%dx%dx%d block=%dx%dx%d [%s]", r.grid[0], r.grid[1], r.grid[2], r.block[0],
                r.block[1], r.block[2],
                std::string(origin_name(classify_kernel(r, triton))).c_str());
  }
  if (r.kind == Kind::Memcpy || r.kind == Kind::Memset) std::printf(" bytes=%" PRIu64, r.bytes);
  if (r.kind == Kind::Push || r.kind == Kind::Pop) std::printf(" tid=%" PRIu64, r.thread_id);
  if (r.kind == Kind::Flush) std::printf(" seq=%u dropped=%" PRIu64, r.detail, r.bytes);
  if (r.flags != 0) std::printf(" flags=0x%x", r.flags);
  if (!r.name_view().empty())
    std::printf(" %.*s%s", static_cast<int>(r.name_view().size()), r.name_view().data(),
                r.has(kNameTruncated) ? "..." : "");
  std::printf("\n");
}

void print_calls(const std::vector<Record>& records, std::uint64_t base,
                 const std::vector<std::string>& triton) {
  for (const auto& [id, group] : group_by_external_id(records)) {
    const Interval span = device_span(group).value_or(Interval{});
    const Interval window = call_window(records, id).value_or(Interval{});
    const Attribution a = attribute(group, triton);
    std::printf("call %" PRIu64 ": %zu records, span %" PRIu64 " ns, busy %" PRIu64
                " ns, window [%+" PRId64 ", %+" PRId64
                "], unattributed %zu, candidate share %.3f"
                " (candidate %" PRIu64 ", library %" PRIu64 ", inductor %" PRIu64
                ", unknown %" PRIu64 ", glue kernels %" PRIu64 ", copies %" PRIu64 " ns)\n",
                id, group.size(), span.length_ns(), busy_ns(group), rel(window.start_ns, base),
                rel(window.end_ns, base), unattributed(records, window).size(), a.candidate_share(),
                a.candidate_ns, a.library_ns, a.inductor_ns, a.unknown_ns, a.glue_ns, a.copy_ns);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> triton;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--triton" && i + 1 < argc) {
      triton = split(argv[++i]);
    } else if (path.empty() && !arg.starts_with("-")) {
      path = arg;
    } else {
      path.clear();
      break;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: kbx_probe_dump [--triton fn1,fn2,...] FILE\n");
    return 2;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "kbx_probe_dump: cannot read %s\n", path.c_str());
    return 2;
  }
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const auto* data = reinterpret_cast<const std::byte*>(chars.data());
  Stream stream;
  std::string error;
  const bool ok = parse_stream(std::span(data, chars.size()), stream, &error);
  const std::uint64_t base = stream.header.start_ns;
  std::printf("probe stream: version %u, pid %u, CUPTI %u, %zu records\n", stream.header.version,
              stream.header.pid, stream.header.cupti_version, stream.records.size());
  for (const Record& r : stream.records) print_record(r, base, triton);
  print_calls(stream.records, base, triton);
  if (!ok) {
    std::fprintf(stderr, "kbx_probe_dump: %s: %s\n", path.c_str(), error.c_str());
    return 1;
  }
  return 0;
}
