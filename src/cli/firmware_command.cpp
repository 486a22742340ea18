// `poet firmware`: what firmware/ is built and fed with beside the device plan (the graph as a
// C table with its initial parameters; the data in the host trainer's order).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>

#include "commands.h"
#include "graph_source.h"
#include "poet/data/fashion_mnist.h"
#include "poet/train/firmware_export.h"
#include "poet/train/trainer.h"
#include "poet/util/atomic_file.h"

namespace poet::cli {

void add_firmware_command(CLI::App& app) {
  struct Options {
    GraphSource source;
    std::string plan_file, header, samples_dir, dataset_dir = data::kFashionMnistDir;
    std::uint64_t seed = 0;
    float learning_rate = 0.01f;
    std::int64_t train_samples = 6000, test_samples = 1000;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "firmware", "Write the firmware's model header (graph, initial parameters) and Fashion-MNIST data files");
  opts->source.add_options(*cmd);
  cmd->add_option("--plan", opts->plan_file, "The device plan (poet plan --device-plan) the firmware will run")
      ->required()
      ->transform(existing_file());
  cmd->add_option("--header", opts->header, "Write the model header (firmware/model_types.h's types) here")
      ->required()
      ->transform(output_file());
  cmd->add_option("--seed", opts->seed, "Seed of the initial weights and the batch order, as poet train's")
      ->check(seed_values())
      ->capture_default_str();
  cmd->add_option("--lr", opts->learning_rate, "SGD's learning rate")->capture_default_str()->check(number_in(1e-9, 10));
  cmd->add_option("--samples-dir", opts->samples_dir,
                  "Also write train.bin and test.bin (a label byte, then the pixel bytes, per sample) into this "
                  "folder (the dataset is read from --dataset-dir)")
      ->check(output_folder());
  cmd->add_option("--train-samples", opts->train_samples, "Samples of train.bin: the first of poet train's epoch 0")
      ->capture_default_str()
      ->check(number_in(1, 60000, true));
  cmd->add_option("--test-samples", opts->test_samples, "Samples of test.bin: the first test images in order")
      ->capture_default_str()
      ->check(number_in(1, 10000, true));
  cmd->add_option("--dataset-dir", opts->dataset_dir, "Where Fashion-MNIST's IDX files are")
      ->type_name("FOLDER")
      ->capture_default_str();
  cmd->callback([opts, cmd] {
    if (opts->samples_dir.empty())
      for (const char* name : {"--train-samples", "--test-samples", "--dataset-dir"})
        if (cmd->get_option(name)->count() > 0)
          throw InputError(fmt::format("{} is for the data files --samples-dir DIR writes; add --samples-dir, or "
                                       "leave {} out",
                                       name, name));
    std::vector<NamedFile> inputs = opts->source.input_files();
    inputs.push_back({"--plan", opts->plan_file});
    if (!opts->samples_dir.empty())
      for (std::string& file : data::fashion_mnist_files(opts->dataset_dir))
        inputs.push_back({"--dataset-dir", std::move(file)});
    const auto in_samples_dir = [&](const char* name) {
      return opts->samples_dir.empty() ? std::string() : (std::filesystem::path(opts->samples_dir) / name).string();
    };
    check_files_apart(inputs, {{"--header", opts->header},
                               {"--samples-dir", opts->samples_dir},
                               {"--samples-dir", in_samples_dir("train.bin")},
                               {"--samples-dir", in_samples_dir("test.bin")}});
    OnnxModel imported;
    const Graph g = opts->source.load(&imported);
    const DevicePlan plan = load_device_plan(opts->plan_file);
    // A plan made for another batch size has as many nodes but larger tensors: the firmware
    // would refuse it at boot. Replayed against this graph as check-plan does, it is refused here.
    if (const DevicePlanVerdict verdict =
            check_device_plan(g, costs_for(g, resolve_device(opts->source.platform)), plan);
        !verdict.valid())
      throw InputError(fmt::format("--plan '{}' is not a plan of '{}' as given here: {}; make the plan and the "
                                   "firmware header from the same --model and --batch-size",
                                   opts->plan_file, g.name(), verdict.error));
    // An ONNX model starts from its own weights, as `train --onnx` does; a structure-only
    // file has none, and starts from the seed's.
    const bool file_weights = !opts->source.onnx_file.empty() && imported.has_weights;
    const train::FirmwareModelOptions model{.seed = opts->seed,
                                            .imported = file_weights ? &imported.parameters : nullptr,
                                            .weights_from = opts->source.onnx_file,
                                            .learning_rate = opts->learning_rate,
                                            .pixel_mean = data::kFashionMnistPixelMean};
    const std::string header = train::firmware_model_header(g, plan, model);
    // Everything is made before anything is written, so that a missing dataset or a folder
    // that cannot be made leaves no header behind without its data.
    std::string train_records, test_records;
    std::unique_ptr<MadeFolder> made_folder;
    if (!opts->samples_dir.empty()) {
      const data::DatasetSplits d = data::load_fashion_mnist(opts->dataset_dir);
      // The firmware reads records of the header's sample size and classes: a model of
      // another input would read Fashion-MNIST's records out of step.
      extending_errors([&] { train::check_dataset_fits(g, d.train); }, [](const std::string& what) {
        return fmt::format("--samples-dir writes Fashion-MNIST's pictures, and {}; or leave --samples-dir out",
                           what);
      });
      train_records = train::firmware_data_records(d.train, opts->train_samples, true, opts->seed,
                                                   data::kFashionMnistPixelMean);
      test_records = train::firmware_data_records(d.test, opts->test_samples, false, opts->seed,
                                                  data::kFashionMnistPixelMean);
      made_folder = make_output_folder(opts->samples_dir, "--samples-dir");
    }
    // The header and its data as one output: all written, or none.
    std::vector<FileContents> files{{opts->header, header}};
    const std::string train = (std::filesystem::path(opts->samples_dir) / "train.bin").string();
    const std::string test = (std::filesystem::path(opts->samples_dir) / "test.bin").string();
    if (!opts->samples_dir.empty()) {
      files.push_back({train, std::move(train_records)});
      files.push_back({test, std::move(test_records)});
    }
    write_files_atomically(files);
    fmt::print("wrote {} ({} nodes, arena {})\n", opts->header, g.size(),
               format_bytes_exact(static_cast<std::int64_t>(plan.arena_bytes)));
    if (!opts->samples_dir.empty())
      fmt::print("wrote {} ({} samples) and {} ({} samples)\n", train, opts->train_samples, test, opts->test_samples);
  });
}

}  // namespace poet::cli
