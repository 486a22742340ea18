// Measured device profiles: the JSON round trip, the match against a graph, planning with
// measured costs, and a real (fast) measurement. No test asserts on how long anything took.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "poet/backward/backward.h"
#include "poet/cost/cost_model.h"
#include "poet/plan/plan.h"
#include "poet/profile/measure_device.h"
#include "poet/profile/paging_calibration.h"
#include "poet/profile/profiling.h"
#include "poet/profile/step_node_timer.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/simulate/simulator.h"
#include "poet/util/error.h"

namespace poet {
namespace {

Graph lenet(int batch = 1) { return build_model_training_graph("lenet5", {.batch_size = batch}, BackwardMode::Autodiff); }

// A profile of `g` with made-up but distinct figures: node i takes (i + 1) us and 2(i + 1) uJ.
DeviceProfile fake_profile(const Graph& g) {
  DeviceProfile d = builtin_platform("a72");
  d.name = "fake";
  d.measured_on = "a test";
  d.method = "made up";
  MeasuredNodes m;
  m.graph = g.name();
  m.batch_size = g.node(0).shape.at(0);
  m.repeats = 5;
  m.threads = 3;
  m.update_s = 7e-6;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.node(static_cast<NodeId>(i));
    const double k = static_cast<double>(i + 1);
    m.nodes.push_back({.name = n.name, .op = std::string(op_name(n.op)), .role = std::string(role_name(n.role)),
                       .shape = n.shape, .compute_time_s = k * 1e-6, .spread_s = k * 1e-8,
                       .compute_energy_j = 2 * k * 1e-6});
  }
  d.nodes = m;
  d.storage = MeasuredStorage{.path = "/tmp", .direct_io = true, .samples = {{4096, 1e-4, 1e-6, 5e-5, 2e-6, 3e-6}}};
  d.paging_cpu_per_transfer_s = 2e-6;
  d.paging_cpu_per_byte_s = 1e-10;
  return d;
}

std::string rejection(const Graph& g, const DeviceProfile& d) {
  try {
    costs_for(g, d);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ProfileJson, RoundTripsMeasuredSections) {
  const Graph g = lenet();
  const DeviceProfile d = fake_profile(g);
  const std::string path = (std::filesystem::temp_directory_path() / "poet_profile_test.json").string();
  save_device(d, path);
  const DeviceProfile back = load_device(path);
  std::filesystem::remove(path);
  EXPECT_EQ(device_to_json(back), device_to_json(d));
  ASSERT_TRUE(back.nodes && back.storage);
  EXPECT_EQ(back.nodes->nodes.size(), g.size());
  EXPECT_EQ(back.nodes->nodes[3].shape, g.node(3).shape);
  EXPECT_DOUBLE_EQ(back.nodes->nodes[3].compute_time_s, 4e-6);
  EXPECT_EQ(back.measured_on, "a test");
  EXPECT_TRUE(back.storage->direct_io);
  EXPECT_EQ(back.nodes->threads, 3);
  EXPECT_DOUBLE_EQ(back.nodes->update_s, 7e-6);
}

// Profiles written before poet recorded the kernels' threads and the update's time read as
// not saying: no threads to compare, and an update that takes nothing.
TEST(ProfileJson, ProfilesWithoutThreadsOrUpdateReadAsNotRecorded) {
  nlohmann::json j = device_to_json(fake_profile(lenet()));
  j["nodes"].erase("threads");
  j["nodes"].erase("update_s");
  EXPECT_EQ(device_from_json(j, "old.json").nodes->threads, 0);
  EXPECT_EQ(device_from_json(j, "old.json").nodes->update_s, 0);
  j["nodes"]["threads"] = -2;
  try {
    device_from_json(j, "bad.json");
    FAIL() << "accepted -2 threads";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"threads\" is -2"), std::string::npos) << e.what();
  }
}

TEST(ProfileThreads, ARunOnOtherThreadsThanTheProfileIsToldSoAndHowToMatchThem) {
  const Graph g = lenet();
  DeviceProfile d = fake_profile(g);
  d.nodes->threads = profile::compute_threads();
  EXPECT_EQ(profile::thread_mismatch_note(d, "p.json"), "");
  d.nodes->threads = 0;  // not recorded
  EXPECT_EQ(profile::thread_mismatch_note(d, "p.json"), "");
  EXPECT_EQ(profile::thread_mismatch_note(builtin_platform("m4"), "m4"), "");
  d.nodes->threads = profile::compute_threads() + 1;
  const std::string note = profile::thread_mismatch_note(d, "p.json");
  EXPECT_NE(note.find(fmt::format("profile 'p.json' timed its kernels on {} compute threads, and this run has {}",
                                  d.nodes->threads, profile::compute_threads())),
            std::string::npos)
      << note;
  EXPECT_NE(note.find(fmt::format("run with OMP_NUM_THREADS={}", d.nodes->threads)), std::string::npos) << note;
}

// Profiles written before poet measured what a transfer takes from compute read as before:
// transfers that take nothing.
TEST(ProfileJson, ProfilesWithoutPagingCpuFiguresReadAsTakingNothing) {
  nlohmann::json j = device_to_json(fake_profile(lenet()));
  EXPECT_DOUBLE_EQ(device_from_json(j, "new.json").paging_cpu_per_byte_s, 1e-10);
  EXPECT_DOUBLE_EQ(device_from_json(j, "new.json").storage->samples.at(0).compute_lost_s, 3e-6);
  j["storage"].erase("cpu_per_transfer_s");
  j["storage"].erase("cpu_per_byte_s");
  j["storage_samples"]["samples"][0].erase("compute_lost_s");
  const DeviceProfile old = device_from_json(j, "old.json");
  EXPECT_EQ(old.paging_cpu_per_transfer_s, 0);
  EXPECT_EQ(old.paging_cpu_per_byte_s, 0);
  EXPECT_EQ(old.storage->samples.at(0).compute_lost_s, 0);
  j["storage"]["cpu_per_byte_s"] = -1;
  EXPECT_THROW(device_from_json(j, "bad.json"), InputError);
}

// The calibration's factor (`storage.charge_scale`) is written and read back; a profile made
// before it was kept apart (its figures already multiplied) reads as 1.
TEST(ProfileJson, TheChargeScaleRoundTripsAndReadsAsOneWhenAbsent) {
  DeviceProfile d = fake_profile(lenet());
  d.paging_charge_scale = 2.5;
  nlohmann::json j = device_to_json(d);
  EXPECT_DOUBLE_EQ(device_from_json(j, "new.json").paging_charge_scale, 2.5);
  j["storage"].erase("charge_scale");
  EXPECT_DOUBLE_EQ(device_from_json(j, "old.json").paging_charge_scale, 1);
  j["storage"]["charge_scale"] = -1;
  EXPECT_THROW(device_from_json(j, "bad.json"), InputError);
}

TEST(ProfileJson, BuiltinPlatformsStayWithoutMeasuredSections) {
  const nlohmann::json j = device_to_json(builtin_platform("m0"));
  EXPECT_FALSE(j.contains("nodes"));
  EXPECT_FALSE(device_from_json(j, "m0").nodes.has_value());
}

TEST(ProfileJson, TruncatedNodeListIsRejected) {
  nlohmann::json j = device_to_json(fake_profile(lenet()));
  j["nodes"]["list"].erase(j["nodes"]["list"].size() - 1);
  EXPECT_THROW(device_from_json(j, "cut.json"), InputError);
}

// Hand edits that were read as written: a mistyped field dropped, no batch, a node of 9 MW.
TEST(ProfileJson, UnknownFieldsNoBatchAndImpossiblePowerAreRejected) {
  const auto refusal = [](nlohmann::json j) {
    try {
      device_from_json(j, "edited.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const nlohmann::json good = device_to_json(fake_profile(lenet()));
  EXPECT_EQ(refusal(good), "accepted");
  nlohmann::json j = good;
  j["nodes"]["update_ss"] = 0.001;
  EXPECT_NE(refusal(j).find("unknown field \"update_ss\" (did you mean \"update_s\"?)"), std::string::npos)
      << refusal(j);
  j = good;
  j["nodes"]["list"][1]["compute_time"] = 1.0;
  EXPECT_NE(refusal(j).find("nodes.list[1]: unknown field \"compute_time\""), std::string::npos) << refusal(j);
  j = good;
  j["nodes"]["batch_size"] = 0;
  EXPECT_NE(refusal(j).find("\"batch_size\" is 0"), std::string::npos) << refusal(j);
  j = good;
  j["nodes"]["list"][1]["compute_time_s"] = 108e-6;
  j["nodes"]["list"][1]["compute_energy_j"] = 1000.0;
  EXPECT_NE(refusal(j).find("is more than 1e+06 W"), std::string::npos) << refusal(j);
}

TEST(ProfileMatch, ProfileOfAnotherGraphIsRejectedNamingIt) {
  const Graph other = build_model_training_graph("mcu_cnn", {.batch_size = 1}, BackwardMode::Autodiff);
  const std::string why = rejection(lenet(), fake_profile(other));
  EXPECT_NE(why.find("it was measured for graph 'mcu_cnn' (node "), std::string::npos) << why;
  EXPECT_NE(why.find("`poet profile` and the --model, --onnx or --graph it came from, at --batch-size 1"),
            std::string::npos)
      << why;
}

// An ONNX model is named after its file: the same nodes under another graph name (a renamed
// copy) are the same costs. A chain graph cannot be profiled: the fix says so.
TEST(ProfileMatch, TheGraphsNameAloneDoesNotMatterButAChainGraphIsNamed) {
  DeviceProfile d = fake_profile(lenet());
  d.nodes->graph = "lenet5_copy";
  EXPECT_EQ(rejection(lenet(), d), "accepted");
  const Graph chain = build_model_training_graph("lenet5", {.batch_size = 1}, BackwardMode::Chain);
  EXPECT_NE(rejection(chain, fake_profile(lenet())).find("poet profile measures the --backward autodiff graph: plan "
                                                         "with --backward autodiff"),
            std::string::npos);
}

TEST(ProfileMatch, OtherBatchSizeIsRejected) {
  const std::string why = rejection(lenet(2), fake_profile(lenet(1)));
  EXPECT_NE(why.find("its batch size is 1, the graph's 2 (give --batch-size 1 to plan at the profile's batch)"),
            std::string::npos)
      << why;
}

TEST(ProfileMatch, MissingNodeIsRejectedNamingIt) {
  const Graph g = lenet();
  DeviceProfile d = fake_profile(g);
  d.nodes->nodes.pop_back();
  const std::string why = rejection(g, d);
  EXPECT_NE(why.find(fmt::format("lacks node {} '{}'", g.size() - 1, g.nodes().back().name)), std::string::npos)
      << why;
}

TEST(ProfileMatch, OtherShapeOrOpOrNameIsRejectedNamingTheNode) {
  const Graph g = lenet();
  DeviceProfile shape = fake_profile(g), op = shape, name = shape;
  shape.nodes->nodes[2].shape.back() += 1;
  op.nodes->nodes[2].op = "tanh";
  name.nodes->nodes[2].name = "renamed";
  for (const DeviceProfile* d : {&shape, &op, &name}) {
    const std::string why = rejection(g, *d);
    EXPECT_NE(why.find(fmt::format("node 2 '{}'", g.node(2).name)), std::string::npos) << why;
  }
  EXPECT_NE(rejection(g, shape).find(shape_string(g.node(2).shape)), std::string::npos);
}

TEST(ProfilePlanning, MeasuredCostsReplaceTheFlopModelPerNode) {
  const Graph g = lenet();
  const DeviceProfile d = fake_profile(g);
  const GraphCosts measured = costs_for(g, d), flops = estimate_costs(g, d);
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_DOUBLE_EQ(measured.nodes[i].compute_time_s, d.nodes->nodes[i].compute_time_s);
    EXPECT_DOUBLE_EQ(measured.nodes[i].pagein_time_s, flops.nodes[i].pagein_time_s);  // paging is per byte
  }
  DeviceProfile plain = d;
  plain.nodes.reset();
  EXPECT_DOUBLE_EQ(costs_for(g, plain).total_compute_time_s, flops.total_compute_time_s);
}

TEST(ProfilePlanning, DoubledNodeCostsDoubleThePredictedComputeTimeAndEnergy) {
  const Graph g = lenet();
  const DeviceProfile once = fake_profile(g);
  DeviceProfile twice = once;
  for (MeasuredNode& n : twice.nodes->nodes) n.compute_time_s *= 2, n.compute_energy_j *= 2;
  const Plan plan = plan_from_schedule(checkpoint_all_schedule(g), g);
  const SimulationResult a = simulate(g, costs_for(g, once), plan), b = simulate(g, costs_for(g, twice), plan);
  ASSERT_GT(a.compute_time_s, 0);
  EXPECT_DOUBLE_EQ(b.compute_time_s, 2 * a.compute_time_s);
  EXPECT_DOUBLE_EQ(b.makespan_s, 2 * a.makespan_s);
  EXPECT_DOUBLE_EQ(b.compute_energy_j, 2 * a.compute_energy_j);
}

TEST(ProfileMeasure, TinyGraphGetsOnePositiveEntryPerNode) {
  const Graph g = lenet();
  profile::MeasureOptions o;
  o.name = "test-machine";
  o.nodes = {.warmup = 1, .repeats = 3};
  o.storage.directory = std::filesystem::temp_directory_path().string();
  o.storage.repeats = 2;
  o.storage.direct_io = true;
  o.use_rapl = false;
  o.cpu_power_w = 10;
  o.storage_power_w = 2;
  const DeviceProfile d = profile::measure_device(g, o);
  ASSERT_TRUE(d.nodes.has_value());
  ASSERT_EQ(d.nodes->nodes.size(), g.size());
  for (const MeasuredNode& n : d.nodes->nodes) {
    EXPECT_GT(n.compute_time_s, 0) << n.name;
    EXPECT_DOUBLE_EQ(n.compute_energy_j, n.compute_time_s * 10) << n.name;
  }
  ASSERT_TRUE(d.storage.has_value());
  EXPECT_FALSE(d.storage->samples.empty());
  EXPECT_GT(d.pagein_bytes_per_s, 0);
  EXPECT_NO_THROW(costs_for(g, d));
  EXPECT_NO_THROW(device_from_json(device_to_json(d), "measured"));
  EXPECT_EQ(d.nodes->threads, profile::compute_threads());
  EXPECT_GT(d.nodes->update_s, 0);
}

TEST(PagingCalibration, TheScaleChargesWhatThePredictionLeftOut) {
  // Measured 3 ms over checkpoint-all, predicted 2 ms of which 1 ms charged: the other
  // 1 ms predicted stays, so the charge must cover 2 ms.
  EXPECT_DOUBLE_EQ(profile::charge_scale(3e-3, 2e-3, 1e-3), 2);
  EXPECT_DOUBLE_EQ(profile::charge_scale(7.36e-3, 5.02e-3, 5.02e-3), 7.36 / 5.02);
  EXPECT_DOUBLE_EQ(profile::charge_scale(0.5e-3, 2e-3, 1e-3), 0);  // faster than even the uncharged part
  EXPECT_DOUBLE_EQ(profile::charge_scale(3e-3, 2e-3, 0), 1);       // nothing charged: nothing to scale
  // Next to nothing charged (a 1 MiB tmpfs measured 277 ns against 3.71 ms in real steps):
  // the most a profile holds, not a profile its own reader refuses.
  EXPECT_DOUBLE_EQ(profile::charge_scale(3.71e-3, 3.49e-6, 277e-9), kMaxPagingChargeScale);
}

TEST(PagingCalibration, RunsAPlanThatPagesBesideCheckpointAll) {
  const Graph g = lenet(8);
  DeviceProfile d = fake_profile(g);
  d.pageout_latency_s = d.pagein_latency_s = 1e-6;  // transfers quick enough for Capuchin to page
  d.pageout_bytes_per_s = d.pagein_bytes_per_s = 1e10;
  const profile::NodeTimingOptions steps{.warmup = 1, .repeats = 3};
  profile::StorageTimingOptions storage;
  storage.directory = std::filesystem::temp_directory_path().string();
  const std::optional<profile::PagingCalibration> c = profile::calibrate_paging_charge(g, d, steps, storage);
  ASSERT_TRUE(c.has_value());
  EXPECT_NE(c->plan.find("Capuchin at"), std::string::npos) << c->plan;
  EXPECT_GE(c->transfers, 2);  // a page-out and its page-in at least
  EXPECT_GT(c->bytes, 0);
  EXPECT_EQ(c->pairs, steps.repeats);
  EXPECT_GT(c->charged_s, 0);
  EXPECT_GE(c->scale, 0);
  EXPECT_DOUBLE_EQ(c->scale, profile::charge_scale(c->measured_extra_s, c->predicted_extra_s, c->charged_s));
  // A profile calibrated before is calibrated afresh: the charge is the storage phase's.
  d.paging_charge_scale = 5;
  const std::optional<profile::PagingCalibration> again = profile::calibrate_paging_charge(g, d, steps, storage);
  ASSERT_TRUE(again.has_value());
  EXPECT_DOUBLE_EQ(again->charged_s, c->charged_s);
  EXPECT_DOUBLE_EQ(again->predicted_extra_s, c->predicted_extra_s);
}

TEST(StepNodeTimer, EveryStepComputesTheSameLossAndTimesEveryNode) {
  const Graph g = lenet(4);
  profile::StepNodeTimer timer(g);
  std::vector<std::vector<double>> samples(g.size());
  std::vector<double> updates;
  const float first = timer.time_step(samples, &updates);
  // An SGD step changes the weights, so the same loss again means they were put back.
  const float second = timer.time_step(samples, &updates);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(first), std::bit_cast<std::uint32_t>(second));
  EXPECT_EQ(updates.size(), 2u);
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const std::vector<double>& s = samples[static_cast<std::size_t>(v)];
    ASSERT_EQ(s.size(), 2u) << g.node(v).name;
    EXPECT_GT(s[0], 0) << g.node(v).name;
    EXPECT_GT(s[1], 0) << g.node(v).name;
  }
  EXPECT_GT(timer.bytes_held(), 0);
}

TEST(ProfileMeasure, MissingPowerFigureIsAskedForBeforeMeasuring) {
  profile::MeasureOptions o;
  o.name = "x";
  o.use_rapl = false;
  o.storage_power_w = 1;
  try {
    profile::measure_device(lenet(), o);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--cpu-power"), std::string::npos) << e.what();
  }
}

// Nodes of 1, 2 and 1 ms, each stretched by 4 ms in two of six steps, one node a step: the
// medians sum to 4 ms, yet every step took 8 ms. The node times keep their shares and sum
// to 8 ms.
TEST(ProfileMeasure, NodeTimesSumToTheMedianStep) {
  std::vector<std::vector<double>> samples = {std::vector<double>(6, 1e-3), std::vector<double>(6, 2e-3),
                                              std::vector<double>(6, 1e-3)};
  for (std::size_t k = 0; k < 6; ++k) samples[k % 3][k] += 4e-3;
  const std::vector<profile::SampleSummary> nodes = profile::summarize_step_nodes(samples);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_NEAR(nodes[0].median + nodes[1].median + nodes[2].median, 8e-3, 1e-12);
  EXPECT_NEAR(nodes[1].median, 2 * nodes[0].median, 1e-12);
  EXPECT_NEAR(nodes[0].median, nodes[2].median, 1e-12);
  // A node never timed (no samples) stays at 0; steady times stay as they are.
  const std::vector<profile::SampleSummary> steady =
      profile::summarize_step_nodes({{}, {1e-3, 1e-3, 1e-3}, {2e-3, 2e-3, 2e-3}});
  EXPECT_EQ(steady[0].median, 0);
  EXPECT_NEAR(steady[1].median, 1e-3, 1e-15);
  EXPECT_NEAR(steady[2].median, 2e-3, 1e-15);
}

TEST(ProfileMeasure, TransferFitRecoversLatencyAndThroughput) {
  const std::vector<std::int64_t> bytes = {1000, 2000, 4000};
  const std::vector<double> seconds = {1e-3 + 1000 / 1e6, 1e-3 + 2000 / 1e6, 1e-3 + 4000 / 1e6};
  const profile::TransferFit fit = profile::fit_transfers(bytes, seconds);
  EXPECT_NEAR(fit.latency_s, 1e-3, 1e-9);
  EXPECT_NEAR(fit.bytes_per_s, 1e6, 1e-3);
}

// This VM's O_DIRECT page-ins (docs/profiles/resnet18_cifar.json): 60-100 us for every
// size up to 16 KiB, 416 us at 512 KiB. The fit keeps both ends.
TEST(ProfileMeasure, TransferFitKeepsTheLatencyOfSmallTransfers) {
  const std::vector<std::int64_t> bytes = {128, 512, 4096, 16384, 98304, 524288};
  const std::vector<double> seconds = {95.7e-6, 62.8e-6, 63.8e-6, 104.6e-6, 181.2e-6, 416.1e-6};
  const profile::TransferFit fit = profile::fit_transfers(bytes, seconds);
  EXPECT_GT(fit.latency_s, 50e-6);
  EXPECT_LT(fit.latency_s, 100e-6);
  // The largest transfer is still predicted within 25%.
  const double largest = fit.latency_s + 524288 / fit.bytes_per_s;
  EXPECT_NEAR(largest, 416.1e-6, 0.25 * 416.1e-6);
}

// Seen on this VM while other processes wrote to its disk: 3.9 ms for every page-out,
// 128 B to 512 KiB. All of it is latency; a fit of 0 + 134 MiB/s (the old fallback) put a
// small page-out at a microsecond.
TEST(ProfileMeasure, TransferTimesThatDoNotGrowWithSizeAreLatency) {
  const std::vector<std::int64_t> bytes = {128, 512, 4096, 16384, 98304, 524288};
  const std::vector<double> seconds = {3.9e-3, 3.9e-3, 3.9e-3, 3.9e-3, 3.88e-3, 3.74e-3};
  const profile::TransferFit fit = profile::fit_transfers(bytes, seconds);
  EXPECT_NEAR(fit.latency_s, 3.87e-3, 0.03e-3);
  EXPECT_LT(524288 / fit.bytes_per_s, 1e-6);
}

TEST(ProfileMeasure, PagingCpuFitRecoversPerTransferAndPerByteAndClampsNoise) {
  const std::vector<std::int64_t> bytes = {1000, 2000, 4000};
  const profile::PagingCpuFit exact = profile::fit_paging_cpu(bytes, {1e-5 + 1000e-9, 1e-5 + 2000e-9, 1e-5 + 4000e-9});
  EXPECT_NEAR(exact.per_transfer_s, 1e-5, 1e-12);
  EXPECT_NEAR(exact.per_byte_s, 1e-9, 1e-15);
  const profile::PagingCpuFit flat = profile::fit_paging_cpu(bytes, {3e-6, 1e-6, 2e-6});  // no growth: per transfer
  EXPECT_NEAR(flat.per_transfer_s, 2e-6, 1e-12);
  EXPECT_EQ(flat.per_byte_s, 0);
  const profile::PagingCpuFit none = profile::fit_paging_cpu(bytes, {0, 0, 0});  // nothing taken (or noise)
  EXPECT_EQ(none.per_transfer_s, 0);
  EXPECT_EQ(none.per_byte_s, 0);
  const profile::PagingCpuFit steep = profile::fit_paging_cpu(bytes, {0, 1e-6, 3e-6});  // negative intercept
  EXPECT_EQ(steep.per_transfer_s, 0);
  EXPECT_GT(steep.per_byte_s, 0);
}

}  // namespace
}  // namespace poet
