#include "poet/train/checkpoint_file.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string_view>

#include "poet/paging/checksum.h"
#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/input_file.h"

namespace poet::train {
namespace {

constexpr char kMagic[8] = {'P', 'O', 'E', 'T', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion = 3;
constexpr std::uint32_t kOldestVersion = 1;  // without batch_size and data

template <typename T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

void put_floats(std::string& out, const std::vector<float>& values) {
  put(out, static_cast<std::uint64_t>(values.size()));
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

std::uint32_t crc_of(std::string_view bytes) {
  return paging::crc32_of(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
}

// Reads the fields in order; any read past the end means the file was cut short.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  template <typename T>
  T get() {
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  std::vector<float> get_floats() {
    const auto n = get<std::uint64_t>();
    if (n > bytes_.size() / sizeof(float)) fail("a length beyond the end of the file");
    std::vector<float> values(n);
    const char* from = take(n * sizeof(float));
    // An empty vector's data() may be null, which memcpy must not see even for 0 bytes
    // (SGD's checkpoints hold no optimizer state).
    if (n > 0) std::memcpy(values.data(), from, n * sizeof(float));
    return values;
  }
  std::string get_string(std::size_t n) { return std::string(take(n), n); }
  bool at_end() const { return at_ == bytes_.size(); }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(
        fmt::format("checkpoint '{}' is damaged ({}); delete it, or pass another --checkpoint, and train "
                    "without --resume",
                    path_, what));
  }

 private:
  const char* take(std::size_t n) {
    if (n > bytes_.size() - at_) fail("it is truncated");
    const char* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  std::string_view bytes_;
  const std::string& path_;
  std::size_t at_ = 0;
};

bool begins_as_a_checkpoint(std::string_view bytes) {
  return bytes.size() >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0;
}

// Throws unless `bytes` (the whole file, or its first 64 KiB) begin as a checkpoint does.
void check_header(std::string_view bytes, const std::string& path) {
  if (!begins_as_a_checkpoint(bytes))
    throw InputError(
        fmt::format("'{}' is not a poet training checkpoint (no POETCKPT header); pass the file a "
                    "'poet train --checkpoint' wrote",
                    path));
}

}  // namespace

std::string encode_checkpoint(const TrainingCheckpoint& c) {
  std::string out(kMagic, sizeof(kMagic));
  put(out, kVersion);
  put(out, c.epochs_done);
  put(out, c.steps_done);
  put(out, c.seed);
  put(out, c.optimizer);
  put(out, static_cast<std::uint32_t>(c.model.size()));
  out += c.model;
  put(out, c.batch_size);
  put(out, static_cast<std::uint32_t>(c.data.size()));
  out += c.data;
  put(out, c.learning_rate);
  put_floats(out, c.parameters);
  put_floats(out, c.optimizer_state);
  put(out, crc_of(out));
  return out;
}

TrainingCheckpoint decode_checkpoint(const std::string& bytes, const std::string& path) {
  Reader r(bytes, path);
  check_header(bytes, path);
  // The checksum first: a damaged file is reported as damaged, not as whichever field broke.
  if (bytes.size() < sizeof(kMagic) + sizeof(std::uint32_t) * 2) r.fail("it is truncated");
  std::uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof(stored), sizeof(stored));
  if (crc_of(std::string_view(bytes).substr(0, bytes.size() - sizeof(stored))) != stored)
    r.fail("its checksum does not match: it was truncated or changed after it was written");
  r.get_string(sizeof(kMagic));
  const auto version = r.get<std::uint32_t>();
  if (version < kOldestVersion || version > kVersion)
    throw InputError(
        fmt::format("checkpoint '{}' has format version {}; this poet reads versions {} to {}. Remove it (or give "
                    "another --checkpoint) and train without --resume to start afresh",
                    path, version, kOldestVersion, kVersion));
  TrainingCheckpoint c;
  c.epochs_done = r.get<std::uint64_t>();
  c.steps_done = r.get<std::uint64_t>();
  c.seed = r.get<std::uint64_t>();
  c.optimizer = r.get<std::uint32_t>();
  c.model = r.get_string(r.get<std::uint32_t>());
  if (version >= 2) {
    c.batch_size = r.get<std::uint64_t>();
    c.data = r.get_string(r.get<std::uint32_t>());
  }
  if (version >= 3) c.learning_rate = r.get<float>();
  c.parameters = r.get_floats();
  c.optimizer_state = r.get_floats();
  r.get<std::uint32_t>();
  if (!r.at_end()) r.fail("bytes after the checksum");
  return c;
}

void save_checkpoint(const std::string& path, const TrainingCheckpoint& c) {
  write_file_atomically(path, encode_checkpoint(c));
}

TrainingCheckpoint load_checkpoint(const std::string& path) {
  // A stream that is no checkpoint is refused at its first bytes.
  const auto begins_a_checkpoint = [&](std::string_view piece) { check_header(piece, path); };
  return decode_checkpoint(
      read_input_file(path, "checkpoint", kMaxInputFileBytes, first_piece_inspector(begins_a_checkpoint)), path);
}


void check_free_for_a_new_checkpoint(const std::string& path, const std::string& model) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) == 0 || ec) return;
  std::string first(sizeof(kMagic), '\0');
  std::ifstream(path, std::ios::binary).read(first.data(), static_cast<std::streamsize>(first.size()));
  if (!begins_as_a_checkpoint(first))
    throw InputError(fmt::format("--checkpoint '{}' is a file that is not a poet checkpoint, which training would "
                                 "replace; give another --checkpoint path, or remove the file",
                                 path));
  constexpr std::string_view kStartAfresh = "remove it, or give another --checkpoint, to start afresh";
  TrainingCheckpoint held;
  try {
    held = load_checkpoint(path);
  } catch (const InputError&) {
    throw InputError(fmt::format("--checkpoint '{}' holds a damaged poet checkpoint; {}", path, kStartAfresh));
  }
  // --resume continues only the model the checkpoint is of.
  if (held.model != model)
    throw InputError(fmt::format("--checkpoint '{}' holds a checkpoint of {} after epoch {}, not of {}; {}", path,
                                 held.model, held.epochs_done, model, kStartAfresh));
  throw InputError(fmt::format("--checkpoint '{}' holds a checkpoint of {} after epoch {}: continue it with --resume, "
                               "or {}",
                               path, held.model, held.epochs_done, kStartAfresh));
}

}  // namespace poet::train
