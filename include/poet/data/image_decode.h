// PNG and JPEG files decoded to 8-bit RGB, with Debian's libpng 1.6 (its simplified API)
// and libjpeg-turbo (the libjpeg API), as PIL's Image.open(path).convert("RGB") would:
// greyscale is copied to the three channels, a palette is looked up, alpha is dropped
// (not composited), 16-bit samples are reduced to 8 bits.
//
// Hostile files: the format is told by the file's first bytes, not its name; the header's
// dimensions are checked against kMaxImagePixels before any pixel memory is allocated (a
// decompression bomb declares huge dimensions in a few bytes); and what libpng or libjpeg
// calls an error or a warning (a truncated file, a bad checksum, corrupt data libjpeg would
// paper over with grey) is an InputError naming the file, never a crash or a half image.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poet::data {

enum class ImageFormat { Png, Jpeg };

// 2^26 = 67,108,864 pixels (an 8192x8192 picture; a 48-megapixel photo fits): the largest
// picture decoded, about 256 MB while it is (libpng's RGBA). Far above what a
// model's input needs; a larger one is scaled down first.
inline constexpr std::int64_t kMaxImagePixels = std::int64_t{1} << 26;

struct ImageHeader {
  ImageFormat format = ImageFormat::Png;
  std::int64_t width = 0, height = 0;
};

struct RgbImage {
  std::int64_t width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // row-major, 3 bytes (R, G, B) a pixel
};

// Reads only the header: the format and the dimensions. Throws InputError naming `path`
// and the fix when it cannot be read, is neither PNG nor JPEG, is corrupt, or declares
// more than kMaxImagePixels pixels.
ImageHeader read_image_header(const std::string& path);

// Decodes the whole picture; throws InputError as read_image_header does, and for
// corrupt or truncated pixel data.
RgbImage decode_image(const std::string& path);

}  // namespace poet::data
