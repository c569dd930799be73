#include <gtest/gtest.h>

#include "common/error.h"
#include "common/util.h"
#include "suite/task.h"
#include "test_util.h"

namespace kbx {
namespace {
namespace fs = std::filesystem;

const char* kGood = R"toml(schema = 1
name = "relu"
category = "Activation"
entry = "relu"
signature = "relu(input: torch.Tensor)"
set = "v1"
difficulty = 1
summary = """Rectified linear unit: max(x, 0) elementwise, same shape and dtype as the input."""
tags = ["elementwise"]

[contract]
dtypes = ["float32"]
tolerance = "exact"

[compat]
deviation = false
note = ""
)toml";

class Manifest : public ::testing::Test {
 protected:
  fs::path write(const std::string& text, const std::string& cat = "Activation",
                 const std::string& name = "relu") {
    fs::path d = dir_.path() / cat / name;
    fs::create_directories(d);
    write_file(d / "task.toml", text);
    write_file(d / "reference.py", "def relu(input):\n    return input.clamp_min(0)\n");
    return d;
  }
  std::string error_of(const std::string& text) {
    try {
      suite::load_task(write(text));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  static std::string replace(std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  }
  test::TempDir dir_;
};

TEST_F(Manifest, GoodManifestLoads) {
  auto t = suite::load_task(write(kGood));
  EXPECT_EQ(t.id(), "Activation/relu");
  EXPECT_EQ(t.contract.tolerance, suite::Tolerance::Exact);
  EXPECT_EQ(t.contract.ratio, 10.0);
  EXPECT_EQ(t.hash.size(), 64u);
}

TEST_F(Manifest, MissingFieldNamesFileAndField) {
  auto err = error_of(replace(kGood, "entry = \"relu\"\n", ""));
  EXPECT_NE(err.find("task.toml"), std::string::npos) << err;
  EXPECT_NE(err.find("'entry'"), std::string::npos) << err;
}

TEST_F(Manifest, WrongTypeNamesField) {
  auto err = error_of(replace(kGood, "difficulty = 1", "difficulty = \"hard\""));
  EXPECT_NE(err.find("'difficulty'"), std::string::npos) << err;
  EXPECT_NE(err.find("integer"), std::string::npos) << err;
}

TEST_F(Manifest, UnknownKeyIsRejected) {
  auto err =
      error_of(replace(kGood, "tolerance = \"exact\"", "tolerance = \"exact\"\nratoi = 3.0"));
  EXPECT_NE(err.find("contract.ratoi"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown key"), std::string::npos) << err;
}

TEST_F(Manifest, BadToleranceAndCategory) {
  EXPECT_NE(error_of(replace(kGood, "\"exact\"", "\"close\"")).find("contract.tolerance"),
            std::string::npos);
  auto err = error_of(replace(kGood, "category = \"Activation\"", "category = \"Misc\""));
  EXPECT_NE(err.find("'category'"), std::string::npos) << err;
}

TEST_F(Manifest, SyntaxErrorGivesLine) {
  auto err = error_of(replace(kGood, "set = \"v1\"", "set = \"v1"));
  EXPECT_NE(err.find("TOML syntax error"), std::string::npos) << err;
  EXPECT_NE(err.find("task.toml:"), std::string::npos) << err;
}

TEST_F(Manifest, FolderMustMatchName) {
  fs::path d = write(kGood, "Activation", "relu2");
  try {
    suite::load_task(d);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("folder name"), std::string::npos) << e.what();
  }
}

TEST_F(Manifest, DeviationNeedsNote) {
  auto err = error_of(replace(kGood, "deviation = false", "deviation = true"));
  EXPECT_NE(err.find("compat.note"), std::string::npos) << err;
}

TEST_F(Manifest, SuiteCollectsErrorsAndSelects) {
  write(kGood);
  write(replace(replace(kGood, "name = \"relu\"", "name = \"bad\""), "entry = \"relu\"\n", ""),
        "Activation", "bad");
  auto s = suite::load_suite(dir_.path());
  EXPECT_EQ(s.tasks.size(), 1u);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].find("bad/task.toml"), std::string::npos);
  EXPECT_EQ(suite::select(s, "Activation", {}).size(), 1u);
  EXPECT_THROW(suite::select(s, "", {"Math/none"}), Error);
  EXPECT_THROW(suite::select(s, "Nope", {}), Error);
}

TEST(Utf8, ValidAndInvalid) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xFF\xFE"));
  EXPECT_FALSE(is_valid_utf8("caf\xC3"));       // truncated
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));      // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));  // surrogate
}

}  // namespace
}  // namespace kbx
