#include "cbc_runner.h"

#include <CbcEventHandler.hpp>
#include <CbcModel.hpp>
#include <CoinMpsIO.hpp>
#include <CoinError.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cmath>
#include <string>

#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/status_line.h"

namespace poet::solve_internal {
namespace {

using Clock = std::chrono::steady_clock;

// Reports elapsed time, incumbent, bound and gap on stderr at most once a second, starting
// after the first second, so short solves stay quiet.
class ProgressReporter : public CbcEventHandler {
 public:
  ProgressReporter(Clock::time_point start, double scale) : start_(start), last_(start), scale_(scale) {}
  CbcEventHandler* clone() const override { return new ProgressReporter(*this); }

  CbcAction event(CbcEvent which) override {
    if (which != node && which != solution && which != heuristicSolution) return noAction;
    const auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1) || (which == node && now - last_ < std::chrono::seconds(1)))
      return noAction;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double incumbent = model_->getObjValue();
    const double bound = model_->getBestPossibleObjValue();
    const bool has = model_->bestSolution() != nullptr;
    print_above_status(fmt::format(
        "  {:7.1f} s  incumbent {}  bound {:.6g}  gap {}  nodes {}", elapsed,
        has ? fmt::format("{:.6g}", incumbent * scale_) : std::string("none"), bound * scale_,
        has && incumbent != 0 ? fmt::format("{:.2f}%", 100 * (incumbent - bound) / std::fabs(incumbent))
                              : std::string("-"),
        model_->getNodeCount()));
    return noAction;
  }

 private:
  Clock::time_point start_, last_;
  double scale_;
};

}  // namespace

void load_rows(OsiClpSolverInterface& solver, const std::vector<Row>& rows, const std::vector<double>& lower,
               const std::vector<double>& upper, const std::vector<double>& objective) {
  // The whole matrix at once: appending row by row copies it each time (quadratic, minutes
  // on a 100k-column model).
  std::vector<CoinBigIndex> starts;
  std::vector<int> lengths, indices;
  std::vector<double> elements, row_lower, row_upper;
  for (const Row& row : rows) {
    starts.push_back(static_cast<CoinBigIndex>(indices.size()));
    lengths.push_back(static_cast<int>(row.columns.size()));
    indices.insert(indices.end(), row.columns.begin(), row.columns.end());
    elements.insert(elements.end(), row.values.begin(), row.values.end());
    row_lower.push_back(std::isinf(row.lower) ? -COIN_DBL_MAX : row.lower);
    row_upper.push_back(std::isinf(row.upper) ? COIN_DBL_MAX : row.upper);
  }
  const CoinPackedMatrix matrix(false, static_cast<int>(objective.size()), static_cast<int>(rows.size()),
                                static_cast<CoinBigIndex>(elements.size()), elements.data(), indices.data(),
                                starts.data(), lengths.data());
  solver.loadProblem(matrix, lower.data(), upper.data(), objective.data(), row_lower.data(), row_upper.data());
  solver.messageHandler()->setLogLevel(0);
}

namespace {

void load(OsiClpSolverInterface& solver, const MilpModel& model) {
  load_rows(solver, model.constraint_rows(), model.lower(), model.upper(), model.objective());
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(model.columns()));
  for (int c = 0; c < model.columns(); ++c) {
    if (model.is_integer(c)) solver.setInteger(c);
    names.push_back(model.column_name(c));
  }
  solver.setColNames(names, 0, model.columns(), 0);
}

}  // namespace

namespace {

bool ends_with(const std::string& path, std::string_view ext) {
  return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

// The system's temporary folder: TMPDIR's (or another such variable's) if set, else /tmp.
std::filesystem::path temporary_root() {
  std::error_code error;
  const std::filesystem::path root = std::filesystem::temp_directory_path(error);
  if (!error) return root;
  const char* named = std::getenv("TMPDIR");
  throw InputError(fmt::format("--write-model writes through a temporary folder, and {} is not a folder; {}",
                               named ? fmt::format("TMPDIR '{}'", named) : std::string("/tmp"),
                               named ? "set TMPDIR to one that exists, or unset it" : "set TMPDIR to a folder"));
}

// A folder of its own under the system's temporary folder, removed when this goes.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    const std::filesystem::path root = temporary_root();
    std::string pattern = (root / "poet-model-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw IoError(fmt::format("cannot create a temporary folder in '{}': {}", root.string(), std::strerror(errno)));
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

void check_model_path(const std::string& path) {
  if (!ends_with(path, ".mps") && !ends_with(path, ".lp"))
    throw InputError(fmt::format("--write-model: '{}' must end in .mps or .lp", path));
  check_output_path(path, "--write-model");
  temporary_root();  // before the solve, whose model it is
}

void write_model(const MilpModel& model, const std::string& path) {
  check_model_path(path);
  OsiClpSolverInterface solver;
  load(solver, model);
  const TemporaryFolder folder;
  const std::string written = (folder.path() / (ends_with(path, ".mps") ? "model.mps" : "model.lp")).string();
  try {
    if (ends_with(path, ".mps")) {
      // CoinMpsIO directly: OSI's writers add ".gz" to the name when zlib is around.
      std::vector<std::string> columns, rows;
      for (int c = 0; c < model.columns(); ++c) columns.push_back(model.column_name(c));
      for (int r = 0; r < model.rows(); ++r) rows.push_back(fmt::format("row{}", r));
      std::vector<char> integrality(static_cast<std::size_t>(model.columns()));
      for (int c = 0; c < model.columns(); ++c) integrality[static_cast<std::size_t>(c)] = model.is_integer(c) ? 1 : 0;
      CoinMpsIO writer;
      writer.setMpsData(*solver.getMatrixByCol(), solver.getInfinity(), solver.getColLower(), solver.getColUpper(),
                        solver.getObjCoefficients(), integrality.data(), solver.getRowLower(), solver.getRowUpper(),
                        columns, rows);
      if (writer.writeMps(written.c_str(), 0, 0, 2) != 0) throw IoError(fmt::format("cannot write '{}'", path));
    } else {
      solver.writeLp((folder.path() / "model").string().c_str(), "lp", 1e-12, 10, 12, 0.0, true);
    }
  } catch (const CoinError& e) {
    throw IoError(fmt::format("cannot write '{}': {}", path, e.message()));
  }
  std::ifstream in(written, std::ios::binary);
  if (!in) throw IoError(fmt::format("cannot write '{}': CBC wrote no model into '{}'", path, folder.path().string()));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_file_atomically(path, text);
}

CbcOutcome run_cbc(const MilpModel& model, const SolveOptions& options, const std::vector<double>* start,
                   bool preprocess) {
  const auto began = Clock::now();
  OsiClpSolverInterface solver;
  load(solver, model);

  CbcModel cbc(solver);
  CbcMain0(cbc);
  cbc.setLogLevel(options.log_level);
  // CBC's log (--log-level) is a diagnostic: stdout is for poet's answer (solve --json).
  cbc.messageHandler()->setFilePointer(stderr);
  cbc.solver()->messageHandler()->setFilePointer(stderr);
  if (start != nullptr) {
    std::vector<std::pair<std::string, double>> mip_start;
    for (int c = 0; c < model.columns(); ++c)
      if (model.is_integer(c)) mip_start.emplace_back(model.column_name(c), (*start)[static_cast<std::size_t>(c)]);
    cbc.setMIPStart(mip_start);
  }
  ProgressReporter progress(began, model.objective_scale());
  if (options.progress) cbc.passInEventHandler(&progress);

  const std::string seconds = fmt::format("{}", options.time_limit_s);
  const std::string gap = fmt::format("{}", options.relative_gap);
  // CBC's "-threads 1" still hands nodes to a thread; 0 is its serial, repeatable search.
  const std::string threads = fmt::format("{}", options.max_nodes ? 0 : options.threads);
  const std::string seed = fmt::format("{}", options.seed);
  const std::string log = fmt::format("{}", options.log_level);
  std::vector<const char*> argv = {"poet",           "-sec",     seconds.c_str(), "-ratioGap",
                                   gap.c_str(),      "-threads", threads.c_str(), "-randomCbcSeed",
                                   seed.c_str(),     "-log",     log.c_str()};
  const std::string max_nodes = options.max_nodes ? fmt::format("{}", *options.max_nodes) : "";
  if (options.max_nodes) argv.insert(argv.end(), {"-maxNodes", max_nodes.c_str()});
  if (!preprocess) argv.insert(argv.end(), {"-preprocess", "off", "-presolve", "off"});
  argv.insert(argv.end(), {"-solve", "-quit"});
  CbcMain1(static_cast<int>(argv.size()), argv.data(), cbc);

  CbcOutcome out;
  out.seconds = std::chrono::duration<double>(Clock::now() - began).count();
  out.nodes = cbc.getNodeCount();
  // An infeasibility claimed at the time or node limit is not a proof.
  out.proven_infeasible = cbc.isProvenInfeasible() && !cbc.isSecondsLimitReached() && !cbc.isNodeLimitReached();
  if (cbc.bestSolution() != nullptr) {
    out.solution.emplace(cbc.bestSolution(), cbc.bestSolution() + model.columns());
    out.objective = cbc.getObjValue();
    out.proven_optimal = cbc.isProvenOptimal();
  }
  out.bound = cbc.getBestPossibleObjValue();
  return out;
}

}  // namespace poet::solve_internal
