#include "poet/util/units.h"

#include <gtest/gtest.h>

#include "poet/util/error.h"

namespace poet {
namespace {

TEST(Units, FormatsBytesWithBinarySuffixes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(2048), "2 KiB");
  EXPECT_EQ(format_bytes(2453760), "2.34 MiB");
  EXPECT_EQ(format_bytes_exact(2453760), "2,453,760 B");
  EXPECT_EQ(format_bytes_exact(999), "999 B");
  // From 100 of a unit up, whole numbers: 1,020 KiB was "1.02e+03 KiB" on a memory plot's axis.
  EXPECT_EQ(format_bytes(1020 * 1024), "1020 KiB");
  EXPECT_EQ(format_bytes(250 * 1024), "250 KiB");
  EXPECT_EQ(format_seconds(0.9995), "1000 ms");
}

TEST(Units, FormatsTimeEnergyAndCounts) {
  EXPECT_EQ(format_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(format_seconds(4.56), "4.56 s");
  EXPECT_EQ(format_seconds(0), "0 s");
  EXPECT_EQ(format_seconds(46208.4), "46,208 s");  // not "4.62e+04 s"
  EXPECT_EQ(format_seconds(-46208.4), "-46,208 s");
  EXPECT_EQ(format_seconds(9999), "9999 s");
  EXPECT_EQ(format_seconds(1.31e12), "1,310,000,000,000 s");
  EXPECT_EQ(format_seconds(3e16), "3e+16 s");
  EXPECT_EQ(format_joules(7.8895), "7.89 J");
  EXPECT_EQ(format_joules(0.00321), "3.21 mJ");
  EXPECT_EQ(format_count(1.23e9), "1.23 G");
  EXPECT_EQ(counted(1, "page-in"), "1 page-in");
  EXPECT_EQ(counted(0, "page-in"), "0 page-ins");
  EXPECT_EQ(counted(2, "batch", "batches"), "2 batches");
}

TEST(Units, ParsesByteSizes) {
  EXPECT_EQ(parse_bytes("3000000", "--ram-budget"), 3000000);
  EXPECT_EQ(parse_bytes("3MB", "--ram-budget"), 3000000);
  EXPECT_EQ(parse_bytes("2.5 MiB", "--ram-budget"), 2621440);
  EXPECT_EQ(parse_bytes("64KiB", "--ram-budget"), 65536);
  EXPECT_EQ(parse_bytes("1e6", "--ram-budget"), 1000000);
  EXPECT_EQ(parse_bytes("2TiB", "--ram-budget"), std::int64_t{2} << 40);  // the limit is said in TiB: TiB are read
  EXPECT_EQ(parse_bytes("1.5TB", "--ram-budget"), 1500000000000);
}

TEST(Units, RejectsBadSizesNamingTheOption) {
  try {
    parse_bytes("lots", "--ram-budget");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--ram-budget: 'lots' is not a size in bytes"), std::string::npos);
  }
  EXPECT_THROW(parse_bytes("3 parsecs", "x"), InputError);
  EXPECT_THROW(parse_bytes("", "x"), InputError);
}

}  // namespace
}  // namespace poet
