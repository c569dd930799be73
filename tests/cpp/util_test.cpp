// common/util.h: the one-line view of a long message (head_and_tail).
#include "common/util.h"

#include <gtest/gtest.h>

#include <string>

namespace kbx {
namespace {

TEST(HeadAndTail, ShortTextIsWhole) {
  EXPECT_EQ(head_and_tail("a short message", 10, 10), "a short message");
  EXPECT_EQ(head_and_tail("", 0, 0), "");
}

TEST(HeadAndTail, LongTextKeepsItsEndWhereTheExceptionIs) {
  const std::string detail = "worker ended (exit 1); stderr: " + std::string(2000, 'x') +
                             "\ntorch.OutOfMemoryError: CUDA out of memory";
  const std::string shown = head_and_tail(detail, 40, 60);
  EXPECT_TRUE(shown.starts_with("worker ended (exit 1); stderr: "));
  EXPECT_TRUE(shown.ends_with("torch.OutOfMemoryError: CUDA out of memory"));
  EXPECT_NE(shown.find("[... "), std::string::npos);
  EXPECT_LT(shown.size(), 140u);
}

TEST(HeadAndTail, NeverCutsACharacterInTwo) {
  std::string text;
  for (int k = 0; k < 200; ++k) text += "\xC3\xA9";       // é, two bytes each
  const std::string shown = head_and_tail(text, 11, 11);  // odd: inside a character
  EXPECT_TRUE(is_valid_utf8(shown));
}

}  // namespace
}  // namespace kbx
