// The OS interface (os.h) on Linux.
#include "os/os.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

extern char ** environ;

namespace xdna::os {

struct file { int fd; };
struct library { void * handle; };

namespace {

std::string errno_text(int err) { return strerror(err); }

const char * kind_of(mode_t m) {
    return S_ISDIR(m) ? "a folder" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" :
           S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a file";
}

} // namespace

const char * env(const char * name) { return getenv(name); }

std::vector<std::string> environment() {
    std::vector<std::string> out;
    for (char ** e = environ; e && *e; ++e) out.emplace_back(*e);
    return out;
}

std::string module_path(const void * address) {
    Dl_info info{};
    return dladdr(address, &info) && info.dli_fname ? info.dli_fname : "";
}

std::string dir_name(const std::string & path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string cache_dir(std::string * why) {
    const char * xdg = getenv("XDG_CACHE_HOME"), * home = getenv("HOME");
    if (xdg && *xdg) return xdg;
    if (home && *home) return std::string(home) + "/.cache";
    *why = "neither XDG_CACHE_HOME nor HOME is set";
    return "";
}

bool make_dir(const std::string & path, std::string * why) {
    if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return true;
    *why = errno_text(errno);
    return false;
}

file_info stat_file(const std::string & path) {
    file_info fi;
    struct stat sb;
    if (stat(path.c_str(), &sb) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            fi.exists = true;
            fi.error = errno_text(errno);
        }
        return fi;
    }
    fi.exists = true;
    fi.regular = S_ISREG(sb.st_mode);
    fi.kind = fi.regular ? "a regular file" : kind_of(sb.st_mode);
    fi.size = (uint64_t) sb.st_size;
    fi.mtime = (int64_t) sb.st_mtime;
    return fi;
}

file * file_open(const std::string & path, open_mode mode, std::string * why, bool * absent) {
    *absent = false;
    if (mode == open_mode::create_new) {
        const int fd = open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0644);
        if (fd < 0) {
            *why = "cannot be created: " + errno_text(errno);
            return nullptr;
        }
        return new file{fd};
    }
    const file_info fi = stat_file(path);
    if (!fi.exists || !fi.error.empty()) {
        *absent = !fi.exists;
        *why = "cannot be opened: " + (fi.exists ? fi.error : errno_text(ENOENT));
        return nullptr;
    }
    if (!fi.regular) {   // checked before the open: opening some devices has effects of its own
        *why = std::string("is ") + fi.kind + ", not a regular file";
        return nullptr;
    }
    const int flags = mode == open_mode::read ? O_RDONLY : O_RDWR | O_APPEND;
    const int fd = open(path.c_str(), flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        *absent = errno == ENOENT;
        *why = "cannot be opened: " + errno_text(errno);
        return nullptr;
    }
    struct stat sb;   // the path may have changed since the stat above
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        *why = std::string("is ") + kind_of(sb.st_mode) + ", not a regular file";
        close(fd);
        return nullptr;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return new file{fd};
}

bool file_read(file * f, size_t max, uint64_t offset, std::string * out, std::string * why) {
    out->resize(max);
    size_t got = 0;
    while (got < max) {
        const ssize_t n = pread(f->fd, &(*out)[got], max - got, (off_t) (offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            *why = "cannot be read: " + errno_text(errno);
            out->clear();
            return false;
        }
        if (n == 0) break;
        got += (size_t) n;
    }
    out->resize(got);
    return true;
}

bool file_append(file * f, const std::string & text, std::string * why) {
    for (size_t done = 0; done < text.size();) {
        const ssize_t n = write(f->fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            *why = "cannot be written: " + errno_text(n < 0 ? errno : EIO);
            return false;
        }
        done += (size_t) n;
    }
    return true;
}

FILE * file_stdio(file * f) {
    FILE * out = fdopen(f->fd, "w");
    if (!out) {
        const int err = errno;
        close(f->fd);
        errno = err;
    }
    delete f;
    return out;
}

bool file_close(file * f, std::string * why) {
    const bool ok = close(f->fd) == 0;
    if (!ok) *why = "cannot be written: " + errno_text(errno);
    delete f;
    return ok;
}

std::string real_path(const std::string & path) {
    char real[PATH_MAX];
    return realpath(path.c_str(), real) ? std::string(real) : path;
}

bool replace_file(const std::string & from, const std::string & to, std::string * why) {
    if (rename(from.c_str(), to.c_str()) == 0) return true;
    *why = errno_text(errno);
    return false;
}

bool remove_file(const std::string & path) { return unlink(path.c_str()) == 0; }

library * library_open(const std::string & path, std::string * why) {
    void * h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char * e = dlerror();
        *why = e ? e : "dlopen failed";
        return nullptr;
    }
    return new library{h};
}

void * library_symbol(library * lib, const char * name) { return dlsym(lib->handle, name); }

const char * library_suffix() { return ".so"; }

int process_id() { return (int) getpid(); }

int cores_available() {
    cpu_set_t set;
    const int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                                : (int) std::thread::hardware_concurrency();
    return n > 0 ? n : 1;
}

std::string cpu_model_name() {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            return colon == std::string::npos ? line : line.substr(colon + 2);
        }
    }
    return "?";
}

size_t memory_available() {
    FILE * f = fopen("/proc/meminfo", "r");
    if (!f) return SIZE_MAX;
    char line[256];
    size_t kb = 0;
    bool found = false;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) { found = true; break; }
    }
    fclose(f);
    return found ? kb * 1024 : SIZE_MAX;
}

size_t page_size() {
    static const size_t page = (size_t) sysconf(_SC_PAGESIZE);
    return page;
}

void * aligned_alloc_zeroed(size_t align, size_t bytes) {
    const size_t rounded = (bytes + align - 1) / align * align;
    void * p = std::aligned_alloc(align, rounded ? rounded : align);
    if (p) std::memset(p, 0, rounded);
    return p;
}

void aligned_free(void * p) { std::free(p); }

void precise_timed_waits() {
    static thread_local bool set = false;
    if (!set) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        set = true;
    }
}

bool threads_ended_at_exit() { return false; }

} // namespace xdna::os
