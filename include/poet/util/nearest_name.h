// "Did you mean ...?": the names a mistyped word was probably meant to be, for messages
// about a command line's words and a file's field names alike.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace poet {

// Edits (insert, delete, replace a character) that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The name in `names` fewest edits from `word`, if it is at most `max_edits` away (the
// first such name on a tie).
std::optional<std::string> nearest_name(std::string_view word, const std::vector<std::string>& names,
                                        std::size_t max_edits = 2);

// A file's field that is none of `fields`: "unknown field "param_cout" (did you mean
// "param_count"?); the fields are ...". Files refuse such fields rather than drop them: a
// mistyped optional field would silently keep its default.
std::string unknown_field(std::string_view key, const std::vector<std::string>& fields);

}  // namespace poet
