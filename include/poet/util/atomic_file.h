// Writing output files so that a reader never sees a half-written one.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "poet/util/interrupt.h"

namespace poet {

// Writes `contents` to `path` so that a reader (or a power cut) sees the old file or the
// new one, never a mix: into a uniquely named temporary file beside the target, fsync'd,
// renamed over the target, then the folder fsync'd. Two writers of one path both succeed
// and one's whole contents win. A symlink is followed (it stays a symlink, and its final
// target gets the contents); a path that is not a regular file (/dev/null, a FIFO, a
// terminal) is written directly, as any program would, and never replaced. One of poet's
// own descriptors (/dev/stdout, /dev/fd/3) is written through that descriptor. A temporary
// file is removed if the write fails or poet is interrupted (interrupt.h).
//
// On failure the destination is untouched, and IoError names the path and the system's
// reason (a missing folder, no permission, a full disk, a folder given as the path).
void write_file_atomically(const std::string& path, std::string_view contents);

struct FileContents {
  std::string path;
  std::string contents;
};

// Writes the files of one output (a plan's text, device plan and header; a report's table,
// JSON and figure) so that none is replaced unless all are: each to its temporary first,
// then all renamed over their targets in a row, an interrupt held until the last
// (DeferInterrupts). Streams and devices (a FIFO, stdout) are written before the renames,
// an interrupt heard. A failed write before the renames, or an interrupt, replaces none. Only
// a rename failing midway (which a full disk or a missing folder does not cause) leaves some
// written; the IoError then names them.
void write_files_atomically(std::span<const FileContents> files);

// Removes the temporaries writes of `path` left behind when their process was killed
// outright (kill -9, the OOM killer, a power cut) between making and renaming them: files
// beside its final target named as write_file_atomically names them. Only for a caller that
// knows no write of `path` is under way (ExclusiveUse holds its lock).
void remove_temporaries_of(const std::string& path);

// When `path` names stdout (/dev/stdout, /dev/fd/1), keeps stdout for that file alone: what
// poet prints for people goes to stderr from then on (descriptor 1 becomes a copy of it), and
// writes of the path go where stdout went. So `poet solve -o - | jq` gets the schedule and
// nothing else, as `curl -o -` does. Called once the command line is parsed.
void give_stdout_to(const std::string& path);

// Whether a write of `path` goes into something already there that is not a file:
// one of poet's descriptors (/dev/stdout), a device, a FIFO. Such a path is no prefix for
// the files made by adding suffixes to it (they would be made in /dev).
bool written_in_place(const std::string& path);

// Why `path` cannot be written as a file, in words for an error message: its folder is
// missing or takes no new file, or it is itself a folder. Nothing if none of these. Checked
// before long work (a solve, a profile, an epoch of training), so that none is lost to a
// typo or a read-only folder.
std::optional<std::string> output_path_problem(const std::string& path);

// Why no new file can be made in `folder` (empty: the working folder), in words naming the
// folder: "the folder '/proc' takes no new files (a virtual file system such as /proc)", "...
// is not writable (Permission denied)". Nothing if one can. Tried by making one and removing
// it at once: permissions alone do not tell (root passes every check, /proc takes no file).
std::optional<std::string> new_file_problem(const std::string& folder);

// Throws InputError naming `option` and output_path_problem(path), if there is one.
void check_output_path(const std::string& path, std::string_view option);

// Makes the folder `dir` (and its parents) for the files an option writes into it. Throws
// InputError naming `option`, the folder and the system's reason when it cannot be made (a
// file of that name, no permission) or takes no new file (new_file_problem). If this call
// made `dir`, the result removes it when it ends (or on an interrupt while it lives) if it
// is still empty then: a run that fails or is interrupted before its first file leaves no
// empty folder behind (null if `dir` was there before).
class MadeFolder {
 public:
  explicit MadeFolder(const std::string& path) : path_(path), on_interrupt_(path) {}
  ~MadeFolder();
  MadeFolder(const MadeFolder&) = delete;
  MadeFolder& operator=(const MadeFolder&) = delete;

 private:
  std::string path_;
  RemoveOnInterrupt on_interrupt_;
};
[[nodiscard]] std::unique_ptr<MadeFolder> make_output_folder(const std::string& dir, std::string_view option);

}  // namespace poet
