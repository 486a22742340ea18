#include "poet/profile/profiling.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <exception>
#include <set>
#include <stop_token>
#include <thread>

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
// destruction), passing on what it throws at finish().
class BackgroundLoad {
 public:
  explicit BackgroundLoad(std::function<void()> work) {
    if (!work) return;
    thread_ = std::jthread([this, work = std::move(work)](std::stop_token stop) {
      try {
        while (!stop.stop_requested()) work();
      } catch (...) {
        failure_ = std::current_exception();
      }
    });
  }
  void finish() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  std::exception_ptr failure_;
  std::jthread thread_;  // last: joined (by its destructor) before failure_ goes
};

}  // namespace

SampleSummary summarize(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  return {percentile(samples, 0.5), percentile(samples, 0.75) - percentile(samples, 0.25)};
}

void time_pass(runtime::NodeRunner& runner, std::vector<std::vector<double>>& samples) {
  POET_CHECK(samples.size() == runner.graph().size(), "time_pass needs one sample list per node");
  for (NodeId v = 0; v < static_cast<NodeId>(samples.size()); ++v) {
    const Clock::time_point start = Clock::now();
    runner.run(v);
    samples[static_cast<std::size_t>(v)].push_back(seconds_since(start));
  }
}

std::vector<NodeTiming> time_nodes(runtime::NodeRunner& runner, const NodeTimingOptions& options,
                                   const std::function<void(int, int)>& progress) {
  const auto nodes = static_cast<NodeId>(runner.graph().size());
  for (int pass = 0; pass < options.warmup; ++pass)
    for (NodeId v = 0; v < nodes; ++v) runner.run(v);
  std::vector<std::vector<double>> samples(static_cast<std::size_t>(nodes));
  for (int pass = 0; pass < options.repeats; ++pass) {
    time_pass(runner, samples);
    if (progress) progress(pass + 1, options.repeats);
  }
  std::vector<NodeTiming> timings;
  for (std::vector<double>& s : samples) timings.push_back({summarize(std::move(s))});
  return timings;
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

TransferFit fit_transfers(const std::vector<std::int64_t>& bytes, const std::vector<double>& seconds) {
  POET_CHECK(!bytes.empty() && bytes.size() == seconds.size(), "fit_transfers needs matching samples");
  const auto n = static_cast<double>(bytes.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto x = static_cast<double>(bytes[i]);
    sx += x, sy += seconds[i], sxx += x * x, sxy += x * seconds[i];
  }
  const double denominator = n * sxx - sx * sx;
  const double slope = denominator > 0 ? (n * sxy - sx * sy) / denominator : 0;
  if (slope > 0) {
    const double latency = (sy - slope * sx) / n;
    if (latency >= 0) return {latency, 1 / slope};
    // A negative intercept is noise at the small sizes: all of the time is per byte.
    return {0, sxx / sxy};
  }
  const auto largest = std::max_element(bytes.begin(), bytes.end()) - bytes.begin();
  return {0, static_cast<double>(bytes[largest]) / std::max(seconds[largest], 1e-12)};
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
  std::vector<double> outs, ins;
  std::vector<double> out_samples, in_samples;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const auto node = static_cast<NodeId>(k);
    std::vector<std::byte> buffer(static_cast<std::size_t>(sizes[k]));
    for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::byte>(i * 131 + k);
    out_samples.clear();
    in_samples.clear();
    for (int r = 0; r < options.repeats + 1; ++r) {  // the first round is a warm-up
      Clock::time_point start = Clock::now();
      pager.start_page_out(node, buffer);
      pager.wait(node);
      const double out_s = seconds_since(start);
      if (!pager.uses_direct_io()) dropped = drop_cached_pages(pager.path()) && dropped;
      start = Clock::now();
      pager.start_page_in(node, buffer);
      pager.wait(node);
      const double in_s = seconds_since(start);
      if (r == 0) continue;
      out_samples.push_back(out_s);
      in_samples.push_back(in_s);
    }
    StorageSample s{.bytes = sizes[k]};
    const SampleSummary out = summarize(out_samples), in = summarize(in_samples);
    s.pageout_s = out.median, s.pageout_spread_s = out.spread;
    s.pagein_s = in.median, s.pagein_spread_s = in.spread;
    result.measured.samples.push_back(s);
    xs.push_back(s.bytes), outs.push_back(s.pageout_s), ins.push_back(s.pagein_s);
    if (progress) progress(s);
  }
  load.finish();
  if (!xs.empty()) {
    result.pageout = fit_transfers(xs, outs);
    result.pagein = fit_transfers(xs, ins);
  }
  result.cache = pager.uses_direct_io() ? "O_DIRECT (page cache bypassed)"
                 : dropped ? "posix_fadvise(DONTNEED) after fdatasync before each page-in (O_DIRECT unsupported here)"
                           : "page cache NOT bypassed (no O_DIRECT, posix_fadvise failed): page-ins may be cache hits";
  return result;
}

}  // namespace poet::profile
