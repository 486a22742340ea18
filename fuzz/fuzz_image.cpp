// A picture of an image folder (`poet train --dataset folder:PATH`), PNG or JPEG, read
// through the path as the dataset reads it: the header check made when the folder loads,
// then the decode and the resize to a 3x16x16 sample made when a batch needs it.
#include <vector>

#include "fuzz_support.h"
#include "poet/data/image_decode.h"
#include "poet/data/image_transform.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return poet::fuzz::expect_value_or_input_error([&] {
    const std::string& path = poet::fuzz::scratch_file_with({data, size});
    poet::data::read_image_header(path);
    const poet::data::ImageTransform t{3, 16, 16, poet::data::default_mean(3), poet::data::default_std(3)};
    std::vector<float> sample(3 * 16 * 16);
    poet::data::image_to_sample(poet::data::decode_image(path), t, sample);
  });
}
