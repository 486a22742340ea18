// What the firmware (firmware/, docs/FIRMWARE.md) needs beside its device plan: the training
// graph as a C table with the initial parameters, and the data in the order the host's
// trainer would feed it, so that the firmware and `poet train` take the same steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "poet/data/dataset.h"
#include "poet/graph/graph.h"
#include "poet/onnx/onnx_import.h"
#include "poet/plan/device_format.h"

namespace poet::train {

struct FirmwareModelOptions {
  std::uint64_t seed = 0;        // of the initial parameters, as ExecutorOptions::seed
  // An imported model's weights, which replace the seeded ones (load_imported_weights);
  // null: the seed's. `weights_from` names them in the header's comment.
  const std::vector<ImportedParameters>* imported = nullptr;
  std::string weights_from = "";
  float learning_rate = 0.01f;   // SGD's
  float pixel_mean = 0;          // subtracted from each pixel / 255 (data/fashion_mnist.h)
};

// A C header (firmware/model_types.h's types) holding every node of `g` (operator, inputs,
// output shape, attributes, parameter slice), the parameters (ParameterStore's from the
// seed, or the imported ones) as exact hex floats, the learning rate, and `plan`'s arena size, which
// the firmware's static arena is sized to. Throws InputError naming the node when `g`
// uses an operator the firmware has no kernel for, or when `plan` is for another graph.
std::string firmware_model_header(const Graph& g, const DevicePlan& plan, const FirmwareModelOptions& options);

// The samples the host's Trainer visits in its first `count` samples of epoch 0 with
// `seed` (data::shuffled_order), or the first `count` in order when `shuffle` is false, as
// records of one label byte and the sample's pixels as bytes (round((x + mean) x 255)).
// Throws InternalError if a pixel does not come back bit-identical through the
// firmware's normalisation, InputError if the dataset has fewer than `count` samples.
std::string firmware_data_records(const data::Dataset& d, std::int64_t count, bool shuffle, std::uint64_t seed,
                                  float pixel_mean);

}  // namespace poet::train
