// What a command reads and what it writes must be different files: `poet solve --graph g.json
// -o g.json` would replace the graph with its schedule, and `plan -o p --save-schedule p`
// one output with the other.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace poet::cli {

// A file named by a command's option; an empty path (the option not given) is passed over.
struct NamedFile {
  std::string_view option;
  std::string path;
};

// Throws InputError when an output names the file of an input or of another output, by
// any path to it (a link, "./g.json"), when two inputs read stdin ("-"), which holds one
// file, or two outputs write stdout. Other devices and FIFOs (/dev/null) may repeat as
// outputs: they are written through, not replaced.
void check_files_apart(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs);

// Throws InputError when an output lies in a class folder of an image folder (a sub-folder,
// at any depth), by any path to it: the next run would take it for a picture of that class.
// Beside the class folders, where no picture is looked for, outputs may go.
void check_outside_class_folders(const std::vector<NamedFile>& image_folders, const std::vector<NamedFile>& outputs);

}  // namespace poet::cli
