// The dataset module: IDX files as Debian's Fashion-MNIST package ships them (gzipped or
// not), the errors for missing and malformed files, the synthetic dataset, and batching.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "poet/data/batches.h"
#include "poet/data/fashion_mnist.h"
#include "poet/data/idx_file.h"
#include "poet/data/synthetic_dataset.h"
#include "poet/util/error.h"
#include "scratch_folder.h"

namespace poet::data {
namespace {

namespace fs = std::filesystem;

std::string idx_bytes(const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& values) {
  std::string out = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (const std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((d >> shift) & 0xFF);
  out.append(values.begin(), values.end());
  return out;
}

void write_plain(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

void write_gzip(const fs::path& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

class DataFiles : public ScratchFolderTest {
 protected:
  // A Fashion-MNIST folder of `images` 2x3 images per split; the training files gzipped.
  void write_tiny_fashion_mnist(std::uint32_t images) {
    std::vector<std::uint8_t> pixels, labels;
    for (std::uint32_t i = 0; i < images * 6; ++i) pixels.push_back(static_cast<std::uint8_t>(i * 37));
    for (std::uint32_t i = 0; i < images; ++i) labels.push_back(static_cast<std::uint8_t>(i % 10));
    write_gzip(dir_ / "train-images-idx3-ubyte.gz", idx_bytes({images, 2, 3}, pixels));
    write_gzip(dir_ / "train-labels-idx1-ubyte.gz", idx_bytes({images}, labels));
    write_plain(dir_ / "t10k-images-idx3-ubyte", idx_bytes({images, 2, 3}, pixels));
    write_plain(dir_ / "t10k-labels-idx1-ubyte", idx_bytes({images}, labels));
  }
};

TEST_F(DataFiles, IdxReadsPlainAndGzippedFilesAlike) {
  const std::string bytes = idx_bytes({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 250});
  write_plain(dir_ / "a.idx", bytes);
  write_gzip(dir_ / "a.idx.gz", bytes);
  for (const char* name : {"a.idx", "a.idx.gz"}) {
    const IdxArray a = read_idx_file((dir_ / name).string());
    EXPECT_EQ(a.dims, (std::vector<std::int64_t>{2, 2, 2})) << name;
    EXPECT_EQ(a.values, (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6, 7, 250})) << name;
  }
}

TEST_F(DataFiles, IdxErrorsNameTheFileAndTheProblem) {
  const std::string missing = (dir_ / "none.idx").string();
  EXPECT_NE(error_of([&] { read_idx_file(missing, "the fix"); }).find(missing), std::string::npos);
  EXPECT_NE(error_of([&] { read_idx_file(missing, "the fix"); }).find("the fix"), std::string::npos);
  write_plain(dir_ / "text.idx", "hello world");
  EXPECT_NE(error_of([&] { read_idx_file((dir_ / "text.idx").string()); }).find("is not an IDX file"),
            std::string::npos);
  std::string floats = idx_bytes({1}, {0, 0, 0, 0});
  floats[2] = 0x0D;
  write_plain(dir_ / "floats.idx", floats);
  EXPECT_NE(error_of([&] { read_idx_file((dir_ / "floats.idx").string()); }).find("type 0x0d"), std::string::npos);
  write_gzip(dir_ / "short.idx.gz", idx_bytes({4, 4}, {1, 2, 3}));
  EXPECT_NE(error_of([&] { read_idx_file((dir_ / "short.idx.gz").string()); }).find("truncated"), std::string::npos);
}

// A header's huge item count is named as such, and nothing near its promise is allocated.
TEST_F(DataFiles, IdxWithAHugeItemCountNamesTheItemCount) {
  write_plain(dir_ / "huge.idx", idx_bytes({4294967295u, 28, 28}, {1, 2, 3}));
  const std::string huge = error_of([&] { read_idx_file((dir_ / "huge.idx").string()); });
  EXPECT_NE(huge.find("4294967295x28x28 make more than 2^34 values"), std::string::npos) << huge;
  EXPECT_NE(huge.find("the largest is dimension 1 of 3 (the item count), 4294967295"), std::string::npos) << huge;
  write_plain(dir_ / "wide.idx", idx_bytes({3, 4294967295u, 28}, {1, 2, 3}));
  const std::string wide = error_of([&] { read_idx_file((dir_ / "wide.idx").string()); });
  EXPECT_NE(wide.find("the largest is dimension 2 of 3, 4294967295"), std::string::npos) << wide;
  // Below the limit the header is believed only as far as the data go: a truncated file.
  write_gzip(dir_ / "many.idx.gz", idx_bytes({20000000, 28, 28}, std::vector<std::uint8_t>(2 * 784 + 5, 7)));
  const std::string many = error_of([&] { read_idx_file((dir_ / "many.idx.gz").string()); });
  EXPECT_NE(many.find("promises 20000000 items (the first dimension) of 784 values"), std::string::npos) << many;
  EXPECT_NE(many.find("it holds 1573 values (2 whole items)"), std::string::npos) << many;
}

TEST_F(DataFiles, FashionMnistLoadsBothSplitsScaled) {
  write_tiny_fashion_mnist(5);
  const DatasetSplits d = load_fashion_mnist(dir_.string());
  EXPECT_EQ(d.train.count(), 5);
  EXPECT_EQ(d.test.count(), 5);
  EXPECT_EQ(d.train.sample_shape, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(d.train.classes, 10);
  EXPECT_EQ(d.train.labels[3], 3);
  EXPECT_FLOAT_EQ(d.train.inputs[1] - d.train.inputs[0], 37.0f / 255.0f);
  EXPECT_EQ(d.train.inputs, d.test.inputs);
}

TEST_F(DataFiles, MissingOrMismatchedFashionMnistSaysToInstallThePackage) {
  const std::string missing = error_of([&] { load_fashion_mnist((dir_ / "nowhere").string()); });
  EXPECT_NE(missing.find("train-images-idx3-ubyte"), std::string::npos) << missing;
  EXPECT_NE(missing.find("dataset-fashion-mnist"), std::string::npos) << missing;
  write_tiny_fashion_mnist(5);
  write_gzip(dir_ / "train-labels-idx1-ubyte.gz", idx_bytes({4}, {1, 2, 3, 4}));
  const std::string mismatch = error_of([&] { load_fashion_mnist(dir_.string()); });
  EXPECT_NE(mismatch.find("one label for each of the 5 images"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("dataset-fashion-mnist"), std::string::npos) << mismatch;
}

TEST(DataSynthetic, SameSeedSameBitsOtherSeedOtherData) {
  SyntheticOptions o{.sample_shape = {1, 4, 4}, .classes = 3, .train_count = 20, .test_count = 7, .seed = 5};
  const DatasetSplits a = make_synthetic_dataset(o), b = make_synthetic_dataset(o);
  EXPECT_EQ(a.train.inputs, b.train.inputs);
  EXPECT_EQ(a.test.labels, b.test.labels);
  EXPECT_EQ(a.train.count(), 20);
  EXPECT_EQ(a.test.inputs.size(), 7u * 16);
  o.seed = 6;
  EXPECT_NE(make_synthetic_dataset(o).train.inputs, a.train.inputs);
  for (const std::int32_t l : a.train.labels) EXPECT_TRUE(l >= 0 && l < 3);
  EXPECT_THROW(make_synthetic_dataset({.sample_shape = {}}), InputError);
}

// Token sequences for a model on token ids: int32 ids below the vocabulary, each token its
// class prototype's with probability 1 - noise / 2 (3/4 at the default 0.5), so that the
// classes are told apart by their tokens.
TEST(DataSynthetic, TokenSequencesHoldIdsOfTheVocabularyNearTheirClasssPrototype) {
  const SyntheticOptions o{.sample_shape = {12}, .classes = 2, .train_count = 400, .test_count = 4, .vocabulary = 50};
  const DatasetSplits d = make_synthetic_dataset(o);
  EXPECT_EQ(d.train.vocabulary, 50);
  EXPECT_EQ(d.test.vocabulary, 50);
  auto id = [&](std::int64_t sample, std::int64_t i) {
    return std::bit_cast<std::int32_t>(d.train.inputs[static_cast<std::size_t>(sample * 12 + i)]);
  };
  // Per class and position, the most common id is the prototype's.
  std::int64_t agree = 0, total = 0;
  for (int label = 0; label < 2; ++label)
    for (std::int64_t i = 0; i < 12; ++i) {
      std::vector<int> votes(50, 0);
      for (std::int64_t s = 0; s < d.train.count(); ++s) {
        ASSERT_TRUE(id(s, i) >= 0 && id(s, i) < 50) << id(s, i);
        if (d.train.labels[static_cast<std::size_t>(s)] == label) ++votes[static_cast<std::size_t>(id(s, i))];
      }
      agree += *std::max_element(votes.begin(), votes.end());
      for (const int v : votes) total += v;
    }
  const double share = static_cast<double>(agree) / static_cast<double>(total);
  EXPECT_GT(share, 0.65) << "about 3/4 of the tokens are the prototype's (plus 1/50 of the rest)";
  EXPECT_LT(share, 0.85);
  EXPECT_THROW(make_synthetic_dataset({.sample_shape = {4}, .vocabulary = -1}), InputError);
}

TEST(DataBatches, EachEpochIsAPermutationOfItsOwn) {
  const auto e0 = shuffled_order(100, 1, 0), e0_again = shuffled_order(100, 1, 0), e1 = shuffled_order(100, 1, 1);
  EXPECT_EQ(e0, e0_again);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(std::set<std::int64_t>(e1.begin(), e1.end()).size(), 100u);
  EXPECT_EQ(batch_count(100, 32), 3);
}

TEST(DataBatches, FillBatchCopiesTheOrderedSamples) {
  Dataset d;
  d.sample_shape = {2};
  d.inputs = {0, 1, 10, 11, 20, 21};
  d.labels = {0, 1, 2};
  d.classes = 3;
  const std::vector<std::int64_t> order = {2, 0, 1};
  std::vector<float> in(4);
  std::vector<std::int32_t> labels(2);
  fill_batch(d, order, 0, 2, in, labels);
  EXPECT_EQ(in, (std::vector<float>{20, 21, 0, 1}));
  EXPECT_EQ(labels, (std::vector<std::int32_t>{2, 0}));
  EXPECT_THROW(fill_batch(d, order, 1, 2, in, labels), InputError);
}

}  // namespace
}  // namespace poet::data
