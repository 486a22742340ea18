// The ranges of `poet sweep` (--budgets, --ablation-deadlines): the good forms give their
// values, every bad one an InputError naming the option, before a value is made.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "poet/sweep/sweep_range.h"
#include "poet/util/error.h"

namespace poet {
namespace {

// The message of parse_range's InputError on `text` (empty if it was accepted).
std::string range_error(const std::string& text, const std::string& unit) {
  try {
    parse_range(text, "--budgets", unit);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SweepRange, GoodFormsGiveTheirValues) {
  EXPECT_EQ(parse_range("30%:50%:10%", "--budgets", "%"), (std::vector<double>{30, 40, 50}));
  EXPECT_EQ(parse_range("30:50:10", "--budgets", "%"), (std::vector<double>{30, 40, 50}));
  EXPECT_EQ(parse_range("50%,70%", "--budgets", "%"), (std::vector<double>{50, 70}));
  EXPECT_EQ(parse_range("1:2:0.5", "--ablation-deadlines", ""), (std::vector<double>{1, 1.5, 2}));
  EXPECT_EQ(parse_range("1.5", "--runtime-budget", ""), (std::vector<double>{1.5}));
  EXPECT_EQ(parse_range("10%:10%:1%", "--budgets", "%"), (std::vector<double>{10}));
}

TEST(SweepRange, BadFormsAreInputErrorsNamingTheOptionAndTheFix) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "is not a percent"},
      {"%", "is not a percent"},
      {"100%:30%:10%", "ends below where it starts; write first:last:step with first <= last"},
      {"30%:100%:0%", "is not a percent"},
      {"30%:100%", "must be first:last:step"},
      {"30%:100%:10%:5%", "must be first:last:step"},
      {"30%::10%", "is not a percent"},
      {"abc", "is not a percent"},
      {"0x10%", "is not a percent"},
      {"inf%:inf%:1%", "is not a percent"},
      {"50%,,70%", "is not a percent"},
      {"30%:100%,5%:10%", "is not a percent"},
      {"30%:100%:0.0000001%", "makes 700000001 values; at most 200"},
      {"0.001%:1000%:0.001%", "makes 1000000 values"},
      {std::string(1000, ',') , "makes 1001 values"},
  };
  for (const auto& [text, why] : bad) {
    const std::string message = range_error(text, "%");
    EXPECT_NE(message.find("--budgets: "), std::string::npos) << "'" << text << "': " << message;
    EXPECT_NE(message.find(why), std::string::npos) << "'" << text << "': " << message;
  }
  for (const std::string text : {"", "0", "-1", "1:2:0", "2:1:0.5", "1e7", "nan", "1:2", "x:2:1"})
    EXPECT_NE(range_error(text, ""), "") << "'" << text << "'";
  // The words quoted are the user's ('5MB', not '5MB%'), and the form suggested is taken.
  EXPECT_NE(range_error("5MB", "%").find("'5MB' is not a percent"), std::string::npos) << range_error("5MB", "%");
  EXPECT_NE(range_error("250ms", "").find("'250ms' is not a multiple of the compute-once time; write a number above 0 "
                                          "and at most 1e6, e.g. 1.5"),
            std::string::npos)
      << range_error("250ms", "");
}

// --runtime-budget and --ablation-budget take one value: a list or a range is refused, not
// cut to its first value.
TEST(SweepRange, AnOptionOfOneValueRefusesAListOrARange) {
  EXPECT_EQ(parse_one_value("70%", "--ablation-budget", "%"), 70);
  EXPECT_EQ(parse_one_value("1.5", "--runtime-budget", ""), 1.5);
  for (const std::string text : {"50%,70%", "30%:50%:10%"}) {
    try {
      parse_one_value(text, "--ablation-budget", "%");
      ADD_FAILURE() << text << " was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--ablation-budget: '" + text + "' makes"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("it takes one, e.g. 70%"), std::string::npos) << e.what();
    }
  }
}

TEST(SweepRange, AMessageQuotesALongInputShortened) {
  const std::string message = range_error(std::string(100000, '9') + "%:1%:1%", "%");
  EXPECT_LT(message.size(), 300u) << message;
}

}  // namespace
}  // namespace poet
