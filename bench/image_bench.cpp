// An image folder's cost per sample (docs/ONNX.md, "Fine-tuning on your pictures"): decode
// a PNG or JPEG, resize and crop it to 3x224x224 and normalise it, as a batch is filled.
// It justifies decoding per batch without a cache: compare with a training step.
//
//   build/bench/poet_bench_image                                  # tests/data/images/folder
//   POET_BENCH_IMAGES=pictures build/bench/poet_bench_image         # a folder of your own
// (scripts/make-image-folder.py pictures --per-class 60 --size 160 320 makes the README demo's.)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "poet/data/image_decode.h"
#include "poet/data/image_transform.h"

namespace poet {
namespace {

std::vector<std::string> pictures() {
  const char* dir = std::getenv("POET_BENCH_IMAGES");
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir ? dir : POET_TEST_IMAGES_DIR))
    if (e.is_regular_file()) files.push_back(e.path().string());
  return files;
}

void BM_DecodeAndTransform(benchmark::State& state) {
  const std::vector<std::string> files = pictures();
  const data::ImageTransform t{3, 224, 224, data::default_mean(3), data::default_std(3)};
  std::vector<float> sample(3 * 224 * 224);
  std::size_t next = 0;
  double pixels = 0;
  for (auto _ : state) {
    const data::RgbImage image = data::decode_image(files[next++ % files.size()]);
    pixels += static_cast<double>(image.width * image.height);
    data::image_to_sample(image, t, sample);
    benchmark::DoNotOptimize(sample.data());
  }
  state.counters["pictures"] = static_cast<double>(files.size());
  state.counters["mean_pixels"] = pixels / static_cast<double>(state.iterations());
}
BENCHMARK(BM_DecodeAndTransform)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace poet

BENCHMARK_MAIN();
