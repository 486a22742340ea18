// poet firmware's outputs: the model header the firmware is compiled with, and the data
// records it reads (train/firmware_export.h).
#include "poet/train/firmware_export.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "poet/backward/backward.h"
#include "poet/cost/cost_model.h"
#include "poet/cost/device.h"
#include "poet/data/batches.h"
#include "poet/data/synthetic_dataset.h"
#include "poet/graph/graph_json.h"
#include "poet/lower/lower.h"
#include "poet/runtime/parameters.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/train/imported_weights.h"
#include "poet/util/error.h"
#include "onnx_builder.h"

namespace poet {
namespace {

DevicePlan device_plan_of(const Graph& g) {
  const LoweredPlan l = lower(g, costs_for(g, builtin_platform("m4")), checkpoint_all_schedule(g));
  return make_device_plan(l.plan, l.buffers, l.memory, g.size());
}

TEST(FirmwareExport, HeaderHoldsEveryNodeTheArenaAndTheExactInitialWeights) {
  const Graph g = build_model_training_graph("mcu_cnn", {.batch_size = 2}, BackwardMode::Autodiff);
  const DevicePlan plan = device_plan_of(g);
  const std::string h = train::firmware_model_header(g, plan, {.seed = 3, .learning_rate = 0.5f});
  EXPECT_NE(h.find(fmt::format("#define FW_NODE_COUNT {}\n", g.size())), std::string::npos);
  EXPECT_NE(h.find(fmt::format("#define FW_ARENA_BYTES {}\n", plan.arena_bytes)), std::string::npos);
  EXPECT_NE(h.find("#define FW_BATCH 2\n"), std::string::npos);
  EXPECT_NE(h.find("#define FW_LEARNING_RATE 0x1p-1f\n"), std::string::npos);
  for (const Node& n : g.nodes()) EXPECT_NE(h.find(" " + n.name + " */ {"), std::string::npos) << n.name;
  // The first and last initial parameters, as hex floats: exact.
  const runtime::ParameterStore p(g, 0, 3);
  EXPECT_NE(h.find(fmt::format("  {:a}f,", p.all_values().front())), std::string::npos);
  EXPECT_NE(h.find(fmt::format(" {:a}f \\\n}}", p.all_values().back())), std::string::npos);
}

// `firmware --onnx` starts from the file's weights, as `train --onnx` does (it started from
// the seed's, without a word).
TEST(FirmwareExport, AnImportedModelStartsFromItsOwnWeights) {
  using namespace testing::onnx_builder;
  // conv 3x3 -> relu -> flatten -> linear: operators the firmware has kernels for.
  const std::string path = write_model("firmware_cnn", {1, 1, 4, 4}, {1, 3}, [](auto& g) {
    add_initializer(g, "w", {2, 1, 3, 3}, 0.25f);
    add_initializer(g, "fc_w", {3, 32}, -0.125f);
    add_initializer(g, "fc_b", {3}, 0.5f);
    add_ints_attribute(add_node(g, "conv", "Conv", {"x", "w"}, "c"), "pads", {1, 1, 1, 1});
    add_node(g, "relu", "Relu", {"c"}, "r");
    add_node(g, "flat", "Flatten", {"r"}, "f");
    auto* fc = add_node(g, "fc", "Gemm", {"f", "fc_w", "fc_b"}, "y");
    auto* transposed = fc->add_attribute();
    transposed->set_name("transB");
    transposed->set_type(::onnx::AttributeProto::INT);
    transposed->set_i(1);
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  const Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
  const std::string h =
      train::firmware_model_header(g, device_plan_of(g), {.seed = 3, .imported = &m.parameters, .weights_from = path});
  EXPECT_NE(h.find("its initial parameters\n   (the weights of '" + path + "')"), std::string::npos) << h.substr(0, 300);
  runtime::ParameterStore expected(g, 0, 3);
  train::load_imported_weights(expected, g, m.parameters);
  ASSERT_NE(expected.all_values().front(), runtime::ParameterStore(g, 0, 3).all_values().front());
  EXPECT_NE(h.find(fmt::format("  {:a}f,", expected.all_values().front())), std::string::npos);
  EXPECT_NE(h.find(fmt::format(" {:a}f \\\n}}", expected.all_values().back())), std::string::npos);
}

// Names come from files of any origin (an ONNX model's nodes): none may end the comment or
// the string that holds it, and so write code into the firmware.
TEST(FirmwareExport, NamesCannotWriteCodeIntoTheHeader) {
  nlohmann::json j = graph_to_json(build_model_training_graph("mcu_cnn", {.batch_size = 2}, BackwardMode::Autodiff));
  j["name"] = "m\"; int evil; \"";
  j["nodes"][1]["name"] = "conv */ int evil; /*\nnext";
  const Graph g = graph_from_json(j, "a hostile graph");
  const std::string h = train::firmware_model_header(g, device_plan_of(g), {});
  EXPECT_NE(h.find("#define FW_MODEL_NAME \"m\\\"; int evil; \\\"\"\n"), std::string::npos);
  EXPECT_NE(h.find("/*  1 conv *\\/ int evil; /*\\nnext */ {"), std::string::npos);
  EXPECT_NE(h.find("for model 'm\"; int evil; \"': the training graph"), std::string::npos);
}

TEST(FirmwareExport, RefusesOperatorsWithoutFirmwareKernelsAndPlansOfAnotherGraph) {
  const Graph resnet = build_model_training_graph("resnet18_cifar", {.batch_size = 1}, BackwardMode::Autodiff);
  try {
    train::firmware_model_header(resnet, device_plan_of(resnet), {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the firmware has no kernel for op 'batch_norm"), std::string::npos)
        << e.what();
  }
  const Graph small = build_model_training_graph("mcu_cnn", {.batch_size = 1}, BackwardMode::Autodiff);
  const Graph lenet = build_model_training_graph("lenet5", {.batch_size = 1}, BackwardMode::Autodiff);
  try {
    train::firmware_model_header(small, device_plan_of(lenet), {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("same --model and --batch-size"), std::string::npos) << e.what();
  }
}

TEST(FirmwareExport, DataRecordsAreTheTrainersBatchesAsBytes) {
  // Pixels normalised as Fashion-MNIST's: bytes / 255 - mean.
  const float mean = 0.286f;
  data::Dataset d;
  d.sample_shape = {1, 2, 2};
  d.classes = 3;
  for (int s = 0; s < 5; ++s) {
    d.labels.push_back(s % 3);
    for (int k = 0; k < 4; ++k) d.inputs.push_back(static_cast<float>(s * 40 + k * 7) / 255.0f - mean);
  }
  const std::string records = train::firmware_data_records(d, 4, true, 9, mean);
  ASSERT_EQ(records.size(), 4u * 5u);
  const std::vector<std::int64_t> order = data::shuffled_order(5, 9, 0);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto s = static_cast<std::size_t>(order[i]);
    EXPECT_EQ(records[i * 5], static_cast<char>(d.labels[s]));
    for (std::size_t k = 0; k < 4; ++k)
      EXPECT_EQ(static_cast<float>(static_cast<std::uint8_t>(records[i * 5 + 1 + k])) / 255.0f - mean,
                d.inputs[s * 4 + k]);
  }
  EXPECT_THROW(train::firmware_data_records(d, 6, false, 0, mean), InputError);
  d.inputs[0] = 0.5f;  // not a byte's value: refused rather than rounded
  EXPECT_THROW(train::firmware_data_records(d, 1, false, 0, mean), InternalError);
}

}  // namespace
}  // namespace poet
