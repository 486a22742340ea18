// `poet train`: plans a training graph for a RAM budget once, then trains it for real on
// a dataset with the executor, and reports what the run measured beside what the
// simulator predicted. With --report it instead times steps of every strategy and budget
// asked for against the simulator's prediction (train_report.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/data/fashion_mnist.h"
#include "poet/data/image_folder.h"
#include "poet/data/synthetic_dataset.h"
#include "poet/paging/file_pager.h"
#include "poet/profile/measure_device.h"
#include "poet/profile/profiling.h"
#include "poet/strategy/strategy.h"
#include "poet/graph/op_table.h"
#include "poet/onnx/onnx_import.h"
#include "poet/train/checkpoint_file.h"
#include "poet/train/imported_weights.h"
#include "poet/train/trainer.h"
#include "poet/util/atomic_file.h"
#include "poet/util/disk_room.h"
#include "poet/util/error.h"
#include "poet/util/exclusive_use.h"
#include "poet/util/interrupt.h"
#include "poet/util/json_file.h"
#include "poet/util/progress_bar.h"
#include "poet/util/units.h"
#include "graph_source.h"
#include "poet/train/training_plan.h"
#include "train_report.h"

namespace poet::cli {
namespace {

struct TrainOptions {
  std::string model = "lenet5";
  std::string onnx_file;    // fine-tune this ONNX model from its weights instead of a zoo model
  std::string loss = "cross_entropy";  // --loss: what trains the ONNX model's output
  std::string export_onnx;  // write the trained weights into the ONNX model here
  std::string dataset = "fashion-mnist";  // or synthetic, or folder:PATH
  std::string data_dir = data::kFashionMnistDir;
  std::string test_folder;               // of an image folder: its test set
  std::optional<double> test_fraction;   // of an image folder without a test folder
  std::vector<float> mean, std;          // of an image folder's pictures, per channel
  std::vector<std::string> ram_budgets = {"100%"};
  std::vector<std::string> strategies = {"poet"};
  std::string platform = kDefaultPlatform;
  int epochs = 1;
  int batch_size = 32;
  std::int64_t max_batches = 0;
  std::string optimizer = "momentum";
  std::optional<float> learning_rate;  // none: the optimizer's usual rate
  std::uint64_t seed = 0;
  std::string page_file;
  bool page_cache = false;
  std::string checkpoint;
  bool resume = false;
  std::string data;  // data::identity of the dataset loaded, for checkpoints
  double time_limit_s = 60;
  bool json = false;
  std::string report_dir;
  int report_steps = 20;
  bool report_alongside = false;
};

// An image folder is named on the command line as this prefix and its path.
constexpr std::string_view kFolderPrefix = "folder:";

bool is_image_folder(const std::string& dataset) { return dataset.starts_with(kFolderPrefix); }

// The shape of a sample per label (train::values_per_label): the input's trailing
// dimensions that hold one label's values, [C, H, W] of an image (with C = 1 of a greyscale
// one) or [hidden] of a token.
std::vector<std::int64_t> sample_shape(const Graph& g) {
  const std::int64_t per_label = train::values_per_label(g);
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)
    if (g.node(v).op == OpKind::Input) {
      const Shape& input = g.node(v).shape;
      auto first = input.end();
      for (std::int64_t values = 1; values < per_label && first != input.begin();) values *= *--first;
      while (first - input.begin() > 1 && *(first - 1) == 1) --first;  // the channel of [N, 1, H, W], not N
      return {first, input.end()};
    }
  return {};
}

data::DatasetSplits load_dataset(const TrainOptions& o, const Graph& g) {
  if (!is_image_folder(o.dataset) &&
      (!o.test_folder.empty() || o.test_fraction || !o.mean.empty() || !o.std.empty()))
    throw InputError("--test-folder, --test-fraction, --mean and --std describe an image folder; give one with "
                     "--dataset folder:PATH, or leave them out");
  const std::int64_t vocabulary = token_vocabulary(g);
  if (vocabulary > 0 && o.dataset != "synthetic")
    throw InputError(fmt::format("the model takes token ids (an embedding of {} tokens reads its input), which "
                                 "--dataset {} does not hold: train it on --dataset synthetic (token sequences)",
                                 vocabulary, o.dataset));
  if (o.dataset == "fashion-mnist") return data::load_fashion_mnist(o.data_dir);
  if (is_image_folder(o.dataset)) {
    if (!o.test_folder.empty() && o.test_fraction)
      throw InputError("--test-fraction holds out a share of --dataset's pictures for the test, and --test-folder "
                       "gives the test its own pictures instead; give one of them");
    const std::string folder = o.dataset.substr(kFolderPrefix.size());
    std::error_code error;
    if (!o.test_folder.empty() && std::filesystem::equivalent(folder, o.test_folder, error))
      fmt::print(stderr, "poet: note: --test-folder is the folder --dataset trains on, so the test accuracy is on "
                         "pictures the model was trained on\n");
    return data::load_image_folder({.folder = folder,
                                    .test_folder = o.test_folder,
                                    .test_fraction = o.test_fraction.value_or(0.2),
                                    .sample_shape = sample_shape(g),
                                    .mean = o.mean,
                                    .std = o.std});
  }
  data::SyntheticOptions s;
  const std::int64_t per_batch = train::labels_per_batch(g);
  s.sample_shape = sample_shape(g);
  s.classes = static_cast<int>(g.node(g.loss()).shape.back());
  s.seed = o.seed;
  s.vocabulary = vocabulary;
  if (per_batch > o.batch_size) {  // a label per token: eight batches' tokens, a batch's for the test
    constexpr std::int64_t kMostTokens = std::int64_t{1} << 17;  // 400 MB at BERT's 768 values
    if (per_batch > kMostTokens)
      throw InputError(fmt::format("--batch-size {} makes {} tokens a batch, more than the {} synthetic tokens poet "
                                   "makes; lower --batch-size to at most {}",
                                   o.batch_size, per_batch, kMostTokens, kMostTokens / (per_batch / o.batch_size)));
    s.train_count = std::max(s.train_count, std::min(8 * per_batch, kMostTokens));
    s.test_count = std::max(s.test_count, per_batch);
  }
  if (o.max_batches > 0) {  // no more samples than a short run reads: at 224x224 each takes 600 KB
    s.train_count = std::min(s.train_count, o.max_batches * per_batch);
    s.test_count = std::min(s.test_count, std::max(s.train_count, per_batch));
  }
  return data::make_synthetic_dataset(s);
}

train::TrainingPlan plan_or_exit(const Graph& g, const GraphCosts& costs, const TrainOptions& o) {
  try {
    const std::int64_t budget = parse_ram_budget(o.ram_budgets.front(), budget_scale(g, costs, {}));
    train::TrainingPlan plan = train::plan_training(
        g, costs, {.strategy = o.strategies.front(), .budget_bytes = budget, .time_limit_s = o.time_limit_s, .progress = !o.json});
    if (!plan.note.empty()) fmt::print(stderr, "poet: note: {}\n", plan.note);
    return plan;
  } catch (const train::NoSchedule& e) {
    fmt::print(stderr, "poet: {}\n", e.what());
    if (e.another_strategy_may_help)
      fmt::print(stderr, "poet: raise --ram-budget or choose another --strategy (poet combines recomputation and paging)\n");
    throw ExitWith{kExitNoSchedule};
  }
}

// The model trained: a zoo model, or an imported ONNX model with its weights.
struct TrainedModel {
  std::string name;  // in messages and checkpoints
  Graph graph;
  std::optional<OnnxModel> onnx;
};

TrainedModel load_model(const TrainOptions& o) {
  if (o.onnx_file.empty()) {
    if (!o.export_onnx.empty())
      throw InputError("--export-onnx writes the trained weights into the ONNX model they came from; train one with "
                       "--onnx FILE");
    return {o.model, build_model_training_graph(o.model, {.batch_size = o.batch_size}, BackwardMode::Autodiff), {}};
  }
  OnnxModel m = import_onnx_noting(o.onnx_file, {.batch_size = o.batch_size, .loss = training_loss(o.loss)});
  Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
  g.validate();
  const std::string name = "onnx:" + std::filesystem::path(o.onnx_file).filename().string();
  return {name, std::move(g), std::move(m)};
}

// What the run will write, for the room check before its first step: the page file at
// its largest, a checkpoint (a new one beside the old until it replaces it), the export
// (the ONNX model it rewrites, weights inside).
std::vector<PlannedWrite> planned_writes(const TrainOptions& o, const TrainedModel& model,
                                         const train::Trainer& trainer, const FilePager* pager,
                                         std::span<const std::uint64_t> paged_tensors) {
  std::vector<PlannedWrite> writes;
  if (pager) writes.push_back({pager->path(), FilePager::file_bytes_for(paged_tensors), "--page-file"});
  if (!o.checkpoint.empty()) {
    // A new checkpoint saved after more than one epoch is, at its second save, two files
    // (the first and its replacement); a resumed one already takes its room.
    writes.push_back({o.checkpoint, train::encode_checkpoint(trainer.checkpoint(o.model, o.data, 0)).size(),
                      "--checkpoint", !o.resume && o.epochs > 1 ? 2u : 1u});
  }
  if (!o.export_onnx.empty())
    writes.push_back({o.export_onnx, model.onnx->bytes, "--export-onnx"});
  return writes;
}

// What Ctrl-C during epoch `epoch` (from 0), or after it once `saved`, leaves, for the
// interrupt handler to print.
std::string interrupted_note(const TrainOptions& o, std::uint64_t epoch, bool saved = false) {
  const std::string where =
      fmt::format("poet: interrupted {} epoch {} of {}", saved ? "after" : "in", epoch + 1, o.epochs);
  const std::uint64_t kept = saved ? epoch + 1 : epoch;  // epochs the checkpoint holds
  if (o.checkpoint.empty())
    return where + "; nothing was saved (--checkpoint FILE saves each epoch, and --resume continues from it)";
  if (kept == 0) return fmt::format("{}; nothing was written to '{}' yet", where, o.checkpoint);
  return fmt::format("{}; '{}' holds the model after epoch {}: continue with the same command and --resume", where,
                     o.checkpoint, kept);
}

// Runs `work`, a part of epoch `epoch` (from 0), so that an error it throws (the loss
// diverged, a picture that can no longer be read, a failed page transfer, a full disk at
// the checkpoint's write) also says what the checkpoint holds: it is written only after an
// epoch that ended whole, with finite weights.
template <class Work>
auto keeping_checkpoint(const TrainOptions& o, std::uint64_t epoch, Work work) {
  if (o.checkpoint.empty()) return work();
  return extending_errors(work, [&](const std::string& what) {
    return fmt::format("{}; {}", what,
                       epoch > 0 ? fmt::format("'{}' keeps the model after epoch {}: continue from it with --resume",
                                               o.checkpoint, epoch)
                                 : fmt::format("nothing was written to '{}'", o.checkpoint));
  });
}

// What a failed export (`what`: the source moved or changed during a long run, a full
// disk) leaves: the trained weights where --resume finds them, so a rerun exports them
// without training again. Without --checkpoint they are saved beside the export.
std::string weights_kept_note(const std::string& what, const TrainOptions& o, const train::Trainer& trainer) {
  if (!o.checkpoint.empty())
    return fmt::format("{}; the trained weights are in '{}': once that is fixed, export them with the same command "
                       "and --resume (no more training)",
                       what, o.checkpoint);
  const std::string rescue = o.export_onnx + ".ckpt";
  try {
    train::check_free_for_a_new_checkpoint(rescue, o.model);
    train::save_checkpoint(rescue, trainer.checkpoint(o.model, o.data, o.epochs));
  } catch (const std::exception& e) {
    return fmt::format("{}; the trained weights could not be saved either ({})", what, e.what());
  }
  return fmt::format("{}; the trained weights are saved in '{}': once that is fixed, export them with the same "
                     "command and --checkpoint '{}' --resume (no more training)",
                     what, rescue, rescue);
}


void train(TrainOptions o) {
  if (o.resume && o.checkpoint.empty())
    throw InputError("--resume needs --checkpoint FILE: the checkpoint to continue from");
  if (!o.checkpoint.empty() && written_in_place(o.checkpoint))
    throw InputError(fmt::format(
        "--checkpoint {}: the checkpoint is replaced after each epoch and read back by --resume; give a file's path",
        o.checkpoint == "/dev/stdout" ? std::string("is stdout")
                                      : fmt::format("'{}' is a stream or device", o.checkpoint)));
  // --export-onnx may be the --onnx model itself: its weights are then trained in place. But
  // not the files beside it that hold its weights (external data), which it still names.
  std::vector<NamedFile> inputs = onnx_weights_files(o.onnx_file);
  inputs.push_back({"--platform", platform_file(o.platform)});
  if (o.dataset == "fashion-mnist")
    for (std::string& file : data::fashion_mnist_files(o.data_dir)) inputs.push_back({"--data-dir", std::move(file)});
  const std::vector<NamedFile> outputs = {
      {"--checkpoint", o.checkpoint}, {"--export-onnx", o.export_onnx}, {"--page-file", o.page_file}};
  check_files_apart(inputs, outputs);
  if (is_image_folder(o.dataset))
    check_outside_class_folders(
        {{"--dataset", o.dataset.substr(kFolderPrefix.size())}, {"--test-folder", o.test_folder}}, outputs);
  check_files_apart({{"--platform", platform_file(o.platform)}, {"--onnx", o.onnx_file}},
                    {{"--checkpoint", o.checkpoint}});
  std::optional<ExclusiveUse> one_run_per_checkpoint;
  if (!o.checkpoint.empty()) one_run_per_checkpoint.emplace(o.checkpoint, "--checkpoint");
  if (o.ram_budgets.size() > 1 || o.strategies.size() > 1)
    throw InputError("--ram-budget and --strategy take one value each when training; lists are for --report DIR, "
                     "which times every strategy at every budget");
  set_interrupt_note(fmt::format("poet: interrupted before training began (while reading the model and data, or "
                                 "making the plan); nothing was written{}",
                                 o.resume ? fmt::format(", and '{}' is as it was", o.checkpoint) : ""));
  TrainedModel model = load_model(o);
  o.model = model.name;
  train::check_batch_statistics(model.graph);
  // Before the plan is made and the data loaded: a missing or mismatched checkpoint is
  // refused at once, not after a minute's solve.
  std::optional<train::TrainingCheckpoint> resumed;
  if (o.resume) {
    resumed = train::load_checkpoint(o.checkpoint);
    train::check_resumable(*resumed, {.model = o.model,
                                      .optimizer = optimizer_named(o.optimizer),
                                      .seed = o.seed,
                                      .batch_size = static_cast<std::uint64_t>(train::labels_per_batch(model.graph))});
  } else if (!o.checkpoint.empty()) {
    train::check_free_for_a_new_checkpoint(o.checkpoint, o.model);
  }
  const Graph& g = model.graph;
  const DeviceProfile device = resolve_device(o.platform);
  const GraphCosts costs = costs_for(g, device);  // measured when the profile has nodes
  if (const std::string note = profile::thread_mismatch_note(device, o.platform); !note.empty())
    fmt::print(stderr, "poet: note: {}\n", note);
  const data::DatasetSplits data = load_dataset(o, g);
  o.data = data::identity(data);
  if (resumed)
    extending_errors([&] { train::check_same_data(*resumed, o.data); }, [&](const std::string& what) {
      // A short run's synthetic data are as many samples as its batches take.
      return o.dataset == "synthetic" ? what + "; synthetic data are as many samples as --max-batches batches take, "
                                               "so give the --max-batches it was trained with"
                                      : what;
    });

  const std::int64_t smallest_split = std::min(data.train.count(), data.test.count());
  if (train::labels_per_batch(g) > smallest_split)
    throw InputError(fmt::format("--batch-size {} is larger than {}'s {} set ({} samples; {} for training, {} for "
                                 "testing), so no batch would be {}; lower --batch-size to at most {}",
                                 o.batch_size, data.name, data.train.count() < data.test.count() ? "training" : "test",
                                 smallest_split, data.train.count(), data.test.count(),
                                 data.train.count() < data.test.count() ? "trained" : "evaluated",
                                 smallest_split / (train::labels_per_batch(g) / o.batch_size)));
  // Before planning: a model that does not fit the data (another input size) must not
  // first wait for a solve and allocate an arena of gigabytes.
  train::check_dataset_fits(g, data.train);
  train::check_dataset_fits(g, data.test);

  const train::TrainingPlan plan = plan_or_exit(g, costs, o);
  const SimulationResult& sim = plan.lowered.simulation;
  const bool pages = plan_pages(plan.lowered.plan);
  const std::int64_t arena = plan.lowered.memory.arena_bytes;
  if (!o.json) {
    fmt::print(
        "plan        {} (batch {}) by {} within {} ({} of activations): arena {}, {}, {}{}\n", g.name(),
        o.batch_size, o.strategies.front(), format_bytes_exact(plan.budget_bytes),
        format_bytes_exact(plan.budget_bytes - sim.fixed_bytes), format_bytes_exact(arena),
        counted(sim.recomputes, "recomputation"), counted(sim.pageouts, "page-out"),
        plan.detail.empty() ? "" : "; " + plan.detail);
    fmt::print("data        {}: {} training and {} test samples\n", data.name, data.train.count(), data.test.count());
    std::fflush(stdout);  // before the progress bar on stderr
  }

  std::unique_ptr<FilePager> pager;
  if (pages) {
    // A --page-file given was checked before planning; the default place is checked once
    // the plan is known to page.
    if (o.page_file.empty())
      if (const auto problem = new_file_problem(""))
        throw InputError(fmt::format("the plan pages, and its page file goes in the working folder unless --page-file "
                                     "says where, but {}: give --page-file a folder on storage you may write to",
                                     *problem));
    FilePagerOptions po;
    po.path = o.page_file;
    po.direct_io = !o.page_cache;
    pager = std::make_unique<FilePager>(po);
    if (in_memory_file_system(pager->path()))
      fmt::print(stderr, "poet: warning: the page file '{}' is on a file system kept in RAM (tmpfs): the pages stay "
                         "in this machine's memory, so paging spares none of it; give --page-file a folder on "
                         "storage (a disk, an SD card)\n",
                 pager->path());
  }
  runtime::ExecutorOptions eo;
  eo.seed = o.seed;
  eo.optimizer.kind = optimizer_named(o.optimizer);
  // Rates that train lenet5 on Fashion-MNIST well in an epoch or two; a resumed run goes on
  // at its checkpoint's, unless --lr says otherwise (a rate lowered for the last epochs).
  const float usual_rate = eo.optimizer.kind == Optimizer::Adam  ? 1e-3f
                           : eo.optimizer.kind == Optimizer::SGD ? 0.05f
                                                                 : 0.01f;
  const float resumed_rate = resumed ? resumed->learning_rate : 0.0f;
  eo.optimizer.learning_rate = o.learning_rate.value_or(resumed_rate > 0 ? resumed_rate : usual_rate);
  runtime::validate(eo.optimizer);
  eo.pager = pager.get();
  train::Trainer trainer(g, plan.lowered, eo, o.seed);
  trainer.check_dataset(data.train);
  check_room_for(planned_writes(o, model, trainer, pager.get(), paged_tensor_bytes(plan.lowered.plan, g)));
  if (model.onnx) {  // fine-tuning starts from the file's weights (a checkpoint, if resumed, replaces them)
    train::load_imported_weights(trainer.executor().parameters(), g, model.onnx->parameters);
    if (!o.json)
      fmt::print("weights     from '{}': {} trained parameters in {}\n", o.onnx_file,
                 fmt::group_digits(trainable_parameters(g)), counted(model.onnx->parameters.size(), "layer"));
    std::fflush(stdout);  // before the progress bar on stderr
  }

  std::uint64_t first_epoch = 0;
  if (resumed) {
    const train::TrainingCheckpoint& c = *resumed;
    trainer.restore(c, o.model);
    first_epoch = c.epochs_done;
    const float rate = eo.optimizer.learning_rate;
    if (!o.json)
      fmt::print("resume      from '{}' after epoch {} (step {}), at --lr {:g}{}\n", o.checkpoint, c.epochs_done,
                 c.steps_done, rate,
                 c.learning_rate == 0      ? ""
                 : c.learning_rate == rate ? " as it was trained"
                                           : fmt::format(", where it was trained at {:g}", c.learning_rate));
    if (!o.json && first_epoch >= static_cast<std::uint64_t>(o.epochs))
      fmt::print("note        the checkpoint has done {}, and --epochs asks for {}: nothing to train; raise "
                 "--epochs to train on\n",
                 counted(first_epoch, "epoch"), o.epochs);
    std::fflush(stdout);  // before an interrupt, which ends the process without flushing
  }

  nlohmann::json epochs = nlohmann::json::array();
  std::vector<double> step_seconds;
  const auto began = std::chrono::steady_clock::now();
  for (std::uint64_t epoch = first_epoch; epoch < static_cast<std::uint64_t>(o.epochs); ++epoch) {
    set_interrupt_note(interrupted_note(o, epoch));
    ProgressBar bar(fmt::format("epoch {}/{}", epoch + 1, o.epochs));
    const train::EpochResult r = keeping_checkpoint(o, epoch, [&] {
      const auto show_progress = [&bar](std::int64_t done, std::int64_t total, float loss) {
        bar.update(done, total, fmt::format("loss {:.4f}", loss));
      };
      return trainer.train_epoch(data.train, epoch, o.max_batches, show_progress);
    });
    bar.finish();
    step_seconds.insert(step_seconds.end(), r.step_seconds.begin(), r.step_seconds.end());
    const train::Evaluation test = keeping_checkpoint(o, epoch, [&] { return trainer.evaluate(data.test); });
    if (!o.checkpoint.empty()) {  // a failed write leaves the file as it was
      const DeferInterrupts file_and_note_together;
      keeping_checkpoint(o, epoch,
                         [&] { train::save_checkpoint(o.checkpoint, trainer.checkpoint(o.model, o.data, epoch + 1)); });
      // Until the next epoch starts (this one's line is still to be printed, and its reader
      // may be gone: SIGPIPE), an interrupt finds this epoch saved.
      set_interrupt_note(interrupted_note(o, epoch, true));
    }
    // A reconstruction has no classes to be right about: its measure is the loss.
    const bool classifier = training_loss(o.loss) == TrainingLoss::cross_entropy;
    nlohmann::json this_epoch = {{"epoch", epoch + 1},
                                 {"batches", r.batches},
                                 {"mean_loss", r.mean_loss},
                                 {"test_loss", test.mean_loss},
                                 {"test_samples", test.samples}};
    if (classifier) {
      this_epoch["train_accuracy"] = r.accuracy;
      this_epoch["test_accuracy"] = test.accuracy;
    }
    epochs.push_back(std::move(this_epoch));
    if (!o.json)
      fmt::print(
          "epoch {}/{}   loss {:.4f}, {} ({}), {} ({}){}\n", epoch + 1, o.epochs, r.mean_loss,
          classifier ? fmt::format("train accuracy {:.2f}%", 100 * r.accuracy) : "reconstruction",
          counted(static_cast<std::size_t>(r.batches), "batch", "batches"),
          classifier ? fmt::format("test accuracy {:.2f}%", 100 * test.accuracy)
                     : fmt::format("test loss {:.4f}", test.mean_loss),
          // The plan is for whole batches: the test set's last part batch is left out.
          test.samples < data.test.count()
              ? fmt::format("{} of {} samples, in whole batches", test.samples, data.test.count())
              : counted(static_cast<std::size_t>(test.samples), "sample"),
          o.checkpoint.empty() ? "" : fmt::format("; checkpoint '{}'", o.checkpoint));
    std::fflush(stdout);
  }
  set_interrupt_note(o.checkpoint.empty() ? ""
                                          : fmt::format("poet: interrupted after training; '{}' holds the model "
                                                        "after epoch {}",
                                                        o.checkpoint, std::max<std::uint64_t>(first_epoch, o.epochs)));
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (model.onnx && !o.export_onnx.empty()) {
    train::take_trained_weights(trainer.executor().parameters(), g, model.onnx->parameters);
    extending_errors([&] { export_onnx(*model.onnx, o.export_onnx); },
                     [&](const std::string& what) { return weights_kept_note(what, o, trainer); });
    if (!o.json) fmt::print("exported    the trained weights into '{}'\n", o.export_onnx);
  }

  const auto& executor = trainer.executor();
  // The budget holds the parameters and the activations, as the paper's does; the gradients
  // and the optimizer's state sit beside it, which the output says.
  const FixedMemory fixed = executor.parameters().bytes();
  const std::int64_t beside_budget = fixed.gradient_bytes + fixed.optimizer_state_bytes;
  const double measured = profile::summarize(step_seconds).median;
  // A step is the plan's instructions, which the simulator times, then the optimizer's update.
  const double predicted = sim.makespan_s + device.optimizer_update_s();
  const std::size_t out = pager ? pager->bytes_paged_out() : 0, in = pager ? pager->bytes_paged_in() : 0;
  if (o.json) {
    const nlohmann::json result{{"model", g.name()},
                                {"dataset", data.name},
                                {"strategy", o.strategies.front()},
                                {"platform", o.platform},
                                {"batch_size", o.batch_size},
                                {"optimizer", o.optimizer},
                                // The rate as given (0.001), not its float widened (0.0010000000474974513).
                                {"learning_rate", std::stod(fmt::format("{}", eo.optimizer.learning_rate))},
                                {"ram_budget_bytes", plan.budget_bytes},
                                {"fixed_bytes", sim.fixed_bytes},
                                {"gradient_and_optimizer_state_bytes", beside_budget},
                                {"arena_bytes", arena},
                                {"predicted_peak_activation_bytes", sim.peak_activation_bytes},
                                {"measured_peak_activation_bytes",
                                 step_seconds.empty() ? nlohmann::json() : nlohmann::json(executor.peak_live_bytes())},
                                {"recomputations", sim.recomputes},
                                {"bytes_paged_out", out},
                                {"bytes_paged_in", in},
                                {"median_step_s", step_seconds.empty() ? nlohmann::json() : nlohmann::json(measured)},
                                {"predicted_step_s", predicted},
                                {"steps", step_seconds.size()},           // this run's
                                {"steps_done", executor.steps_done()},    // with a resumed checkpoint's
                                {"wall_s", wall_s},
                                {"epochs", epochs}};
    fmt::print("{}\n", json_text(result, 2));
    return;
  }
  fmt::print("budget      {} = parameters {} + activations {}; gradients and optimizer state ({}) {} beside it\n",
             format_bytes_exact(plan.budget_bytes), format_bytes_exact(sim.fixed_bytes),
             format_bytes_exact(plan.budget_bytes - sim.fixed_bytes), o.optimizer, format_bytes_exact(beside_budget));
  fmt::print("arena       {} (static memory plan; the simulator's peak of activations is {})\n",
             format_bytes_exact(arena), format_bytes_exact(sim.peak_activation_bytes));
  if (step_seconds.empty()) {
    fmt::print("steps       none run; the simulator predicts {} a step on platform '{}'\n", format_seconds(predicted),
               o.platform);
    return;
  }
  fmt::print("measured    peak of activations {} in the arena\n", format_bytes_exact(executor.peak_live_bytes()));
  fmt::print("paged       {} out, {} in{}\n", format_bytes_exact(static_cast<std::int64_t>(out)),
             format_bytes_exact(static_cast<std::int64_t>(in)), pager ? fmt::format(" (file '{}', {})", pager->path(), pager->uses_direct_io() ? "O_DIRECT" : "page cache")
                   : "");
  fmt::print("step time   measured median {} over {}; simulator predicts {} on platform '{}'{}\n",
             format_seconds(measured), counted(step_seconds.size(), "step"), format_seconds(predicted), o.platform,
             device.nodes ? fmt::format(" ({:+.1f}%)", 100 * (measured - predicted) / predicted)
                          : fmt::format(", a FLOP model of another device; to predict this machine, profile it: "
                                        "poet profile {} -b {} --cpu-power W --storage-power W -o p.json, then "
                                        "--platform p.json",
                                        model_arguments(o.model, o.onnx_file, o.loss), o.batch_size));
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand("train", "Train a model for real under a RAM budget, by recomputation and paging");
  auto* model_option = cmd->add_option("-m,--model", o->model, "Zoo model (see 'poet models')")
                           ->capture_default_str()
                           ->type_name("MODEL");
  auto* onnx = cmd->add_option("--onnx", o->onnx_file,
                               "Fine-tune an ONNX model (torch.onnx.export; docs/ONNX.md) from its weights instead "
                               "of a zoo model")
                    ->excludes(model_option)
                    ->transform(input_file());
  add_loss_option(*cmd, o->loss, onnx);
  cmd->add_option("--export-onnx", o->export_onnx,
                  "After training, write the ONNX model with the trained weights to this file (atomically)")
      ->transform(output_file());
  cmd->add_option("--dataset", o->dataset,
                  "fashion-mnist (Debian's dataset-fashion-mnist), synthetic, or folder:PATH: a folder of PNG and "
                  "JPEG pictures with one sub-folder per class (docs/ONNX.md, \"Fine-tuning on your pictures\")")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            if (name == "fashion-mnist" || name == "synthetic") return {};
            if (is_image_folder(name) && name.size() > kFolderPrefix.size()) return {};
            return fmt::format("'{}' is not fashion-mnist, synthetic or folder:PATH (a folder of pictures)",
                               text_excerpt(name));
          },
          "fashion-mnist|synthetic|folder:PATH"));
  cmd->add_option("--test-folder", o->test_folder,
                  "With --dataset folder:PATH: a folder of the same classes to test on (default: hold out "
                  "--test-fraction of PATH)")->type_name("FOLDER");
  cmd->add_option("--test-fraction", o->test_fraction,
                  "With --dataset folder:PATH and no --test-folder: the share of each class's pictures held out for "
                  "testing, evenly spread in name order (default 0.2)")
      ->check(number_in(0, 0.99));
  cmd->add_option("--mean", o->mean,
                  "With --dataset folder:PATH: per-channel mean subtracted from the pictures' [0, 1] values "
                  "(default ImageNet's: 0.485,0.456,0.406)")
      ->delimiter(',')
      ->check(number_in(-1e3, 1e3));
  cmd->add_option("--std", o->std,
                  "With --dataset folder:PATH: per-channel standard deviation the values are divided by (default "
                  "ImageNet's: 0.229,0.224,0.225)")
      ->delimiter(',')
      ->check(number_in(1e-6, 1e3));
  auto* data_dir = cmd->add_option("--data-dir", o->data_dir, "Folder of the Fashion-MNIST IDX files")
                       ->type_name("FOLDER")
                       ->capture_default_str();
  cmd->add_option("--ram-budget", o->ram_budgets,
                  "RAM budget: bytes (3MB, 2.5MiB), or 70%: the parameters + 70% of the unconstrained activation peak "
                  "(with --report: a comma-separated list)")
      ->delimiter(',')
      ->capture_default_str()
      ->type_name("BYTES|PERCENT");
  cmd->add_option("--strategy", o->strategies,
                  "How to fit the budget: " + strategy_list() + " (with --report: a comma-separated list)")
      ->delimiter(',')
      ->capture_default_str()
      ->transform(one_of(strategy_names()));
  cmd->add_option("-p,--platform", o->platform, "Device profile the plan is made and step time predicted for")
      ->capture_default_str()
      ->transform(platform_name_or_file());
  cmd->add_option("--epochs", o->epochs, "Epochs to train (in all, counting those a resumed checkpoint did)")
      ->capture_default_str()
      ->check(number_in(1, 1e6, true));
  cmd->add_option("-b,--batch-size", o->batch_size, "Batch size")
      ->capture_default_str()
      ->check(number_in(1, kMaxBatchSize, true));
  cmd->add_option("--max-batches", o->max_batches, "At most this many batches per epoch, for short runs (0: all)")
      ->capture_default_str()
      ->check(number_in(0, 1e12, true));
  cmd->add_option("--optimizer", o->optimizer, "sgd, momentum or adam")
      ->capture_default_str()
      ->transform(one_of(optimizer_names()));
  cmd->add_option("--lr", o->learning_rate, "Learning rate (default: 0.05 sgd, 0.01 momentum, 0.001 adam)")
      ->check(number_in(1e-12, 1e6));
  cmd->add_option("--seed", o->seed, "Seed of the initial weights, the batch order and dropout")
      ->capture_default_str()
      ->check(seed_values());
  cmd->add_option("--page-file", o->page_file,
                  "Where paged tensors go: a new file, or a folder for a temporary one (default: the working folder)")
      ->type_name("FILE|FOLDER");
  cmd->add_flag("--page-cache", o->page_cache,
                "Page through the kernel's page cache instead of O_DIRECT (the cache's RAM is outside the budget)");
  cmd->add_option("--checkpoint", o->checkpoint, "Write the model to this file after each epoch (atomically)")
      ->transform(output_file());
  cmd->add_flag("--resume", o->resume, "Continue from --checkpoint");
  cmd->add_option("--time-limit", o->time_limit_s, "Wall-clock limit of the poet solve, seconds")
      ->capture_default_str()
      ->check(time_limit_seconds());
  cmd->add_flag("--json", o->json, "Print the result as JSON");
  cmd->add_option("--report", o->report_dir,
                  "Instead of training: time steps of every --strategy at every --ram-budget against the simulator's "
                  "prediction for --platform (a profile of this machine: 'poet profile'), and write DIR/prediction.md, "
                  ".json and .svg")
      ->check(output_folder());
  cmd->add_option("--report-steps", o->report_steps, "Timed steps per strategy and budget with --report")
      ->capture_default_str()
      ->check(number_in(1, 1e6, true));
  cmd->add_flag("--report-alongside", o->report_alongside,
                "With --report: predict from node times measured between the steps (one checkpoint-all step per "
                "round, timed node by node) instead of the --platform profile's, for machines whose speed drifts");
  cmd->callback([o, data_dir, cmd] {
    // What one mode reads and the other does not is refused, not ignored.
    const auto given = [cmd](const char* name) { return cmd->get_option(name)->count() > 0; };
    if (o->report_dir.empty()) {
      for (const char* name : {"--report-steps", "--report-alongside"})
        if (given(name))
          throw InputError(fmt::format("{} is for --report DIR, which times steps instead of training; leave it out "
                                       "to train, or add --report DIR",
                                       name));
    } else {
      // An entry twice would time its plans twice, in rows of one name.
      for (const auto& [name, list] :
           {std::pair{"--strategy", &o->strategies}, std::pair{"--ram-budget", &o->ram_budgets}})
        for (auto it = list->begin(); it != list->end(); ++it)
          if (std::find(std::next(it), list->end(), *it) != list->end())
            throw InputError(fmt::format("{} lists '{}' twice; give each once", name, *it));
      if (o->dataset != "synthetic" && given("--dataset"))
        throw InputError(fmt::format("--dataset {}: --report DIR trains no model, and times steps on synthetic "
                                     "batches; leave --dataset out, or drop --report to train",
                                     o->dataset));
      for (const char* name : {"--data-dir", "--test-folder", "--test-fraction", "--mean", "--std",
                               "--epochs", "--max-batches", "--optimizer", "--lr", "--checkpoint", "--resume",
                               "--export-onnx"})
        if (given(name))
          throw InputError(fmt::format("{} is for training, and --report DIR trains no model: it times steps on "
                                       "synthetic batches with the momentum update; leave {} out, or drop --report "
                                       "to train",
                                       name, name));
    }
    require_a_solver_for_time_limit(given("--time-limit"), o->strategies);
    if (data_dir->count() > 0 && o->dataset != "fashion-mnist")
      throw InputError(fmt::format("--data-dir is the folder of Fashion-MNIST's files, which --dataset {} does not "
                                   "read; leave it out{}",
                                   o->dataset,
                                   is_image_folder(o->dataset) ? "" : " (an image folder is --dataset folder:PATH)"));
    // Before the data and the plan: a page file that cannot be made is the user's to fix.
    if (!o->page_file.empty()) check_page_file_location(o->page_file);
    if (o->report_dir.empty()) return train(*o);
    run_prediction_report({.model = o->model,
                           .onnx_file = o->onnx_file,
                           .loss = o->loss,
                           .batch_size = o->batch_size,
                           .platform = o->platform,
                           .strategies = o->strategies,
                           .ram_budgets = o->ram_budgets,
                           .time_limit_s = o->time_limit_s,
                           .seed = o->seed,
                           .page_dir = o->page_file,
                           .direct_io = !o->page_cache,
                           .time_nodes_alongside = o->report_alongside,
                           .steps = o->report_steps,
                           .output_dir = o->report_dir,
                           .json = o->json});
  });
}

}  // namespace poet::cli
