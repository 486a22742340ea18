// Image-folder datasets: PNG and JPEG decoding of every kind of file (grey, palette,
// alpha), the resize and normalisation held to torchvision's evaluation transform, the
// ImageFolder layout and split, and hostile input - each a clear InputError naming the
// file, never a crash. Fixtures: tests/data/images (scripts/make-image-folder.py).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "poet/data/batches.h"
#include "poet/data/image_decode.h"
#include "poet/data/image_folder.h"
#include "poet/data/image_transform.h"
#include "poet/util/error.h"
#include "scratch_folder.h"

namespace poet::data {
namespace {

namespace fs = std::filesystem;

const fs::path kImages = fs::path(POET_TEST_DATA_DIR) / "images";
const fs::path kFolder = kImages / "folder";

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

class ImageFolder : public ScratchFolderTest {
 protected:
  // A copy of the fixture folder in dir_/name, to spoil.
  fs::path copy_of_fixture(const std::string& name = "folder") {
    const fs::path to = dir_ / name;
    fs::copy(kFolder, to, fs::copy_options::recursive);
    return to;
  }

  static ImageFolderOptions options(const fs::path& folder) {
    ImageFolderOptions o;
    o.folder = folder.string();
    o.sample_shape = {3, 8, 8};
    return o;
  }
};

TEST(ImageDecode, EveryKindOfFileDecodesToRgb) {
  // RGB, grey, palette and RGBA PNG; RGB and grey JPEG (scripts/make-image-folder.py).
  for (const char* name : {"000.png", "001.png", "002.png", "003.png", "004.jpg", "005.jpg"}) {
    SCOPED_TRACE(name);
    const fs::path path = kFolder / "disc" / name;
    const ImageHeader h = read_image_header(path.string());
    EXPECT_EQ(h.format, fs::path(name).extension() == ".png" ? ImageFormat::Png : ImageFormat::Jpeg);
    const RgbImage image = decode_image(path.string());
    EXPECT_EQ(image.width, h.width);
    EXPECT_EQ(image.height, h.height);
    EXPECT_GE(image.width, 12);
    EXPECT_LE(image.width, 24);
    ASSERT_EQ(image.pixels.size(), static_cast<std::size_t>(3 * image.width * image.height));
    // A light disc on a dark ground: both are there.
    const auto [darkest, lightest] = std::minmax_element(image.pixels.begin(), image.pixels.end());
    EXPECT_LT(*darkest, 90);
    EXPECT_GT(*lightest, 150);
  }
}

TEST(ImageDecode, CmykJpegsAreRefusedByName) {
  // disc/000.png saved by PIL as convert("CMYK") JPEG.
  const std::string path = (kImages / "cmyk.jpg").string();
  try {
    decode_image(path);
    ADD_FAILURE() << "a CMYK JPEG decoded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("picture '" + path + "' is a CMYK JPEG"), std::string::npos) << e.what();
  }
}

TEST(ImageDecode, GreyPicturesHaveEqualChannels) {
  for (const char* name : {"001.png", "005.jpg"}) {
    const RgbImage image = decode_image((kFolder / "disc" / name).string());
    for (std::size_t p = 0; p < image.pixels.size(); p += 3) {
      ASSERT_EQ(image.pixels[p], image.pixels[p + 1]) << name;
      ASSERT_EQ(image.pixels[p], image.pixels[p + 2]) << name;
    }
  }
}

// The fixture's samples as torchvision's Resize(8) + CenterCrop(8) + ToTensor + Normalize
// made them: PIL rounds to 8 bits after each resize pass and poet does not, so the two
// differ by about a level in 255 (1 / 255 / 0.224 = 0.0175 after normalisation) at most.
TEST(ImageTransform, MatchesTorchvisionsEvaluationTransform) {
  const nlohmann::json expected = nlohmann::json::parse(read_bytes(kImages / "expected.json"));
  ASSERT_EQ(expected.at("samples").size(), 6u);
  ImageTransform t{3, 8, 8, default_mean(3), default_std(3)};
  for (const auto& [name, values] : expected.at("samples").items()) {
    SCOPED_TRACE(name);
    std::vector<float> sample(3 * 8 * 8);
    image_to_sample(decode_image((kFolder / name).string()), t, sample);
    ASSERT_EQ(values.size(), sample.size());
    double worst = 0;
    for (std::size_t i = 0; i < sample.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(sample[i]) - values[i].get<double>()));
    EXPECT_LT(worst, 0.02);
  }
}

TEST(ImageTransform, ResizeKeepsAFlatPictureFlatAndNormalises) {
  // A 40x20 picture of one colour: every output value is that colour, normalised.
  RgbImage flat{40, 20, {}};
  for (int p = 0; p < 40 * 20; ++p) flat.pixels.insert(flat.pixels.end(), {51, 102, 204});
  std::vector<float> sample(3 * 6 * 5);
  image_to_sample(flat, {3, 6, 5, {0.1f, 0.2f, 0.3f}, {0.5f, 0.25f, 2.0f}}, sample);
  for (int i = 0; i < 30; ++i) {
    EXPECT_NEAR(sample[i], (0.2f - 0.1f) / 0.5f, 1e-5);
    EXPECT_NEAR(sample[30 + i], (0.4f - 0.2f) / 0.25f, 1e-5);
    EXPECT_NEAR(sample[60 + i], (0.8f - 0.3f) / 2.0f, 1e-5);
  }
  // One channel: ITU-R 601 luma.
  std::vector<float> grey(4 * 4);
  image_to_sample(flat, {1, 4, 4, {0.0f}, {1.0f}}, grey);
  EXPECT_NEAR(grey[0], (0.299f * 51 + 0.587f * 102 + 0.114f * 204) / 255, 1e-5);
}

TEST(ImageTransform, CropsTheCentreOfTheLongerSide) {
  // 30 wide, 10 high: left third black, middle white, right third black. Scaled to height 5
  // (15 wide), the centre 5x5 is the white third.
  RgbImage bars{30, 10, {}};
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 30; ++x) {
      const std::uint8_t v = x >= 10 && x < 20 ? 255 : 0;
      bars.pixels.insert(bars.pixels.end(), {v, v, v});
    }
  std::vector<float> sample(5 * 5);
  image_to_sample(bars, {1, 5, 5, {0.0f}, {1.0f}}, sample);
  for (int y = 0; y < 5; ++y) {
    EXPECT_NEAR(sample[y * 5 + 2], 1.0f, 1e-5) << "the centre column is white";
    EXPECT_GT(sample[y * 5 + 2], sample[y * 5 + 0]) << "the edges blend in the black bars";
  }
}

TEST_F(ImageFolder, ClassesAreSortedSubFoldersAndTheSplitIsStratified) {
  const DatasetSplits d = load_image_folder(options(kFolder));
  EXPECT_EQ(d.name, "folder:" + kFolder.string());
  EXPECT_EQ(d.train.classes, 2);
  // 6 pictures a class; with --test-fraction 0.2 the 5th of each is held out.
  EXPECT_EQ(d.train.labels, (std::vector<std::int32_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(d.test.labels, (std::vector<std::int32_t>{0, 1}));
  EXPECT_TRUE(d.train.inputs.empty()) << "decoded per batch, not held";
  // The held-out sample is disc/004.jpg decoded and transformed.
  std::vector<float> sample(3 * 8 * 8), direct(3 * 8 * 8);
  d.test.read_sample(0, sample);
  image_to_sample(decode_image((kFolder / "disc" / "004.jpg").string()), {3, 8, 8, default_mean(3), default_std(3)},
                  direct);
  EXPECT_EQ(sample, direct);
  // A batch of it, as the trainer fills it.
  std::vector<float> inputs(2 * sample.size());
  std::vector<std::int32_t> labels(2);
  const std::vector<std::int64_t> order = {1, 0};
  fill_batch(d.test, order, 0, 2, inputs, labels);
  EXPECT_EQ(labels, (std::vector<std::int32_t>{1, 0}));
  EXPECT_TRUE(std::equal(sample.begin(), sample.end(), inputs.begin() + static_cast<std::ptrdiff_t>(sample.size())));
}

TEST_F(ImageFolder, TestFolderAndFractionChooseTheTestSet) {
  ImageFolderOptions o = options(kFolder);
  o.test_fraction = 0.5;
  const DatasetSplits half = load_image_folder(o);
  EXPECT_EQ(half.train.count(), 6);
  EXPECT_EQ(half.test.count(), 6);
  o.test_folder = kFolder.string();
  const DatasetSplits both = load_image_folder(o);
  EXPECT_EQ(both.train.count(), 12) << "with a test folder nothing is held out";
  EXPECT_EQ(both.test.count(), 12);
}

TEST_F(ImageFolder, HiddenFilesAndTopLevelFilesAreIgnored) {
  const fs::path f = copy_of_fixture();
  write_bytes(f / ".DS_Store", "junk");
  write_bytes(f / "disc" / ".DS_Store", "junk");
  write_bytes(f / "README.txt", "pictures of discs and stripes");
  fs::create_directories(f / ".ipynb_checkpoints");
  EXPECT_EQ(load_image_folder(options(f)).train.count(), 10);
}

TEST_F(ImageFolder, ALinkLoopInsideAClassIsNotFollowed) {
  const fs::path f = copy_of_fixture();
  fs::create_directory_symlink(f / "disc", f / "disc" / "again");
  EXPECT_EQ(load_image_folder(options(f)).train.count(), 10);
}

TEST_F(ImageFolder, BadFoldersSayWhatIsWrongAndTheFix) {
  EXPECT_NE(error_of([&] { load_image_folder(options(dir_ / "missing")); }).find("does not exist"), std::string::npos);
  const std::string empty = error_of([&] { load_image_folder(options(dir_)); });
  EXPECT_NE(empty.find("has no class sub-folders"), std::string::npos) << empty;
  EXPECT_NE(empty.find("one sub-folder of PNG or JPEG pictures per class"), std::string::npos) << empty;

  fs::copy(kFolder / "disc", dir_ / "flat");
  const std::string flat = error_of([&] { load_image_folder(options(dir_ / "flat")); });
  EXPECT_NE(flat.find("has no class sub-folders"), std::string::npos) << flat;

  fs::create_directories(dir_ / "one");
  fs::copy(kFolder / "disc", dir_ / "one" / "disc");
  const std::string one = error_of([&] { load_image_folder(options(dir_ / "one")); });
  EXPECT_NE(one.find("has one class sub-folder ('disc')"), std::string::npos) << one;

  const fs::path f = copy_of_fixture();
  fs::create_directories(f / "empty");
  const std::string no_pictures = error_of([&] { load_image_folder(options(f)); });
  EXPECT_NE(no_pictures.find("'" + (f / "empty").string() + "' holds no pictures"), std::string::npos) << no_pictures;
}

TEST_F(ImageFolder, ANonImageFileIsNamed) {
  const fs::path f = copy_of_fixture();
  write_bytes(f / "stripes" / "notes.txt", "not a picture");
  const std::string e = error_of([&] { load_image_folder(options(f)); });
  EXPECT_NE(e.find("'" + (f / "stripes" / "notes.txt").string() + "' is not a PNG or JPEG picture"), std::string::npos)
      << e;
  EXPECT_NE(e.find("move it out of the folder"), std::string::npos) << e;
  write_bytes(f / "stripes" / "notes.txt", "");  // empty
  EXPECT_NE(error_of([&] { load_image_folder(options(f)); }).find("is not a PNG or JPEG"), std::string::npos);
}

// They were passed over without a word: a dataset with a broken link trained on fewer
// pictures than it holds.
TEST_F(ImageFolder, EntriesThatAreNeitherFileNorFolderAreNamed) {
  const fs::path f = copy_of_fixture();
  const fs::path dangling = f / "disc" / "moved.png";
  fs::create_symlink(f / "nowhere.png", dangling);
  std::string e = error_of([&] { load_image_folder(options(f)); });
  EXPECT_NE(e.find("'" + dangling.string() + "' is a link that leads nowhere"), std::string::npos) << e;
  EXPECT_NE(e.find("move it out of the folder"), std::string::npos) << e;
  fs::remove(dangling);
  fs::create_symlink(f / "stripes" / "loop.png", f / "stripes" / "loop.png");
  e = error_of([&] { load_image_folder(options(f)); });
  EXPECT_NE(e.find("loop.png' is a link that leads nowhere"), std::string::npos) << e;
  fs::remove(f / "stripes" / "loop.png");
  ASSERT_EQ(::mkfifo((f / "stripes" / "pipe.jpg").c_str(), 0600), 0);
  e = error_of([&] { load_image_folder(options(f)); });
  EXPECT_NE(e.find("pipe.jpg' is a named pipe (FIFO), not a PNG or JPEG picture"), std::string::npos) << e;
}

TEST_F(ImageFolder, TruncatedAndCorruptFilesAreNamedWhenDecoded) {
  const fs::path f = copy_of_fixture();
  for (const char* name : {"002.png", "004.jpg"}) {
    SCOPED_TRACE(name);
    const fs::path path = f / "disc" / name;
    const std::string whole = read_bytes(path);
    // Truncated after the header: the folder loads (headers are fine), the picture does not decode.
    write_bytes(path, whole.substr(0, whole.size() - 40));
    const std::string truncated = error_of([&] { decode_image(path.string()); });
    EXPECT_NE(truncated.find("picture '" + path.string() + "' is not a readable"), std::string::npos) << truncated;
    EXPECT_NE(truncated.find("re-save it"), std::string::npos) << truncated;
    // Through the dataset, as training meets it.
    const DatasetSplits d = load_image_folder(options(f));
    std::vector<float> sample(3 * 8 * 8);
    const std::int64_t index = std::string(name) == "004.jpg" ? 0 : 2;  // disc/004 is held out for testing
    const Dataset& split = std::string(name) == "004.jpg" ? d.test : d.train;
    EXPECT_NE(error_of([&] { split.read_sample(index, sample); }).find(path.string()), std::string::npos);
    // Cut inside the header: found when the folder loads.
    write_bytes(path, whole.substr(0, 12));
    const std::string header = error_of([&] { load_image_folder(options(f)); });
    EXPECT_NE(header.find(path.string()), std::string::npos) << header;
    // Flipped bytes in the middle: the PNG's checksum, the JPEG's entropy-coded data.
    std::string flipped = whole;
    for (std::size_t i = whole.size() / 2; i < whole.size() / 2 + 16; ++i) flipped[i] = static_cast<char>(~flipped[i]);
    write_bytes(path, flipped);
    std::vector<float> out(3 * 8 * 8);
    const std::string corrupt = error_of([&] { image_to_sample(decode_image(path.string()), {3, 8, 8, default_mean(3), default_std(3)}, out); });
    EXPECT_NE(corrupt.find(path.string()), std::string::npos) << corrupt;
    write_bytes(path, whole);
  }
}

// The 4-byte big-endian value at `at`.
void put_u32(std::string& s, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
}

TEST_F(ImageFolder, DecompressionBombsAreRefusedFromTheirHeader) {
  // A PNG whose IHDR (with a valid CRC) declares 100,000 x 100,000 pixels.
  std::string png = read_bytes(kFolder / "disc" / "000.png");
  ASSERT_EQ(png.substr(12, 4), "IHDR");
  put_u32(png, 16, 100000);
  put_u32(png, 20, 100000);
  put_u32(png, 29, static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17)));
  const fs::path bomb_png = dir_ / "bomb.png";
  write_bytes(bomb_png, png);
  const std::string p = error_of([&] { decode_image(bomb_png.string()); });
  EXPECT_NE(p.find("'" + bomb_png.string() + "' declares 100000x100000 pixels, more than the 67,108,864"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("scale it down"), std::string::npos) << p;

  // A JPEG whose frame header (SOF0) declares 65,000 x 65,000.
  std::string jpeg = read_bytes(kFolder / "disc" / "004.jpg");
  const std::size_t sof = jpeg.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  jpeg[sof + 5] = static_cast<char>(65000 >> 8);
  jpeg[sof + 6] = static_cast<char>(65000 & 0xFF);
  jpeg[sof + 7] = static_cast<char>(65000 >> 8);
  jpeg[sof + 8] = static_cast<char>(65000 & 0xFF);
  const fs::path bomb_jpeg = dir_ / "bomb.jpg";
  write_bytes(bomb_jpeg, jpeg);
  const std::string j = error_of([&] { read_image_header(bomb_jpeg.string()); });
  EXPECT_NE(j.find("declares 65000x65000 pixels"), std::string::npos) << j;
}

TEST_F(ImageFolder, OptionsThatDoNotFitAreRefused) {
  ImageFolderOptions o = options(kFolder);
  o.sample_shape = {4, 8, 8};
  EXPECT_NE(error_of([&] { load_image_folder(o); }).find("pictures of 4 channels"), std::string::npos);
  o.sample_shape = {64};
  EXPECT_NE(error_of([&] { load_image_folder(o); }).find("[batch, channels, height, width]"), std::string::npos);
  o = options(kFolder);
  o.mean = {0.5f};
  EXPECT_NE(error_of([&] { load_image_folder(o); }).find("--mean has 1 value but the model's pictures have 3"),
            std::string::npos);
  o.mean = {};
  o.std = {1, 0, 1};
  EXPECT_NE(error_of([&] { load_image_folder(o); }).find("--std 0 is not a positive number"), std::string::npos);
  o = options(kFolder);
  o.test_fraction = 0;
  EXPECT_NE(error_of([&] { load_image_folder(o); }).find("leaves no picture for testing"), std::string::npos);
  const fs::path other = dir_ / "other";
  fs::create_directories(other);
  fs::copy(kFolder / "disc", other / "disc");
  fs::copy(kFolder / "disc", other / "dots");
  o = options(kFolder);
  o.test_folder = other.string();
  EXPECT_NE(error_of([&] { load_image_folder(o); }).find("has the classes 'disc', 'dots' but"), std::string::npos);
}

}  // namespace
}  // namespace poet::data
