// The file pager's throughput target (issue: "paging throughput at least 80% of what dd
// measures for the same file system, for tensors of 1 MiB and up"), as Google Benchmarks.
// Each repetition times the FilePager and then dd doing the equivalent transfer on the same
// folder, side by side, and reports pager/dd as a counter; after the runs it prints a
// Markdown table of medians for docs/BENCHMARKS.md.
//
//   build/bench/poet_bench_paging --benchmark_repetitions=5
//   build/bench/poet_bench_paging --page-dir=/mnt/scratch --benchmark_filter=direct
//   POET_PAGE_DIR=/mnt/scratch build/bench/poet_bench_paging
//
// The folder defaults to the working directory; every file the benchmark makes there (the
// pager's own and dd's) is removed before it exits.
//
// Per iteration `kTotalMiB` move in tensors of 1, 4, 16 or 64 MiB (all started, then
// wait_all(), inside the timing). The tensors sit 64 bytes past a page boundary, like
// tensors in the executor's arena, so O_DIRECT cannot take them as they are. Modes:
//   direct  FilePager with O_DIRECT   vs  dd oflag=direct / iflag=direct
//   cache   FilePager in page-cache mode, data left in RAM (it does not fsync: the page
//           file is scratch space, so wait_all() returns once the kernel has the data)
//           vs  dd through the page cache without any sync (the same system calls'
//           semantics); reads come from a warm cache for both
//   sync    FilePager in page-cache mode, then fdatasync of its file (timed)  vs  dd
//           conv=fdatasync; reads from a cold cache for both (fdatasync +
//           posix_fadvise(DONTNEED) first, untimed): what the storage itself sustains
// dd writes from /dev/zero and reads to /dev/null with bs = the tensor size and count =
// the number of tensors, into a file of its own in the same folder that already has its
// blocks (as the pager's file has after the warm-up), so both overwrite in place. dd's time
// is the one dd reports itself (LC_ALL=C), so process start-up is not charged to it.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "poet/paging/checksum.h"
#include "poet/paging/file_pager.h"
#include "poet/profile/profiling.h"

extern char** environ;

namespace poet {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kTotalMiB = 256;  // moved per iteration, per side
constexpr std::size_t kTensorOffset = 64;  // from a page boundary

std::string page_dir = ".";

enum class Mode { kDirect, kCache, kSync };
enum class Direction { kOut, kIn };

const char* mode_name(Mode m) { return m == Mode::kDirect ? "direct" : m == Mode::kCache ? "cache" : "sync"; }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Samples {
  std::vector<double> pager_mibs, dd_mibs, ratio;
  std::string dd_command;
};
std::map<std::string, Samples> results;  // by benchmark name
std::vector<std::string> order;
std::map<std::string, std::vector<double>> cpu_results;  // CRC-32 / memcpy, MiB/s
std::vector<std::string> cpu_order;

// A file of the benchmark's own in page_dir, removed when it goes.
class ScratchFile {
 public:
  ScratchFile() {
    std::string name = (std::filesystem::path(page_dir) / "poet-bench-dd-XXXXXX").string();
    std::vector<char> buffer(name.begin(), name.end());
    buffer.push_back('\0');
    const int fd = ::mkstemp(buffer.data());
    if (fd < 0) throw std::runtime_error(fmt::format("cannot create a file in '{}': {}", page_dir, std::strerror(errno)));
    ::close(fd);
    path_ = buffer.data();
  }
  ~ScratchFile() { ::unlink(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes the file's dirty pages and drops its cached ones, so the next read comes from storage.
void sync_file(const std::string& path, bool drop) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fdatasync(fd);
  if (drop) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

struct DdRun {
  double seconds = -1;  // as dd reports it; -1 on failure
  std::string output;
};

// Runs dd with `args` (posix_spawn, no shell) and returns the time it reports.
DdRun run_dd(const std::vector<std::string>& args) {
  DdRun result;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  std::vector<std::string> strings{"dd"};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string locale = "LC_ALL=C";
  std::vector<char*> envp{locale.data()};
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LC_", 3) != 0 && std::strncmp(*e, "LANG", 4) != 0) envp.push_back(*e);
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, "dd", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    result.output = fmt::format("cannot run dd: {}", std::strerror(spawned));
    return result;
  }
  char chunk[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], chunk, sizeof chunk)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.output.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return result;
  // "268435456 bytes (268 MB, 256 MiB) copied, 0.123 s, 2.2 GB/s"
  const auto at = result.output.rfind(" copied, ");
  if (at != std::string::npos) result.seconds = std::strtod(result.output.c_str() + at + 9, nullptr);
  return result;
}

std::vector<std::string> dd_args(Mode mode, Direction dir, const std::string& file, std::size_t size, std::size_t count) {
  std::vector<std::string> a;
  if (dir == Direction::kOut) {
    a = {"if=/dev/zero", "of=" + file};
    a.push_back(mode == Mode::kSync ? "conv=notrunc,fdatasync" : "conv=notrunc");
    if (mode == Mode::kDirect) a.push_back("oflag=direct");
  } else {
    a = {"if=" + file, "of=/dev/null"};
    if (mode == Mode::kDirect) a.push_back("iflag=direct");
  }
  a.push_back(fmt::format("bs={}M", size / kMiB));
  a.push_back(fmt::format("count={}", count));
  return a;
}

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};

void run(benchmark::State& state, const std::string& name, Mode mode, Direction dir, std::size_t mib) {
  const std::size_t size = mib * kMiB;
  const std::size_t count = kTotalMiB / mib;
  const double total_mib = static_cast<double>(count * mib);

  // The tensors, back to back, 64 bytes past a page boundary.
  std::unique_ptr<std::byte, AlignedFree> arena(
      static_cast<std::byte*>(std::aligned_alloc(4096, count * size + 4096)));
  std::byte* tensors = arena.get() + kTensorOffset;
  for (std::size_t i = 0; i < count * size; i += 8) tensors[i] = static_cast<std::byte>(i * 2654435761u >> 13);
  auto tensor = [&](std::size_t i) { return std::span<std::byte>(tensors + i * size, size); };

  FilePagerOptions options;
  options.path = page_dir;
  options.direct_io = mode == Mode::kDirect;
  FilePager pager(options);
  if (mode == Mode::kDirect && !pager.uses_direct_io()) {
    state.SkipWithError("the file system refuses O_DIRECT");
    return;
  }
  ScratchFile dd_file;
  const std::vector<std::string> fill = dd_args(Mode::kSync, Direction::kOut, dd_file.path(), size, count);
  const std::vector<std::string> args = dd_args(mode, dir, dd_file.path(), size, count);
  // Warm-up, untimed: both files get their blocks, and a page-in has copies to read.
  for (std::size_t i = 0; i < count; ++i) pager.start_page_out(static_cast<NodeId>(i), tensor(i));
  pager.wait_all();
  sync_file(pager.path(), false);
  if (const DdRun r = run_dd(fill); r.seconds < 0) {
    state.SkipWithError(("dd failed: " + r.output).c_str());
    return;
  }

  Samples& samples = results[name];
  if (samples.pager_mibs.empty()) order.push_back(name);
  samples.dd_command = "dd";
  for (const auto& a : dd_args(mode, dir, "FILE", size, count)) samples.dd_command += " " + a;

  for (auto _ : state) {
    if (mode == Mode::kSync && dir == Direction::kIn) sync_file(pager.path(), true);
    const Clock::time_point start = Clock::now();
    for (std::size_t i = 0; i < count; ++i) {
      if (dir == Direction::kOut)
        pager.start_page_out(static_cast<NodeId>(i), tensor(i));
      else
        pager.start_page_in(static_cast<NodeId>(i), tensor(i));
    }
    pager.wait_all();
    if (mode == Mode::kSync && dir == Direction::kOut) sync_file(pager.path(), false);
    const double pager_s = seconds_since(start);
    state.SetIterationTime(pager_s);

    if (mode == Mode::kSync && dir == Direction::kIn) sync_file(dd_file.path(), true);
    const DdRun dd = run_dd(args);
    if (dd.seconds <= 0) {
      state.SkipWithError(("dd failed: " + dd.output).c_str());
      return;
    }
    const double pager_rate = total_mib / pager_s, dd_rate = total_mib / dd.seconds;
    samples.pager_mibs.push_back(pager_rate);
    samples.dd_mibs.push_back(dd_rate);
    samples.ratio.push_back(pager_rate / dd_rate);
    state.counters["pager_MiBps"] = pager_rate;
    state.counters["dd_MiBps"] = dd_rate;
    state.counters["ratio"] = pager_rate / dd_rate;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count * size));
}

// What the CPU side of a transfer costs, over kTotalMiB in tensors of `mib`: the CRC-32 every
// copy carries (the pager's, ISA-L's, and zlib's crc32 for comparison) and a memcpy (the O_DIRECT
// bounce buffer's copy).
enum class CpuWork { kCrcPager, kCrcZlib, kMemcpy };
void run_cpu(benchmark::State& state, const std::string& name, CpuWork work, std::size_t mib) {
  const std::size_t size = mib * kMiB, count = kTotalMiB / mib;
  std::vector<std::byte> from(count * size + kTensorOffset), to(size);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<std::byte>(i * 2654435761u >> 13);
  std::uint32_t sink = 0;
  if (!cpu_results.count(name)) cpu_order.push_back(name);
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    for (std::size_t i = 0; i < count; ++i) {
      const std::span<const std::byte> t(from.data() + kTensorOffset + i * size, size);
      if (work == CpuWork::kCrcPager)
        sink ^= paging::crc32_update(0, t);
      else if (work == CpuWork::kCrcZlib)
        sink ^= static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(t.data()), t.size()));
      else
        std::memcpy(to.data(), t.data(), size);
      benchmark::ClobberMemory();
    }
    const double s = seconds_since(start);
    state.SetIterationTime(s);
    cpu_results[name].push_back(static_cast<double>(kTotalMiB) / s);
    state.counters["MiBps"] = static_cast<double>(kTotalMiB) / s;
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count * size));
}

void print_table() {
  fmt::print("\nPage folder: {}\n\n", std::filesystem::absolute(page_dir).lexically_normal().string());
  fmt::print("| benchmark | tensors per iteration | pager MiB/s | dd MiB/s | dd command | pager/dd (runs) | >= 80% |\n");
  fmt::print("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const auto& name : order) {
    const Samples& s = results.at(name);
    if (s.ratio.empty()) continue;
    const double ratio = profile::summarize(s.ratio).median;
    const auto slash = name.rfind('/');
    const std::size_t mib = std::strtoul(name.c_str() + slash + 1, nullptr, 10);
    fmt::print("| {} | {} x {} MiB | {:.0f} | {:.0f} | `{}` | {:.2f} ({}) | {} |\n", name,
               kTotalMiB / std::max<std::size_t>(mib, 1), mib, profile::summarize(s.pager_mibs).median,
               profile::summarize(s.dd_mibs).median, s.dd_command, ratio, s.ratio.size(), ratio >= 0.8 ? "yes" : "**no**");
  }
  if (cpu_order.empty()) return;
  fmt::print("\n| CPU cost | median MiB/s (runs) |\n| --- | --- |\n");
  for (const auto& name : cpu_order)
    fmt::print("| {} | {:.0f} ({}) |\n", name, profile::summarize(cpu_results.at(name)).median,
               cpu_results.at(name).size());
}

}  // namespace
}  // namespace poet

int main(int argc, char** argv) {
  using namespace poet;
  if (const char* env = std::getenv("POET_PAGE_DIR"); env && *env) page_dir = env;
  // Our own flag, taken out before Google Benchmark sees the arguments.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--page-dir=", 0) == 0)
      page_dir = arg.substr(11);
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  struct stat st {};
  if (::stat(page_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    fmt::print(stderr, "--page-dir '{}' is not a folder\n", page_dir);
    return 1;
  }
  for (Mode mode : {Mode::kDirect, Mode::kCache, Mode::kSync})
    for (Direction dir : {Direction::kOut, Direction::kIn})
      for (std::size_t mib : {1, 4, 16, 64}) {
        const std::string name =
            fmt::format("{}/{}/{}MiB", dir == Direction::kOut ? "PageOut" : "PageIn", mode_name(mode), mib);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) { run(s, name, mode, dir, mib); })
            ->Iterations(1)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
  for (CpuWork work : {CpuWork::kCrcPager, CpuWork::kCrcZlib, CpuWork::kMemcpy})
    for (std::size_t mib : {1, 64}) {
      const char* what = work == CpuWork::kCrcPager ? "Crc32/pager" : work == CpuWork::kCrcZlib ? "Crc32/zlib" : "Memcpy";
      const std::string name = fmt::format("{}/{}MiB", what, mib);
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) { run_cpu(s, name, work, mib); })
          ->Iterations(1)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_table();
  return 0;
}
