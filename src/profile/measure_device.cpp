#include "poet/profile/measure_device.h"

#include <fmt/format.h>
#include <omp.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include "poet/profile/paging_calibration.h"
#include "poet/profile/rapl.h"
#include "poet/runtime/node_runner.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet::profile {
namespace {

// x86 says "model name"; ARM boards say "Model" (a Raspberry Pi) or only "Hardware".
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, fallback;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon), value = line.substr(colon + 1);
    key.erase(key.find_last_not_of(" \t") + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (key == "model name") return value;
    if ((key == "Model" || key == "Hardware") && fallback.empty()) fallback = value;
  }
  return fallback.empty() ? "unknown CPU" : fallback;
}

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

void check_power(std::optional<double> w, const char* option, bool zero_allowed) {
  if (w && !((*w > 0 || (zero_allowed && *w == 0)) && std::isfinite(*w)))
    throw InputError(fmt::format("{} is {}; give the active power in watts, a {} number", option, *w,
                                 zero_allowed ? "non-negative" : "positive"));
}

}  // namespace

std::string blas_threads() {
  const char* n = std::getenv("OMP_NUM_THREADS");
  return n ? fmt::format("OMP_NUM_THREADS={}", n) : "OMP_NUM_THREADS unset (the GEMM uses every core)";
}

int compute_threads() { return omp_get_max_threads(); }

std::string thread_mismatch_note(const DeviceProfile& device, std::string_view platform) {
  const int measured = device.nodes ? device.nodes->threads : 0;
  const int here = compute_threads();
  if (measured == 0 || measured == here) return {};
  return fmt::format("profile '{}' timed its kernels on {} compute thread{}, and this run has {} with {}: its node "
                     "times and paging charge are not this run's, so predicted step times will be off; profile "
                     "again with the same OMP_NUM_THREADS, or run with OMP_NUM_THREADS={}",
                     platform, measured, measured == 1 ? "" : "s", here, blas_threads(), measured);
}

std::string describe_this_machine() {
  char host[256] = "unknown host";
  ::gethostname(host, sizeof host - 1);
  utsname u{};
  ::uname(&u);
  return fmt::format("{}, {}, {} hardware threads, {} {} {}, {}", host, cpu_model(),
                     std::thread::hardware_concurrency(), u.sysname, u.release, u.machine, utc_date());
}

DeviceProfile measure_device(const Graph& g, const MeasureOptions& options,
                             const std::function<void(std::string_view)>& log) {
  const auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  // Progress "  <what> k/n" about every tenth of the way, and at the end.
  const auto about_every_tenth = [&say](const char* what) {
    return [&say, what, reported = 0](int done, int total) mutable {
      if (done * 10 / total < reported && done != total) return;
      reported = done * 10 / total + 1;
      say(fmt::format("  {} {}/{}", what, done, total));
    };
  };
  check_power(options.cpu_power_w, "--cpu-power", false);
  check_power(options.storage_power_w, "--storage-power", true);
  std::string no_rapl = "RAPL not used (disabled)";
  std::optional<RaplMeter> rapl = options.use_rapl ? RaplMeter::open(no_rapl) : std::nullopt;
  if (!rapl && !options.cpu_power_w)
    throw InputError(fmt::format("no CPU energy meter: {}; give --cpu-power W, the CPU's active power while "
                                 "training (from a USB power meter or the data sheet), to derive energy as time x power",
                                 no_rapl));
  if (!options.storage_power_w)
    throw InputError("no storage energy meter exists; give --storage-power W, the power the storage draws while "
                     "paging (the SD card's or eMMC's data sheet, or a power meter), or 0 to ignore paging energy");

  StepTimes timings;
  double elapsed = 0, joules = 0;  // of the timed steps
  {  // the timer's executor goes before the storage phase's load takes its own memory
    StepNodeTimer timer(g);
    say(fmt::format("profiling {} nodes of '{}' in training steps ({} of activations and parameters held)", g.size(),
                    g.name(), format_bytes(static_cast<double>(timer.bytes_held()))));
    const auto started = std::chrono::steady_clock::now();
    const double joules_before = rapl ? rapl->joules() : 0;
    timings = time_nodes(timer, options.nodes, about_every_tenth("step"));
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    joules = rapl ? rapl->joules() - joules_before : 0;
  }
  const double cpu_power = rapl ? joules / elapsed : *options.cpu_power_w;

  DeviceProfile d;
  d.name = options.name;
  d.measured_on = describe_this_machine();
  MeasuredNodes nodes;
  nodes.graph = g.name();
  nodes.repeats = options.nodes.repeats;
  nodes.threads = compute_threads();
  nodes.update_s = timings.update.median;
  for (const Node& n : g.nodes())
    if (n.op == OpKind::Input) nodes.batch_size = n.shape.empty() ? 0 : n.shape.front();
  double total_time = 0, total_energy = 0;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const Node& n = g.node(v);
    const NodeTiming& t = timings.nodes[static_cast<std::size_t>(v)];
    nodes.nodes.push_back({.name = n.name, .op = std::string(op_name(n.op)), .role = std::string(role_name(n.role)),
                           .shape = n.shape, .compute_time_s = t.seconds.median, .spread_s = t.seconds.spread,
                           .compute_energy_j = t.seconds.median * cpu_power});
    total_time += t.seconds.median;
    total_energy += nodes.nodes.back().compute_energy_j;
  }
  d.nodes = std::move(nodes);
  // The FLOP-model figures, for graphs other than this one: this graph's average rates.
  const double flops = std::max(g.total_flops(), 1.0);
  d.flops_per_second = flops / std::max(total_time, 1e-12);
  d.flops_per_joule = flops / std::max(total_energy, 1e-12);
  d.compute_power_w = cpu_power;
  say(fmt::format("compute: {} per training step, {}, {:.3g} GFLOP/s on average", format_seconds(total_time),
                  format_joules(total_energy), d.flops_per_second * 1e-9));

  const std::vector<std::int64_t> sizes = storage_sizes(g);
  say(fmt::format("storage: {} tensor sizes, {} to {}, in {}", sizes.size(),
                  format_bytes(static_cast<double>(sizes.front())), format_bytes(static_cast<double>(sizes.back())),
                  options.storage.directory));
  StorageTimingOptions storage_options = options.storage;
  // The transfers are timed while the graph's slowest kernel runs on the CPU, again and
  // again for about a step's compute time: a step's transfers run beside its heavy kernels,
  // which use every core, not beside the small ones that leave a core idle (a pass over every
  // node as the load under-charged paging 2-3x at 2 threads, docs/PROFILING.md).
  NodeId slowest = 0;
  const auto median_s = [&](NodeId v) { return timings.nodes[static_cast<std::size_t>(v)].seconds.median; };
  for (NodeId v = 1; v < static_cast<NodeId>(g.size()); ++v)
    if (median_s(v) > median_s(slowest)) slowest = v;
  const int runs = static_cast<int>(std::ceil(total_time / std::max(median_s(slowest), 1e-9)));
  runtime::NodeRunner runner(g);
  storage_options.compute_load = [&runner, slowest, runs] {
    for (int r = 0; r < runs; ++r) runner.run(slowest);
  };
  const StorageTiming storage = time_storage(sizes, storage_options, [&](const StorageSample& s) {
    say(fmt::format("  {}: page-out {} (spread {}), page-in {} (spread {}), {} of compute taken per transfer",
                    format_bytes(static_cast<double>(s.bytes)), format_seconds(s.pageout_s),
                    format_seconds(s.pageout_spread_s), format_seconds(s.pagein_s), format_seconds(s.pagein_spread_s),
                    format_seconds(s.compute_lost_s)));
  });
  d.pageout_latency_s = storage.pageout.latency_s;
  d.pageout_bytes_per_s = storage.pageout.bytes_per_s;
  d.pagein_latency_s = storage.pagein.latency_s;
  d.pagein_bytes_per_s = storage.pagein.bytes_per_s;
  d.paging_cpu_per_transfer_s = storage.cpu.per_transfer_s;
  d.paging_cpu_per_byte_s = storage.cpu.per_byte_s;
  d.memory_power_w = *options.storage_power_w;
  d.storage = storage.measured;
  // A throughput the fit could not see (times that do not grow with size) is said so, not
  // printed as hundreds of TiB/s.
  const auto per_byte = [](double bytes_per_s) {
    return bytes_per_s >= kUnmeasurableBytesPerSecond
               ? std::string(" (no time per byte seen: the sizes timed took alike)")
               : fmt::format(" + {}/s", format_bytes(bytes_per_s));
  };
  say(fmt::format("storage: page-out {}{}, page-in {}{}; {}; a transfer takes {} + {}/MiB of compute with {}",
                  format_seconds(d.pageout_latency_s), per_byte(d.pageout_bytes_per_s),
                  format_seconds(d.pagein_latency_s), per_byte(d.pagein_bytes_per_s), storage.cache,
                  format_seconds(d.paging_cpu_per_transfer_s), format_seconds(d.paging_cpu_per_byte_s * (1 << 20)),
                  blas_threads()));

  // The charge's level from real steps of a plan that pages; its split between per transfer
  // and per byte stays the storage phase's.
  say("paging: timing real steps of a plan that pages against checkpoint-all's");
  const std::optional<PagingCalibration> calibration =
      calibrate_paging_charge(g, d, options.nodes, options.storage, about_every_tenth("pair"));
  std::string calibrated = "no plan of this graph pages, so the charge is the storage phase's";
  if (calibration) {
    const PagingCalibration& c = *calibration;
    d.paging_charge_scale = c.scale;
    calibrated = fmt::format(
        "{} ({} transfers, {} a step): its steps took {} {} than checkpoint-all's (median of {} pairs), the "
        "simulator said {} of which {} charged, so {}{}",
        c.plan, c.transfers, format_bytes(static_cast<double>(c.bytes)), format_seconds(std::abs(c.measured_extra_s)),
        c.measured_extra_s < 0 ? "less" : "more",
        c.pairs, format_seconds(c.predicted_extra_s), format_seconds(c.charged_s),
        c.scale > 0 ? fmt::format("the charge is multiplied by {:.3g}", c.scale)
                    : std::string("the charge is dropped: the steps showed no compute taken by paging"),
        c.scale < kMaxPagingChargeScale ? ""
                                        : " (the most a profile holds: the storage phase measured next to no compute "
                                          "per transfer, so paging plans will run slower than predicted; profile "
                                          "again, with --page-dir on the storage training pages to)");
  }
  say(fmt::format("paging: {}; a transfer takes {} + {}/MiB of the kernels' compute and {} + {}/MiB of a step in all",
                  calibrated, format_seconds(d.paging_cpu_per_transfer_s),
                  format_seconds(d.paging_cpu_per_byte_s * (1 << 20)),
                  format_seconds(d.paging_cpu_per_transfer_s * d.paging_charge_scale),
                  format_seconds(d.paging_cpu_per_byte_s * (1 << 20) * d.paging_charge_scale)));

  d.description = fmt::format("measured by poet profile: '{}' at batch size {}", g.name(), d.nodes->batch_size);
  d.sources = "poet profile (docs/PROFILING.md)";
  d.method = fmt::format(
      "compute: each node's kernel timed inside training steps of the checkpoint-all plan through the runtime, "
      "{} warm-up steps, median and interquartile range of {} timed steps, {}; compute energy: {}; storage: a FilePager file in {}, page-out "
      "and page-in of {} tensor sizes ({} timed rounds after one warm-up, each transfer waited for, while the graph's "
      "slowest kernel runs on another thread, as in a step), latency and "
      "throughput fitted by least squares of the relative error; compute a transfer takes: the load's median "
      "time beside each size's transfers against alone just before, the median of {} such pairs, per transfer, "
      "fitted by least squares, then scaled to real steps: {}; page cache: {}; storage energy: transfer time x {} W (--storage-power)",
      options.nodes.warmup, options.nodes.repeats, blas_threads(),
      rapl ? fmt::format("RAPL package counters ({}), {:.3g} W on average over the node timings, x each node's median "
                         "time",
                         rapl->describe(), cpu_power)
           : fmt::format("median time x {} W (--cpu-power; {})", cpu_power, no_rapl),
      options.storage.directory, sizes.size(), options.storage.repeats, kLoadPairsPerSize, calibrated, storage.cache,
      d.memory_power_w);
  d.validate();
  return d;
}

}  // namespace poet::profile
