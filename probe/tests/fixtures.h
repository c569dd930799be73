// Access to the probe fixtures in tests/fixtures/probe/ (written by make_fixtures.py there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "kbx/probe_records.h"

namespace kbx::probe::test {

/// The origin of the synthetic timeline in make_fixtures.py.
inline constexpr std::uint64_t T = 1'764'480'000'000'000'000ULL;

/// The bytes of fixture `name`; throws when it cannot be read.
inline std::vector<std::byte> read_fixture(const std::string& name) {
  const std::string path = std::string(KBX_PROBE_FIXTURES) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read fixture " + path);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) bytes[i] = static_cast<std::byte>(chars[i]);
  return bytes;
}

/// The records of call_trace.bin; throws when it does not parse.
inline std::vector<Record> call_trace() {
  std::string error;
  std::vector<Record> records = parse_records(read_fixture("call_trace.bin"), &error);
  if (!error.empty()) throw std::runtime_error(error);
  return records;
}

/// A timed activity record of `kind` over [start, end) with `external_id`.
inline Record activity(std::uint64_t start, std::uint64_t end, std::uint64_t external_id = 0,
                       Kind kind = Kind::Kernel) {
  Record r;
  r.kind = kind;
  r.start_ns = start;
  r.end_ns = end;
  r.external_id = external_id;
  return r;
}

}  // namespace kbx::probe::test
