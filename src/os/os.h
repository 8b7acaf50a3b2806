// What the plugin asks of the operating system, in one small interface: one implementation per OS, picked by CMake
// (os_posix.cpp on Linux, os_windows.cpp on Windows), so that no other file of the plugin needs an #ifdef for it.
// Paths are UTF-8 std::strings with '/' or, on Windows, '\' between folders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace xdna::os {

// ---- environment ----

// The variable's value, or null when it is not set. The pointer stays valid for the life of the process.
const char * env(const char * name);
// Every variable of the environment, as "NAME=value".
std::vector<std::string> environment();

// ---- paths and files ----

// The file of the library (or program) that contains `address`; "" when unknown.
std::string module_path(const void * address);
// The folder part of a path ("." when it has none).
std::string dir_name(const std::string & path);
// The user's cache folder: $XDG_CACHE_HOME or $HOME/.cache on Linux, %LOCALAPPDATA% on Windows; "" with `why` when
// neither is set.
std::string cache_dir(std::string * why);
// Creates the folder (its parent must exist); true when it exists afterwards. `why`: the system's reason otherwise.
bool make_dir(const std::string & path, std::string * why);

struct file_info {
    bool        exists  = false;
    bool        regular = false;   // a plain file (not a folder, device, FIFO, socket)
    const char * kind   = "";      // what it is when not regular ("a folder", "a FIFO", ...)
    uint64_t    size    = 0;
    int64_t     mtime   = 0;       // seconds since the epoch
    std::string error;             // why it could not be examined, when it exists but could not be
};
file_info stat_file(const std::string & path);

// A file opened by the functions below: never blocks on open (a FIFO, a device), and only a regular file is kept open.
struct file;
enum class open_mode { read, append, create_new };
// Opens `path` (create_new: creates it, failing if it exists). Null with `why` (and `absent` when the file is not
// there) otherwise.
file * file_open(const std::string & path, open_mode mode, std::string * why, bool * absent);
// Up to `max` bytes from `offset` into `out`; false with `why` on a read error.
bool file_read(file * f, size_t max, uint64_t offset, std::string * out, std::string * why);
// All of `text` at the end of the file; false with `why` on a write error.
bool file_append(file * f, const std::string & text, std::string * why);
// Hands the file to stdio: fclose closes it. `f` is gone either way (closed when stdio refuses: null, errno says why).
FILE * file_stdio(file * f);
// Closes the file; false with `why` when the last write did not reach it.
bool file_close(file * f, std::string * why);
// The path with every link resolved; the path itself when that fails.
std::string real_path(const std::string & path);
// Puts `from` in the place of `to` in one step (a reader sees the old file or the new one, never half of one).
bool replace_file(const std::string & from, const std::string & to, std::string * why);
bool remove_file(const std::string & path);

// ---- shared libraries ----

struct library;
// Loads a shared library by its path. Null with `why` (the system's reason) when it cannot.
library * library_open(const std::string & path, std::string * why);
void * library_symbol(library * lib, const char * name);
// The extension of shared libraries here: ".so", ".dll".
const char * library_suffix();

// ---- the machine ----

int process_id();
// CPU cores this process may run on (its affinity), at least 1.
int cores_available();
// The CPU's model name; "?" when unknown.
std::string cpu_model_name();
// Memory the system could give now without swapping; SIZE_MAX when unknown.
size_t memory_available();
size_t page_size();

// ---- memory and threads ----

// Zero-filled memory aligned to `align` (a power of two); null when there is none. Freed with aligned_free only.
void * aligned_alloc_zeroed(size_t align, size_t bytes);
void aligned_free(void * p);
// Timed waits of the calling thread wake as close to their deadline as the system allows (Linux: a 1 ns timer slack
// instead of 50 us; Windows: already as precise as its timer).
void precise_timed_waits();
// Whether the process is ending with its other threads already gone: Windows ends them before the libraries'
// destructors run (a destructor that joins one, or waits for it, would wait forever); on Linux the destructors run
// while the threads still live (false).
bool threads_ended_at_exit();

} // namespace xdna::os
