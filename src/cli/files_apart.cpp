#include "files_apart.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "poet/util/error.h"

namespace poet::cli {
namespace {

namespace fs = std::filesystem;

// The path with every link and "." or ".." resolved, as far as it exists (absolute first:
// weakly_canonical leaves a relative path none of whose parts exists as it is).
fs::path resolved(const std::string& path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  const fs::path canonical = fs::weakly_canonical(absolute, error);
  return error ? absolute.lexically_normal() : canonical;
}

// Whether `a` and `b` name one regular file, or would once written.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const fs::file_status sa = fs::status(a, ea), sb = fs::status(b, eb);
  if ((fs::exists(sa) && !fs::is_regular_file(sa)) || (fs::exists(sb) && !fs::is_regular_file(sb))) return false;
  if (fs::exists(sa) != fs::exists(sb)) return false;
  if (fs::exists(sa)) return fs::equivalent(a, b, ea) && !ea;
  return resolved(a) == resolved(b);
}

bool is_inside(const fs::path& file, const fs::path& folder) {
  const auto [f, _] = std::mismatch(folder.begin(), folder.end(), file.begin(), file.end());
  return f == folder.end();
}

}  // namespace

void check_outside_class_folders(const std::vector<NamedFile>& image_folders, const std::vector<NamedFile>& outputs) {
  for (const NamedFile& folder : image_folders) {
    if (folder.path.empty()) continue;
    const fs::path read = resolved(folder.path);
    for (const NamedFile& out : outputs) {
      if (out.path.empty() || out.path.starts_with("/dev/")) continue;
      const fs::path written = resolved(out.path);
      if (is_inside(written, read) && written.parent_path() != read)
        throw InputError(fmt::format("{} '{}' is in a class folder of {} '{}', where the next run would take it for a "
                                     "picture; write it elsewhere (beside the class folders is fine)",
                                     out.option, out.path, folder.option, folder.path));
    }
  }
}

void check_files_apart(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs) {
  const NamedFile* reads_stdin = nullptr;
  for (const NamedFile& in : inputs) {
    if (in.path != "/dev/stdin") continue;
    if (reads_stdin)
      throw InputError(fmt::format("{} and {} both read stdin ('-'), which holds one file; give one of them as a "
                                   "file's path",
                                   reads_stdin->option, in.option));
    reads_stdin = &in;
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const NamedFile& out = outputs[k];
    if (out.path.empty()) continue;
    // Written through, stdout takes both files one after the other: neither can be read back.
    for (std::size_t j = 0; j < k; ++j)
      if (out.path == "/dev/stdout" && outputs[j].path == out.path)
        throw InputError(fmt::format("{} and {} both write stdout ('-'), which takes one file; give one of them as a "
                                     "file's path",
                                     outputs[j].option, out.option));
    for (const NamedFile& in : inputs)
      if (!in.path.empty() && same_file(out.path, in.path))
        throw InputError(fmt::format("{} '{}' is the file {} reads ('{}'): writing it would replace it; write "
                                     "elsewhere",
                                     out.option, out.path, in.option, in.path));
    for (std::size_t j = 0; j < k; ++j)
      if (!outputs[j].path.empty() && same_file(out.path, outputs[j].path))
        throw InputError(fmt::format("{} '{}' is the file {} writes too ('{}'): one would replace the other; give "
                                     "each its own file",
                                     out.option, out.path, outputs[j].option, outputs[j].path));
  }
}

}  // namespace poet::cli
