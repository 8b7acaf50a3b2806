#include "util/own_file.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace xdna {

namespace {

constexpr size_t head_bytes = 4096;

std::string errno_text(int err) { return strerror(err); }

// What a file of mode `m` is, for a refusal.
std::string not_regular(mode_t m) {
    const char * what = S_ISDIR(m) ? "a folder" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" :
                        S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a file";
    return std::string("is ") + what + ", not a regular file";
}

// Opens `path` without ever waiting (a FIFO with no writer, a device), then checks with fstat what was opened (the
// path may have changed since any earlier stat). -1 with `why` when it is not a regular file or cannot be opened;
// `absent` set when it does not exist.
int open_regular(const std::string & path, int flags, std::string * why, bool * absent) {
    *absent = false;
    struct stat sb;
    if (stat(path.c_str(), &sb) != 0) {
        *absent = errno == ENOENT;
        *why = "cannot be opened: " + errno_text(errno);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {   // checked before the open: opening some devices has effects of its own
        *why = not_regular(sb.st_mode);
        return -1;
    }
    const int fd = open(path.c_str(), flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        *absent = errno == ENOENT;
        *why = "cannot be opened: " + errno_text(errno);
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        *why = not_regular(sb.st_mode);
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

// Up to `max` bytes from `offset`; false on a read error.
bool read_up_to(int fd, size_t max, off_t offset, std::string * out) {
    out->resize(max);
    size_t got = 0;
    while (got < max) {
        const ssize_t n = pread(fd, &(*out)[got], max - got, offset + (off_t) got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) break;
        got += (size_t) n;
    }
    out->resize(got);
    return true;
}

// Whether the open regular file `fd` may be written over or appended to: empty, or its beginning is `own`'s.
bool is_own(int fd, const own_file_test & own, std::string * why) {
    std::string head;
    if (!read_up_to(fd, head_bytes, 0, &head)) {
        *why = "cannot be read: " + errno_text(errno);
        return false;
    }
    if (head.empty() || own(head)) return true;
    *why = "is not a file ggml-xdna wrote: left as it is";
    return false;
}

bool write_all(int fd, const std::string & text) {
    for (size_t done = 0; done < text.size();) {
        const ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += (size_t) n;
    }
    return true;
}

}  // namespace

file_read read_regular_file(const std::string & path, size_t max_bytes, std::string * text, std::string * why) {
    bool absent = false;
    const int fd = open_regular(path, O_RDONLY, why, &absent);
    if (fd < 0) return absent ? file_read::absent : file_read::refused;
    // one byte more than allowed tells a file that is too large from one that is exactly the limit
    const bool ok = read_up_to(fd, max_bytes + 1, 0, text);
    const int err = errno;
    close(fd);
    if (!ok) {
        *why = "cannot be read: " + errno_text(err);
        return file_read::refused;
    }
    if (text->size() > max_bytes) {
        *why = "is larger than " + std::to_string(max_bytes) +
               " bytes, more than ggml-xdna ever writes or reads there";
        text->clear();
        return file_read::refused;
    }
    return file_read::ok;
}

bool replace_own_file(const std::string & path, const own_file_test & own, const std::function<bool(FILE *)> & write,
                      std::string * why) {
    std::string target = path;   // a link to the plugin's file: the file is replaced, the link stays
    bool absent = false;
    const int fd = open_regular(path, O_RDONLY, why, &absent);
    if (fd < 0 && !absent) {
        *why += ": left as it is";
        return false;
    }
    if (fd >= 0) {
        const bool mine = is_own(fd, own, why);
        close(fd);
        if (!mine) return false;
        char real[PATH_MAX];
        if (realpath(path.c_str(), real)) target = real;
    }
    const std::string tmp = target + ".tmp." + std::to_string((long long) getpid());
    const int tfd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0644);
    FILE * f = tfd >= 0 ? fdopen(tfd, "w") : nullptr;
    if (!f) {
        *why = "cannot be written (no temporary file " + tmp + ": " + errno_text(errno) + ")";
        if (tfd >= 0) { close(tfd); unlink(tmp.c_str()); }
        return false;
    }
    errno = 0;
    bool ok = write(f) && fflush(f) == 0;
    int err = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(tmp.c_str(), target.c_str()) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlink(tmp.c_str());
        *why = "cannot be written: " + errno_text(err ? err : EIO);
    }
    return ok;
}

bool append_own_file(const std::string & path, const own_file_test & own, const std::string & text, std::string * why) {
    bool absent = false;
    int fd = open_regular(path, O_RDWR | O_APPEND, why, &absent);
    if (fd < 0 && absent) {
        fd = open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0644);
        if (fd < 0) *why = "cannot be created: " + errno_text(errno);
    } else if (fd < 0) {
        *why += ": left as it is";
    }
    if (fd < 0) return false;
    if (!is_own(fd, own, why)) {
        close(fd);
        return false;
    }
    bool ok = write_all(fd, text);
    const int err = errno;
    ok = close(fd) == 0 && ok;
    if (!ok) *why = "cannot be written: " + errno_text(err);
    return ok;
}

}  // namespace xdna
