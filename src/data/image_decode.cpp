#include "poet/data/image_decode.h"

#include <fmt/format.h>
#include <png.h>

#include <array>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

// libjpeg's header needs size_t and FILE declared first.
#include <jpeglib.h>

#include "poet/util/error.h"

namespace poet::data {
namespace {

constexpr const char* kReencode = "re-save it as PNG or JPEG, or move it out of the folder";

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open_file(const std::string& path) {
  errno = 0;
  File f(std::fopen(path.c_str(), "rb"));
  if (!f)
    throw InputError(fmt::format("cannot open picture '{}': {}; check that it exists and is readable", path,
                                 errno ? std::strerror(errno) : "unknown error"));
  return f;
}

ImageFormat sniff_format(const std::string& path) {
  const File f = open_file(path);
  std::array<unsigned char, 8> magic{};
  const std::size_t n = std::fread(magic.data(), 1, magic.size(), f.get());
  static constexpr std::array<unsigned char, 8> kPng = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (n == kPng.size() && magic == kPng) return ImageFormat::Png;
  if (n >= 3 && magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF) return ImageFormat::Jpeg;
  if (n == 0)
    throw InputError(fmt::format("'{}' is not a PNG or JPEG picture (the file is empty); {}", path, kReencode));
  throw InputError(fmt::format("'{}' is not a PNG or JPEG picture (its first bytes are {:02x}); {}", path,
                               fmt::join(magic.begin(), magic.begin() + static_cast<std::ptrdiff_t>(n), " "),
                               kReencode));
}

void check_dimensions(const std::string& path, std::int64_t width, std::int64_t height) {
  if (width <= 0 || height <= 0)
    throw InputError(fmt::format("picture '{}' declares {}x{} pixels, an empty picture; {}", path, width, height,
                                 kReencode));
  if (width > kMaxImagePixels / height)
    throw InputError(fmt::format(
        "picture '{}' declares {}x{} pixels, more than the {} poet decodes (a decompression bomb, or a very large "
        "picture); scale it down, e.g. to 1024 pixels on its longer side, or move it out of the folder",
        path, width, height, fmt::group_digits(kMaxImagePixels)));
}

[[noreturn]] void corrupt(const std::string& path, const char* format, const char* library_message) {
  // libpng's stdio reader says only this when the file ends early.
  const bool truncated = std::strcmp(library_message, "Read Error") == 0;
  throw InputError(fmt::format("picture '{}' is not a readable {}: {}; {}", path, format,
                               truncated ? "the file ends early (truncated)" : library_message, kReencode));
}

// --- PNG: libpng's simplified API, which keeps its setjmp/longjmp error handling inside
// libpng and reports an error as a return value with image.message.

struct PngImage {
  png_image image{};
  PngImage() { image.version = PNG_IMAGE_VERSION; }
  ~PngImage() { png_image_free(&image); }
  PngImage(const PngImage&) = delete;
  PngImage& operator=(const PngImage&) = delete;
};

void begin_png(PngImage& png, const std::string& path, std::int64_t& width, std::int64_t& height) {
  if (!png_image_begin_read_from_file(&png.image, path.c_str())) corrupt(path, "PNG", png.image.message);
  width = png.image.width;
  height = png.image.height;
  check_dimensions(path, width, height);
}

RgbImage decode_png(const std::string& path) {
  PngImage png;
  RgbImage out;
  begin_png(png, path, out.width, out.height);
  // 16-bit samples without gamma information are sRGB, as in every other reader (libpng's
  // default takes them as linear light and would brighten them).
  png.image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  // RGBA, then the alpha dropped: PIL's convert("RGB"). Asking libpng for RGB would
  // composite on black instead.
  png.image.format = PNG_FORMAT_RGBA;
  std::vector<std::uint8_t> rgba(PNG_IMAGE_SIZE(png.image));
  if (!png_image_finish_read(&png.image, nullptr, rgba.data(), 0, nullptr)) corrupt(path, "PNG", png.image.message);
  const auto pixels = static_cast<std::size_t>(out.width * out.height);
  out.pixels.resize(3 * pixels);
  for (std::size_t p = 0; p < pixels; ++p) std::memcpy(&out.pixels[3 * p], &rgba[4 * p], 3);
  return out;
}

// --- JPEG: the libjpeg API reports errors by longjmp from its error_exit. Each call that
// may fail runs in a function of its own that holds only trivially destructible locals and
// sets the jump target, so the jump skips no C++ destructor (which would be undefined
// behaviour); the C++ code around them owns the decoder and the file.

struct JpegError {
  jpeg_error_mgr manager;  // first, so libjpeg's pointer to it is a pointer to this
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegError*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings (level -1) are data libjpeg found corrupt and papers over, e.g. a truncated
// file filled with grey: an error here, as a half picture would train the model on grey.
// Trace messages (level >= 0) are ignored.
void jpeg_warn(j_common_ptr c, int level) {
  if (level < 0) jpeg_fail(c);
}

bool jpeg_create(jpeg_decompress_struct* d, JpegError* e) {
  if (setjmp(e->jump)) return false;
  jpeg_create_decompress(d);
  return true;
}

bool jpeg_header(jpeg_decompress_struct* d, JpegError* e) {
  if (setjmp(e->jump)) return false;
  jpeg_read_header(d, TRUE);
  return true;
}

bool jpeg_start(jpeg_decompress_struct* d, JpegError* e) {
  if (setjmp(e->jump)) return false;
  d->out_color_space = JCS_RGB;  // from YCbCr or greyscale; CMYK is an error
  jpeg_start_decompress(d);
  return true;
}

bool jpeg_rows(jpeg_decompress_struct* d, JpegError* e, unsigned char* pixels) {
  if (setjmp(e->jump)) return false;
  while (d->output_scanline < d->output_height) {
    JSAMPROW row = pixels + std::size_t{d->output_scanline} * d->output_width * 3;
    jpeg_read_scanlines(d, &row, 1);
  }
  jpeg_finish_decompress(d);
  return true;
}

// Owns the decoder; its header is read by open_jpeg. (The constructor only creates, so that
// a throw after jpeg_create_decompress always reaches the destructor.)
struct JpegDecoder {
  JpegError error{};
  jpeg_decompress_struct d{};
  File file;
  bool created = false;

  explicit JpegDecoder(const std::string& path) : file(open_file(path)) {
    d.err = jpeg_std_error(&error.manager);
    error.manager.error_exit = jpeg_fail;
    error.manager.emit_message = jpeg_warn;
    if (!jpeg_create(&d, &error)) corrupt(path, "JPEG", error.message);
    created = true;
  }
  ~JpegDecoder() {
    if (created) jpeg_destroy_decompress(&d);
  }
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;
};

void read_jpeg_header(JpegDecoder& j, const std::string& path) {
  jpeg_stdio_src(&j.d, j.file.get());
  if (!jpeg_header(&j.d, &j.error)) corrupt(path, "JPEG", j.error.message);
  check_dimensions(path, j.d.image_width, j.d.image_height);
}

RgbImage decode_jpeg(const std::string& path) {
  JpegDecoder j(path);
  read_jpeg_header(j, path);
  if (j.d.jpeg_color_space == JCS_CMYK || j.d.jpeg_color_space == JCS_YCCK)
    throw InputError(fmt::format("picture '{}' is a CMYK JPEG (print colours); poet reads RGB and greyscale pictures: "
                                 "re-save it as an RGB JPEG or a PNG, or move it out of the folder",
                                 path));
  if (!jpeg_start(&j.d, &j.error)) corrupt(path, "JPEG", j.error.message);
  POET_CHECK(j.d.output_components == 3, "libjpeg gives 3 components for JCS_RGB");
  RgbImage out{j.d.output_width, j.d.output_height, {}};
  out.pixels.resize(static_cast<std::size_t>(3 * out.width * out.height));
  if (!jpeg_rows(&j.d, &j.error, out.pixels.data())) corrupt(path, "JPEG", j.error.message);
  return out;
}

}  // namespace

ImageHeader read_image_header(const std::string& path) {
  ImageHeader h;
  h.format = sniff_format(path);
  if (h.format == ImageFormat::Png) {
    PngImage png;
    begin_png(png, path, h.width, h.height);
  } else {
    JpegDecoder j(path);
    read_jpeg_header(j, path);
    h.width = j.d.image_width;
    h.height = j.d.image_height;
  }
  return h;
}

RgbImage decode_image(const std::string& path) {
  return sniff_format(path) == ImageFormat::Png ? decode_png(path) : decode_jpeg(path);
}

}  // namespace poet::data
