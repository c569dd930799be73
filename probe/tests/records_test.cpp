// The wire format and its parser, against the fixtures of tests/fixtures/probe/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "fixtures.h"
#include "kbx/probe_records.h"

namespace kbx::probe {
namespace {

using test::read_fixture;
using test::T;

std::string parse_error(const std::string& fixture, std::size_t* records = nullptr) {
  std::string error;
  const auto parsed = parse_records(read_fixture(fixture), &error);
  if (records) *records = parsed.size();
  return error;
}

TEST(ProbeRecords, ValidStreamHeader) {
  Stream stream;
  std::string error;
  ASSERT_TRUE(parse_stream(read_fixture("call_trace.bin"), stream, &error)) << error;
  EXPECT_EQ(stream.header.magic, kMagic);
  EXPECT_EQ(stream.header.version, kFormatVersion);
  EXPECT_EQ(stream.header.record_size, kRecordSize);
  EXPECT_EQ(stream.header.pid, 4242u);
  EXPECT_EQ(stream.header.cupti_version, 130001u);
  EXPECT_EQ(stream.header.start_ns, T - 5'000'000);
  EXPECT_EQ(stream.records.size(), 16u);
}

TEST(ProbeRecords, ValidStreamFields) {
  const std::vector<Record> r = test::call_trace();
  ASSERT_EQ(r.size(), 16u);
  const std::vector<Kind> kinds = {Kind::Push,   Kind::Pop,    Kind::Memset, Kind::Kernel,
                                   Kind::Kernel, Kind::Kernel, Kind::Kernel, Kind::Memcpy,
                                   Kind::Flush,  Kind::Push,   Kind::Pop,    Kind::Kernel,
                                   Kind::Kernel, Kind::Kernel, Kind::Flush,  Kind::Flush};
  for (std::size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(r[i].kind, kinds[i]) << "record " << i;

  EXPECT_EQ(r[0].external_id, 1u);
  EXPECT_EQ(r[0].start_ns, T);
  EXPECT_EQ(r[0].end_ns, T);
  EXPECT_EQ(r[0].thread_id, 4242u);

  const Record& add = r[3];
  EXPECT_EQ(add.name_view(), "add_kernel");
  EXPECT_EQ(add.start_ns, T + 3'000);
  EXPECT_EQ(add.end_ns, T + 13'000);
  EXPECT_EQ(add.duration_ns(), 10'000u);
  EXPECT_EQ(add.external_id, 1u);
  EXPECT_EQ(add.correlation_id, 103u);
  EXPECT_EQ(add.stream_id, 7u);
  EXPECT_EQ(add.context_id, 1u);
  EXPECT_EQ(add.grid, (std::array<std::int32_t, 3>{64, 1, 1}));
  EXPECT_EQ(add.block, (std::array<std::int32_t, 3>{128, 1, 1}));
  EXPECT_EQ(add.flags, 0u);

  EXPECT_EQ(r[2].bytes, 4096u);  // memset
  EXPECT_EQ(r[7].detail, 2u);    // memcpy device to host
  EXPECT_EQ(r[7].bytes, 16u);
  EXPECT_EQ(r[8].detail, 1u);   // first flush
  EXPECT_EQ(r[15].detail, 3u);  // exit flush
  EXPECT_TRUE(r[15].has(kExitFlush));
  EXPECT_EQ(r[15].bytes, 3u);  // dropped records

  const Record& lng = r[13];
  EXPECT_TRUE(lng.has(kNameTruncated));
  EXPECT_EQ(lng.name_view().size(), kNameCapacity - 1);
  EXPECT_TRUE(lng.name_view().starts_with("_ZN2at6native18elementwise_kernel"));
}

TEST(ProbeRecords, RoundTripIsByteExact) {
  const std::vector<std::byte> file = read_fixture("call_trace.bin");
  Stream stream;
  ASSERT_TRUE(parse_stream(file, stream, nullptr));
  std::vector<std::byte> bytes;
  append_header(bytes, stream.header);
  for (const Record& r : stream.records) append_record(bytes, r);
  EXPECT_EQ(bytes, file);
}

TEST(ProbeRecords, HeaderOnlyIsAValidEmptyStream) {
  std::size_t n = 99;
  EXPECT_EQ(parse_error("header_only.bin", &n), "");
  EXPECT_EQ(n, 0u);
}

TEST(ProbeRecords, TruncatedRecordKeepsWholeRecords) {
  std::size_t n = 0;
  const std::string error = parse_error("truncated_record.bin", &n);
  EXPECT_EQ(n, 15u);
  EXPECT_NE(error.find("truncated record 15"), std::string::npos) << error;
  EXPECT_NE(error.find("188 of 288 bytes"), std::string::npos) << error;
}

TEST(ProbeRecords, TruncatedHeader) {
  EXPECT_NE(parse_error("truncated_header.bin").find("truncated header (20 of 32"),
            std::string::npos);
}

TEST(ProbeRecords, EmptyStream) {
  std::string error;
  EXPECT_TRUE(parse_records({}, &error).empty());
  EXPECT_NE(error.find("empty stream"), std::string::npos) << error;
}

TEST(ProbeRecords, BadMagic) {
  std::size_t n = 99;
  EXPECT_NE(parse_error("bad_magic.bin", &n).find("bad magic"), std::string::npos);
  EXPECT_EQ(n, 0u);
}

TEST(ProbeRecords, BadVersion) {
  EXPECT_NE(parse_error("bad_version.bin").find("format version 2, this parser reads 1"),
            std::string::npos);
}

TEST(ProbeRecords, BadRecordSize) {
  EXPECT_NE(parse_error("bad_record_size.bin").find("record_size 256"), std::string::npos);
}

TEST(ProbeRecords, UnknownKindStopsTheParse) {
  std::size_t n = 0;
  const std::string error = parse_error("bad_kind.bin", &n);
  EXPECT_EQ(n, 1u);
  EXPECT_NE(error.find("record 1 at offset 320: unknown kind 99"), std::string::npos) << error;
}

TEST(ProbeRecords, NameWithoutTerminatorIsRejected) {
  std::vector<std::byte> bytes;
  append_header(bytes, Header{});
  Record r;
  append_record(bytes, r);
  bytes.back() = std::byte{'x'};
  std::string error;
  EXPECT_TRUE(parse_records(bytes, &error).empty());
  EXPECT_NE(error.find("not NUL-terminated"), std::string::npos) << error;
}

// The supervisor reads the pipe in pieces of any size.
TEST(ProbeRecords, IncrementalFeedMatchesWholeParse) {
  const std::vector<std::byte> file = read_fixture("call_trace.bin");
  const std::vector<Record> whole = test::call_trace();
  for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{288}, std::size_t{1000}}) {
    StreamParser parser;
    std::vector<Record> got;
    for (std::size_t at = 0; at < file.size(); at += chunk) {
      const std::size_t n = std::min(chunk, file.size() - at);
      ASSERT_TRUE(parser.feed(std::span(file).subspan(at, n))) << parser.error();
      for (const Record& r : parser.take_records()) got.push_back(r);
    }
    ASSERT_TRUE(parser.finish()) << parser.error();
    EXPECT_EQ(parser.record_count(), whole.size());
    ASSERT_EQ(got.size(), whole.size()) << "chunk " << chunk;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(std::memcmp(&got[i], &whole[i], kRecordSize), 0)
          << "chunk " << chunk << " record " << i;
    }
  }
}

TEST(ProbeRecords, FailedParserStaysFailed) {
  StreamParser parser;
  EXPECT_FALSE(parser.feed(read_fixture("bad_magic.bin")));
  EXPECT_FALSE(parser.feed(read_fixture("header_only.bin")));
  EXPECT_FALSE(parser.finish());
  EXPECT_NE(parser.error().find("bad magic"), std::string::npos);
}

TEST(ProbeRecords, SetNameTruncatesAndFlags) {
  Record r;
  r.set_name("short");
  EXPECT_EQ(r.name_view(), "short");
  EXPECT_FALSE(r.has(kNameTruncated));
  const std::string lng(300, 'k');
  r.set_name(lng);
  EXPECT_EQ(r.name_view(), lng.substr(0, kNameCapacity - 1));
  EXPECT_TRUE(r.has(kNameTruncated));
  r.set_name("again");
  EXPECT_EQ(r.name_view(), "again");
  EXPECT_FALSE(r.has(kNameTruncated));
  EXPECT_EQ(r.name.back(), '\0');
}

TEST(ProbeRecords, KindNames) {
  EXPECT_EQ(kind_name(Kind::Kernel), "kernel");
  EXPECT_EQ(kind_name(Kind::Error), "error");
  EXPECT_EQ(kind_name(static_cast<Kind>(42)), "unknown");
}

}  // namespace
}  // namespace kbx::probe
