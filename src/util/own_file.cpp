#include "util/own_file.h"

#include "os/os.h"

#include <cerrno>
#include <cstring>

namespace xdna {

namespace {

constexpr size_t head_bytes = 4096;

// Whether the open regular file `f` may be written over or appended to: empty, or its beginning is `own`'s.
bool is_own(os::file * f, const own_file_test & own, std::string * why) {
    std::string head;
    if (!os::file_read(f, head_bytes, 0, &head, why)) return false;
    if (head.empty() || own(head)) return true;
    *why = "is not a file ggml-xdna wrote: left as it is";
    return false;
}

}  // namespace

file_read read_regular_file(const std::string & path, size_t max_bytes, std::string * text, std::string * why) {
    bool absent = false;
    os::file * f = os::file_open(path, os::open_mode::read, why, &absent);
    if (!f) return absent ? file_read::absent : file_read::refused;
    // one byte more than allowed tells a file that is too large from one that is exactly the limit
    const bool ok = os::file_read(f, max_bytes + 1, 0, text, why);
    std::string ignored;
    os::file_close(f, &ignored);
    if (!ok) return file_read::refused;
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
    os::file * f = os::file_open(path, os::open_mode::read, why, &absent);
    if (!f && !absent) {
        *why += ": left as it is";
        return false;
    }
    if (f) {
        const bool mine = is_own(f, own, why);
        std::string ignored;
        os::file_close(f, &ignored);
        if (!mine) return false;
        target = os::real_path(path);
    }
    const std::string tmp = target + ".tmp." + std::to_string(os::process_id());
    // created exclusively (never a file or link already there), then written by the caller through stdio
    std::string failure;
    os::file * created = os::file_open(tmp, os::open_mode::create_new, &failure, &absent);
    FILE * out = created ? os::file_stdio(created) : nullptr;
    if (!out) {
        *why = "cannot be written (no temporary file " + tmp + ": " + (created ? strerror(errno) : failure) + ")";
        if (created) os::remove_file(tmp);
        return false;
    }
    errno = 0;
    bool ok = write(out) && fflush(out) == 0;
    int err = errno;
    if (fclose(out) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) failure = strerror(err ? err : EIO);
    if (ok && !os::replace_file(tmp, target, &failure)) ok = false;
    if (!ok) {
        os::remove_file(tmp);
        *why = "cannot be written: " + failure;
    }
    return ok;
}

bool append_own_file(const std::string & path, const own_file_test & own, const std::string & text, std::string * why) {
    bool absent = false;
    os::file * f = os::file_open(path, os::open_mode::append, why, &absent);
    if (!f && absent) {
        f = os::file_open(path, os::open_mode::create_new, why, &absent);
    } else if (!f) {
        *why += ": left as it is";
    }
    if (!f) return false;
    if (!is_own(f, own, why)) {
        std::string ignored;
        os::file_close(f, &ignored);
        return false;
    }
    const bool wrote = os::file_append(f, text, why);
    std::string closing;
    const bool closed = os::file_close(f, &closing);
    if (wrote && !closed) *why = closing;
    return wrote && closed;
}

}  // namespace xdna
