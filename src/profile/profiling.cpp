#include "poet/profile/profiling.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <iterator>
#include <exception>
#include <set>
#include <stop_token>
#include <mutex>
#include <thread>
#include <utility>

#include "poet/paging/file_pager.h"
#include "poet/util/error.h"

namespace poet::profile {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Linear interpolation between order statistics of sorted samples.
double percentile(const std::vector<double>& sorted, double p) {
  const double at = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - static_cast<double>(lo));
}

// Pushes the page file's pages out of the page cache, so the page-in that follows reads
// the device. Returns false where the system will not say it did.
bool drop_cached_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // Dirty pages are not dropped, so they are written back first.
  const bool ok = ::fdatasync(fd) == 0 && ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return ok;
}

// Runs `work` over and over on its own thread from construction to finish() (or
// destruction), passing on what it throws at finish(), and keeps when each run began and
// ended.
class BackgroundLoad {
 public:
  explicit BackgroundLoad(std::function<void()> work) {
    if (!work) return;
    thread_ = std::jthread([this, work = std::move(work)](std::stop_token stop) {
      try {
        while (!stop.stop_requested()) {
          const Clock::time_point began = Clock::now();
          work();
          std::lock_guard lock(mutex_);
          runs_.push_back({began, Clock::now()});
        }
      } catch (...) {
        failure_ = std::current_exception();
        failed_.test_and_set();
      }
    });
  }
  bool running() const { return thread_.joinable(); }
  // Waits until `count` runs began after `since` and ended (or the load failed).
  void wait_for_runs_since(Clock::time_point since, int count) const {
    while (static_cast<int>(durations_within(since, Clock::time_point::max()).size()) < count && !failed_.test())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The durations of the runs that began and ended within [from, to].
  std::vector<double> durations_within(Clock::time_point from, Clock::time_point to) const {
    std::lock_guard lock(mutex_);
    std::vector<double> out;
    for (const auto& [began, ended] : runs_)
      if (began >= from && ended <= to) out.push_back(std::chrono::duration<double>(ended - began).count());
    return out;
  }
  void finish() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> runs_;
  std::exception_ptr failure_;
  std::atomic_flag failed_;
  std::jthread thread_;  // last: joined (by its destructor) before the rest goes
};

}  // namespace

SampleSummary summarize(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  return {percentile(samples, 0.5), percentile(samples, 0.75) - percentile(samples, 0.25)};
}

std::vector<SampleSummary> summarize_step_nodes(std::vector<std::vector<double>> samples) {
  std::vector<double> step_sums;
  for (const std::vector<double>& node : samples) {
    step_sums.resize(std::max(step_sums.size(), node.size()), 0.0);
    for (std::size_t k = 0; k < node.size(); ++k) step_sums[k] += node[k];
  }
  std::vector<SampleSummary> out;
  double summed_medians = 0;
  for (std::vector<double>& node : samples) {
    out.push_back(summarize(std::move(node)));
    summed_medians += out.back().median;
  }
  const double scale = summed_medians > 0 ? summarize(std::move(step_sums)).median / summed_medians : 1;
  for (SampleSummary& s : out) {
    s.median *= scale;
    s.spread *= scale;
  }
  return out;
}

StepTimes time_nodes(StepNodeTimer& timer, const NodeTimingOptions& options,
                     const std::function<void(int, int)>& progress) {
  std::vector<std::vector<double>> samples(timer.graph().size());
  for (int step = 0; step < options.warmup; ++step) timer.time_step(samples);
  for (std::vector<double>& s : samples) s.clear();
  std::vector<double> updates;
  for (int step = 0; step < options.repeats; ++step) {
    timer.time_step(samples, &updates);
    if (progress) progress(step + 1, options.repeats);
  }
  StepTimes times;
  for (const SampleSummary& s : summarize_step_nodes(std::move(samples))) times.nodes.push_back({s});
  times.update = summarize(std::move(updates));
  return times;
}

std::vector<std::int64_t> storage_sizes(const Graph& g, std::size_t count) {
  std::set<std::int64_t> distinct;
  for (const Node& n : g.nodes())
    if (n.bytes > 0) distinct.insert(n.bytes);
  if (distinct.size() <= count) return {distinct.begin(), distinct.end()};
  // Geometrically spaced targets: most of a model's distinct sizes are small, and an even
  // pick over them would leave the throughput, which the large ones show, poorly fitted.
  const double lo = std::log(static_cast<double>(*distinct.begin()));
  const double hi = std::log(static_cast<double>(*distinct.rbegin()));
  std::set<std::int64_t> picked;
  for (std::size_t i = 0; i < count; ++i) {
    const double target = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(count - 1);
    const auto above = distinct.lower_bound(static_cast<std::int64_t>(std::exp(target)));
    std::int64_t best = above == distinct.end() ? *distinct.rbegin() : *above;
    if (above != distinct.begin()) {
      const std::int64_t below = *std::prev(above);
      if (target - std::log(static_cast<double>(below)) < std::log(static_cast<double>(best)) - target) best = below;
    }
    picked.insert(best);
  }
  return {picked.begin(), picked.end()};
}

namespace {

// Least squares line through (x, y) with weights: {intercept, slope}; slope 0 where the xs
// do not differ.
std::pair<double, double> weighted_line(const std::vector<double>& x, const std::vector<double>& y,
                                        const std::vector<double>& w) {
  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    s += w[i], sx += w[i] * x[i], sy += w[i] * y[i], sxx += w[i] * x[i] * x[i], sxy += w[i] * x[i] * y[i];
  }
  const double denominator = s * sxx - sx * sx;
  const double slope = denominator > 0 ? (s * sxy - sx * sy) / denominator : 0;
  return {(sy - slope * sx) / s, slope};
}

// The weighted least-squares line through the origin: its slope.
double slope_through_origin(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& w) {
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxy += w[i] * x[i] * y[i], sxx += w[i] * x[i] * x[i];
  return sxy / sxx;
}

double weighted_mean(const std::vector<double>& y, const std::vector<double>& w) {
  double weight = 0, sum = 0;
  for (std::size_t i = 0; i < y.size(); ++i) weight += w[i], sum += w[i] * y[i];
  return sum / weight;
}

std::vector<double> as_doubles(const std::vector<std::int64_t>& v) { return {v.begin(), v.end()}; }

}  // namespace

TransferFit fit_transfers(const std::vector<std::int64_t>& bytes, const std::vector<double>& seconds) {
  POET_CHECK(!bytes.empty() && bytes.size() == seconds.size(), "fit_transfers needs matching samples");
  const std::vector<double> x = as_doubles(bytes);
  std::vector<double> relative;  // weights 1 / time: between absolute and relative errors
  for (double t : seconds) relative.push_back(1 / std::max(t, 1e-15));
  const auto [latency, slope] = weighted_line(x, seconds, relative);
  if (slope > 0) {
    if (latency >= 0) return {latency, 1 / slope};
    // A negative intercept is noise at the small sizes: all of the time is per byte.
    return {0, 1 / slope_through_origin(x, seconds, relative)};
  }
  // Times that do not grow with size (one size, or a device that takes milliseconds for
  // any write): all of it is latency; the bytes cost next to nothing.
  return {weighted_mean(seconds, relative), kUnmeasurableBytesPerSecond};
}

PagingCpuFit fit_paging_cpu(const std::vector<std::int64_t>& bytes, const std::vector<double>& lost_s) {
  POET_CHECK(!bytes.empty() && bytes.size() == lost_s.size(), "fit_paging_cpu needs matching samples");
  const std::vector<double> x = as_doubles(bytes), alike(bytes.size(), 1);
  const auto [per_transfer, per_byte] = weighted_line(x, lost_s, alike);
  if (per_byte <= 0) return {std::max(weighted_mean(lost_s, alike), 0.0), 0};  // no growth with size: per transfer
  if (per_transfer < 0) return {0, std::max(slope_through_origin(x, lost_s, alike), 0.0)};  // all of it per byte
  return {per_transfer, per_byte};
}

StorageTiming time_storage(const std::vector<std::int64_t>& sizes, const StorageTimingOptions& options,
                           const std::function<void(const StorageSample&)>& progress) {
  FilePagerOptions pager_options;
  pager_options.path = options.directory;
  pager_options.direct_io = options.direct_io;
  FilePager pager(pager_options);
  BackgroundLoad load(options.compute_load);
  StorageTiming result;
  result.measured.path = options.directory;
  result.measured.direct_io = pager.uses_direct_io();
  bool dropped = true;
  std::vector<std::int64_t> xs;
  std::vector<double> outs, ins, lost;
  std::vector<double> out_samples, in_samples;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const auto node = static_cast<NodeId>(k);
    std::vector<std::byte> buffer(static_cast<std::size_t>(sizes[k]));
    for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::byte>(i * 131 + k);
    out_samples.clear();
    in_samples.clear();
    // With a load, kLoadPairsPerSize pairs of phases: the load's runs alone, then beside
    // this size's transfers. Each pair gives what a transfer took from the load against the
    // baseline just before it, and the size's figure is the median over the pairs: this VM
    // switches between speeds some tenths apart within seconds, and one baseline taken
    // before a switch made a single size's figure 3-4x the others' (the per-MiB charge of
    // three profiles in a row came out 0, 83 and 0 us).
    std::vector<double> lost_in_pairs;
    int timed_rounds = 0;
    const int pairs = load.running() ? kLoadPairsPerSize : 1;
    for (int pair = 0; pair < pairs; ++pair) {
      double load_alone_s = 0;
      if (load.running()) {
        const Clock::time_point from = Clock::now();
        load.wait_for_runs_since(from, kLoadRunsPerSize);
        load_alone_s = summarize(load.durations_within(from, Clock::now())).median;
      }
      const Clock::time_point phase_began = Clock::now();
      int transfers = 0;
      // The first round of the first pair is a warm-up. The transfers are timed over the
      // pairs; with a load, each pair's rounds go on until enough of its runs fell within
      // them to see what they take from it.
      // The timed rounds left, shared out evenly (rounded up) over the pairs left.
      const int pairs_left = pairs - pair;
      const int rounds_wanted = (options.repeats - timed_rounds + pairs_left - 1) / pairs_left + (pair == 0 ? 1 : 0);
      for (int r = 0; r < rounds_wanted ||
                      (load.running() && static_cast<int>(load.durations_within(phase_began, Clock::now()).size()) <
                                             kLoadRunsPerSize);
           ++r) {
        Clock::time_point start = Clock::now();
        pager.start_page_out(node, buffer);
        pager.wait(node);
        const double out_s = seconds_since(start);
        if (!pager.uses_direct_io()) dropped = drop_cached_pages(pager.path()) && dropped;
        start = Clock::now();
        pager.start_page_in(node, buffer);
        pager.wait(node);
        const double in_s = seconds_since(start);
        transfers += 2;
        if (pair == 0 && r == 0) continue;
        out_samples.push_back(out_s);
        in_samples.push_back(in_s);
        ++timed_rounds;
      }
      if (load.running()) {
        // A run of the load took `with` beside transfers at `rate` a second: each took
        // (with - alone) / (rate x with) of compute from it.
        const double phase_s = seconds_since(phase_began);
        const double with_s = summarize(load.durations_within(phase_began, Clock::now())).median;
        const double rate = static_cast<double>(transfers) / std::max(phase_s, 1e-12);
        lost_in_pairs.push_back((with_s - load_alone_s) / std::max(rate * with_s, 1e-12));
      }
    }
    StorageSample s{.bytes = sizes[k]};
    if (!lost_in_pairs.empty()) s.compute_lost_s = std::max(0.0, summarize(lost_in_pairs).median);
    const SampleSummary out = summarize(out_samples), in = summarize(in_samples);
    s.pageout_s = out.median, s.pageout_spread_s = out.spread;
    s.pagein_s = in.median, s.pagein_spread_s = in.spread;
    result.measured.samples.push_back(s);
    xs.push_back(s.bytes), outs.push_back(s.pageout_s), ins.push_back(s.pagein_s), lost.push_back(s.compute_lost_s);
    if (progress) progress(s);
  }
  load.finish();
  if (!xs.empty()) {
    result.pageout = fit_transfers(xs, outs);
    result.pagein = fit_transfers(xs, ins);
    if (options.compute_load) result.cpu = fit_paging_cpu(xs, lost);
  }
  result.cache = pager.uses_direct_io() ? "O_DIRECT (page cache bypassed)"
                 : dropped ? "posix_fadvise(DONTNEED) after fdatasync before each page-in (O_DIRECT unsupported here)"
                           : "page cache NOT bypassed (no O_DIRECT, posix_fadvise failed): page-ins may be cache hits";
  return result;
}

}  // namespace poet::profile
