// Names from users' files written into other formats (util/quoting.h).
#include "poet/util/quoting.h"

#include <gtest/gtest.h>

namespace poet {
namespace {

TEST(Quoting, ControlCharactersBecomeVisibleEscapesOnOneLine) {
  EXPECT_EQ(one_line("conv\nline\r\tx\x1b[2J\x7f"), "conv\\nline\\r\\tx\\x1b[2J\\x7f");
  EXPECT_EQ(one_line("layer1.0/conv \xc3\xbc \"*/\""), "layer1.0/conv \xc3\xbc \"*/\"");  // UTF-8 and quotes kept
}

// A name cannot end the comment that holds it, however many stars come first.
TEST(Quoting, ACCommentCannotBeEnded) {
  EXPECT_EQ(c_comment_text("a */ int evil; /*"), "a *\\/ int evil; /*");
  EXPECT_EQ(c_comment_text("**/*/"), "**\\/*\\/");
  EXPECT_EQ(c_comment_text("x\n*/"), "x\\n*\\/");
  EXPECT_EQ(c_comment_text("*\\/"), "*\\/");  // written so already: no closer in it
}

TEST(Quoting, ACStringCannotBeEnded) {
  EXPECT_EQ(c_string_text("le\"net\\"), "le\\\"net\\\\");
  EXPECT_EQ(c_string_text("?" "?/"), "\\?\\?/");  // a trigraph for '\' under -std=c11
  EXPECT_EQ(c_string_text("\x1b" "1\n"), "\\0331\\012");   // octal: a hex escape would take the '1'
}

TEST(Quoting, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const std::string replacement = "\xef\xbf\xbd";
  EXPECT_EQ(valid_utf8("plain, \xc3\xa9t\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80"),
            "plain, \xc3\xa9t\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80");
  EXPECT_EQ(valid_utf8("dev-\xff.json"), "dev-" + replacement + ".json");
  EXPECT_EQ(valid_utf8("\xc3"), replacement) << "cut short";
  EXPECT_EQ(valid_utf8("\xc0\xaf"), replacement + replacement) << "overlong '/'";
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), replacement + replacement + replacement) << "a surrogate";
  EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80"), replacement + replacement + replacement + replacement) << "past U+10FFFF";
  EXPECT_EQ(valid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3)) << "NUL is UTF-8; one_line shows it";
}

}  // namespace
}  // namespace poet
