// Files the plugin reads and writes at a path a user names (GGML_XDNA_PLANNER_STATE, GGML_XDNA_REPORT,
// GGML_XDNA_TRACE, the kernel manifest and its files): the plugin never destroys a file it did not write and never
// blocks on one. Only regular files are read or written (a FIFO, a device or a folder is refused before anything
// waits on it: every open is non-blocking and checked again with fstat); reads are bounded; a file is replaced or
// appended to only when it is absent, empty, or recognisably the plugin's own (its first line, checked by the
// caller's `own`); any refusal or write error comes back as one sentence for the caller's one log line.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>

namespace xdna {

enum class file_read { ok, absent, refused };

// Reads `path` whole into `text` if it is a regular file of at most `max_bytes`. `why` (refused): what is wrong,
// without the path.
file_read read_regular_file(const std::string & path, size_t max_bytes, std::string * text, std::string * why);

// Recognises the plugin's own file from its first bytes (at most 4,096, possibly fewer than a line).
using own_file_test = std::function<bool(const std::string & head)>;

// Writes a new `path` through a temporary file next to it, renamed over it (a reader never sees half of it, and of
// two processes ending at once the last one's file stays whole): only where `path` is absent, empty or `own`.
// `write` fills the temporary file (false: it failed; errno says why). False with `why` when nothing was written.
bool replace_own_file(const std::string & path, const own_file_test & own, const std::function<bool(FILE *)> & write,
                      std::string * why);

// Appends `text` to `path`, created if absent: only where it is empty or `own`. False with `why` otherwise.
bool append_own_file(const std::string & path, const own_file_test & own, const std::string & text, std::string * why);

}  // namespace xdna
