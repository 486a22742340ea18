#include "poet/data/image_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "poet/data/image_decode.h"
#include "poet/data/image_transform.h"
#include "poet/util/error.h"

namespace poet::data {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLayout =
    "an image folder has one sub-folder of PNG or JPEG pictures per class (FOLDER/cat/1.png, FOLDER/dog/2.jpg)";

bool hidden(const fs::path& p) { return p.filename().string().starts_with('.'); }

// What a folder's entry that is neither file nor folder is, for a message: `own` is the
// entry's own status, `target` its link's target's.
std::string not_a_file(const fs::file_status& own, const fs::file_status& target) {
  if (fs::is_symlink(own))
    return fs::exists(target) ? "a link to a device or pipe"
                              : "a link that leads nowhere (its target is missing, or the links loop)";
  if (fs::is_fifo(own)) return "a named pipe (FIFO)";
  if (fs::is_socket(own)) return "a socket";
  return fs::exists(own) ? "a device" : "unreadable";
}

struct ClassFiles {
  std::string name;
  std::vector<std::string> files;  // sorted
};

// The class sub-folders of `folder` (sorted by name) with their files (sorted by path).
std::vector<ClassFiles> list_classes(const std::string& folder, const char* option) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw InputError(fmt::format("{} '{}' is not a folder{}; {}", option, folder,
                                 fs::exists(folder, ec) ? "" : " (it does not exist)", kLayout));
  std::vector<ClassFiles> classes;
  for (auto it = fs::directory_iterator(folder, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (!hidden(it->path()) && it->is_directory(ec)) classes.push_back({it->path().filename().string(), {}});
  if (ec)
    throw InputError(fmt::format("cannot list {} '{}': {}; check that it is readable", option, folder, ec.message()));
  std::ranges::sort(classes, {}, &ClassFiles::name);
  if (classes.empty())
    throw InputError(fmt::format("{} '{}' has no class sub-folders; {}", option, folder, kLayout));
  for (ClassFiles& c : classes) {
    const fs::path dir = fs::path(folder) / c.name;
    // Links to folders inside a class are not followed (a link to its own parent would loop).
    auto it = fs::recursive_directory_iterator(dir, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (hidden(it->path())) {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      std::error_code kind_error;
      const fs::file_status status = it->status(kind_error);  // through links
      if (fs::is_regular_file(status)) c.files.push_back(it->path().string());
      else if (!fs::is_directory(status))
        throw InputError(fmt::format("'{}' is {}, not a PNG or JPEG picture; move it out of the folder",
                                     it->path().string(), not_a_file(it->symlink_status(kind_error), status)));
    }
    if (ec)
      throw InputError(
          fmt::format("cannot list class folder '{}': {}; check that it is readable", dir.string(), ec.message()));
    if (c.files.empty())
      throw InputError(fmt::format("class folder '{}' holds no pictures; add PNG or JPEG files to it or remove it",
                                   dir.string()));
    std::ranges::sort(c.files);
  }
  return classes;
}

std::string class_names(const std::vector<ClassFiles>& classes) {
  std::vector<std::string> names;
  for (const ClassFiles& c : classes) names.push_back("'" + c.name + "'");
  return fmt::format("{}", fmt::join(names, ", "));
}

class ImageFolderReader final : public SampleReader {
 public:
  ImageFolderReader(std::vector<std::string> files, ImageTransform transform)
      : files_(std::move(files)), transform_(std::move(transform)) {}

  void read(std::int64_t index, std::span<float> values) const override {
    image_to_sample(decode_image(files_.at(static_cast<std::size_t>(index))), transform_, values);
  }

 private:
  std::vector<std::string> files_;
  ImageTransform transform_;
};

// Adds `file` (checked by its header) to the split's lists.
void add_sample(std::vector<std::string>& files, std::vector<std::int32_t>& labels, const std::string& file,
                std::int32_t label) {
  read_image_header(file);
  files.push_back(file);
  labels.push_back(label);
}

Dataset make_split(const std::vector<std::int64_t>& shape, int classes, const ImageTransform& t,
                   std::vector<std::string> files, std::vector<std::int32_t> labels) {
  Dataset d;
  d.sample_shape = shape;
  d.classes = classes;
  d.labels = std::move(labels);
  d.reader = std::make_shared<ImageFolderReader>(std::move(files), t);
  return d;
}

}  // namespace

DatasetSplits load_image_folder(const ImageFolderOptions& o) {
  if (o.sample_shape.size() != 3)
    throw InputError(fmt::format("the model's samples are [{}]; an image folder feeds models whose input is [batch, "
                                 "channels, height, width]",
                                 fmt::join(o.sample_shape, ", ")));
  ImageTransform t{o.sample_shape[0], o.sample_shape[1], o.sample_shape[2], o.mean, o.std};
  if (t.mean.empty()) t.mean = default_mean(t.channels);
  if (t.std.empty()) t.std = default_std(t.channels);
  check_transform(t);
  if (!(o.test_fraction >= 0 && o.test_fraction < 1))
    throw InputError(fmt::format("--test-fraction {} is not in [0, 1); give the share of each class held out for "
                                 "testing, e.g. 0.2",
                                 o.test_fraction));

  const std::vector<ClassFiles> classes = list_classes(o.folder, "image folder");
  if (classes.size() < 2)
    throw InputError(fmt::format("image folder '{}' has one class sub-folder ({}); a classifier needs at least two: "
                                 "add a sub-folder of pictures for each other class",
                                 o.folder, class_names(classes)));
  std::vector<std::string> train_files, test_files;
  std::vector<std::int32_t> train_labels, test_labels;
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const std::vector<std::string>& files = classes[c].files;
    for (std::size_t i = 0; i < files.size(); ++i) {
      // Held out when [i, i+1) crosses a multiple of 1/fraction: evenly spread, by name.
      const bool held_out = o.test_folder.empty() && std::floor(static_cast<double>(i + 1) * o.test_fraction) >
                                                         std::floor(static_cast<double>(i) * o.test_fraction);
      if (held_out)
        add_sample(test_files, test_labels, files[i], static_cast<std::int32_t>(c));
      else
        add_sample(train_files, train_labels, files[i], static_cast<std::int32_t>(c));
    }
  }
  if (!o.test_folder.empty()) {
    const std::vector<ClassFiles> test_classes = list_classes(o.test_folder, "--test-folder");
    if (!std::ranges::equal(classes, test_classes, {}, &ClassFiles::name, &ClassFiles::name))
      throw InputError(fmt::format("--test-folder '{}' has the classes {} but '{}' has {}; give both folders the same "
                                   "class sub-folders",
                                   o.test_folder, class_names(test_classes), o.folder, class_names(classes)));
    for (std::size_t c = 0; c < test_classes.size(); ++c)
      for (const std::string& file : test_classes[c].files)
        add_sample(test_files, test_labels, file, static_cast<std::int32_t>(c));
  }
  if (test_files.empty())
    throw InputError(fmt::format("image folder '{}' leaves no picture for testing ({} pictures, --test-fraction {}); "
                                 "raise --test-fraction, add pictures, or give --test-folder",
                                 o.folder, train_files.size(), o.test_fraction));
  if (train_files.empty())
    throw InputError(fmt::format("image folder '{}' leaves no picture for training; add pictures", o.folder));
  const int count = static_cast<int>(classes.size());
  return {"folder:" + o.folder, make_split(o.sample_shape, count, t, std::move(train_files), std::move(train_labels)),
          make_split(o.sample_shape, count, t, std::move(test_files), std::move(test_labels)), class_names(classes)};
}

}  // namespace poet::data
