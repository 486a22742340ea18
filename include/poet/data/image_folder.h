// A folder of pictures with one sub-folder per class, torchvision's ImageFolder
// convention: the classes are the sub-folders' names in sorted (byte) order, numbered from
// 0; a class's samples are the PNG and JPEG files anywhere below its sub-folder, in sorted
// path order. Names starting with '.' (.DS_Store, .ipynb_checkpoints) are skipped; every
// other file must be a PNG or a JPEG (told by its first bytes), so that no picture is
// silently left out. Files directly in the top folder are not in any class and are ignored.
//
// The test set is `test_folder` when given (it must have the same classes); otherwise
// every class holds out an evenly spread `test_fraction` of its files (with 0.2, files 5,
// 10, 15, ... in sorted order), the same files on every run.
//
// Memory: only the file names and labels are held. A sample is decoded, resized and
// normalised when a batch needs it (Dataset::read_sample), so a folder of any size costs
// one picture being decoded and the batch, not the folder decoded into RAM (1.2 M ImageNet
// pictures at 3x224x224 would be 720 GB of floats).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "poet/data/dataset.h"

namespace poet::data {

struct ImageFolderOptions {
  std::string folder;
  std::string test_folder;  // empty: hold out test_fraction of `folder`
  double test_fraction = 0.2;
  std::vector<std::int64_t> sample_shape;  // C, H, W of the model's input; C is 1 or 3
  std::vector<float> mean, std;            // per channel; empty: ImageNet's (image_transform.h)
};

// Lists the files and reads every header (format, dimensions) so that a bad file is found
// before training starts. Throws InputError naming the folder or file and the fix: a
// missing folder, no class sub-folders or only one, an empty class, a file that is not a
// PNG or JPEG, a corrupt header, a decompression bomb, a test folder with other classes,
// a split that leaves the training or the test set empty.
DatasetSplits load_image_folder(const ImageFolderOptions& options);

}  // namespace poet::data
