// The OS interface (os.h) on Windows: wide-character system calls, UTF-8 strings on the plugin's side.
#include "os/os.h"

#define WIN32_LEAN_AND_MEAN
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <algorithm>
#include <cstdlib>
#include <fcntl.h>
#include <io.h>
#include <cstring>
#include <list>
#include <malloc.h>
#include <mutex>
#include <thread>

namespace xdna::os {

struct file { HANDLE h; };
struct library { HMODULE module; };

namespace {

std::wstring wide(const std::string & s) {
    if (s.empty()) return {};
    const int n = MultiByteToWideChar(CP_UTF8, 0, s.data(), (int) s.size(), nullptr, 0);
    std::wstring w(n, L'\0');
    MultiByteToWideChar(CP_UTF8, 0, s.data(), (int) s.size(), &w[0], n);
    return w;
}

std::string utf8(const wchar_t * w, int len = -1) {
    if (!w) return {};
    const int n = WideCharToMultiByte(CP_UTF8, 0, w, len, nullptr, 0, nullptr, nullptr);
    if (n <= 0) return {};
    std::string s(n, '\0');
    WideCharToMultiByte(CP_UTF8, 0, w, len, &s[0], n, nullptr, nullptr);
    if (len < 0 && !s.empty()) s.pop_back();   // the terminator counted by n
    return s;
}

std::string error_text(DWORD err) {
    wchar_t * msg = nullptr;
    const DWORD n = FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM |
                                       FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, err, 0, (LPWSTR) &msg, 0, nullptr);
    std::string s = n ? utf8(msg, (int) n) : "Windows error " + std::to_string((unsigned long) err);
    if (msg) LocalFree(msg);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '.')) s.pop_back();
    return s;
}

bool is_absent(DWORD err) { return err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND; }

} // namespace

// The process environment itself (GetEnvironmentVariableW), not a C runtime's copy of it: a host built with another
// C runtime (MSVC's) sets variables that this DLL's runtime would not see. Values are kept for the process's life, as
// the pointers handed out must stay valid.
const char * env(const char * name) {
    static std::mutex mu;
    static std::list<std::string> values;
    const std::wstring w = wide(name);
    const DWORD n = GetEnvironmentVariableW(w.c_str(), nullptr, 0);
    if (n == 0) return nullptr;   // unset (an empty value has n == 1)
    std::wstring v(n, L'\0');
    const DWORD got = GetEnvironmentVariableW(w.c_str(), &v[0], n);
    v.resize(got);
    const std::string value = utf8(v.c_str());
    std::lock_guard<std::mutex> lock(mu);
    for (const std::string & s : values) {
        if (s == value) return s.c_str();
    }
    values.push_back(value);
    return values.back().c_str();
}

std::vector<std::string> environment() {
    std::vector<std::string> out;
    wchar_t * block = GetEnvironmentStringsW();
    if (!block) return out;
    for (const wchar_t * e = block; *e; e += wcslen(e) + 1) {
        if (*e != L'=') out.push_back(utf8(e));   // "=C:=C:\..." entries are the shell's, not variables
    }
    FreeEnvironmentStringsW(block);
    return out;
}

std::string module_path(const void * address) {
    HMODULE m = nullptr;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCWSTR) address, &m)) {
        return "";
    }
    std::wstring buf(MAX_PATH, L'\0');
    for (;;) {
        const DWORD n = GetModuleFileNameW(m, &buf[0], (DWORD) buf.size());
        if (n == 0) return "";
        if (n < buf.size()) return utf8(buf.c_str(), (int) n);
        buf.resize(buf.size() * 2);
    }
}

std::string dir_name(const std::string & path) {
    const size_t slash = path.find_last_of("/\\");
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string cache_dir(std::string * why) {
    const char * local = env("LOCALAPPDATA");
    if (local && *local) return local;
    *why = "LOCALAPPDATA is not set";
    return "";
}

bool make_dir(const std::string & path, std::string * why) {
    if (CreateDirectoryW(wide(path).c_str(), nullptr) || GetLastError() == ERROR_ALREADY_EXISTS) return true;
    *why = error_text(GetLastError());
    return false;
}

file_info stat_file(const std::string & path) {
    file_info fi;
    WIN32_FILE_ATTRIBUTE_DATA a;
    if (!GetFileAttributesExW(wide(path).c_str(), GetFileExInfoStandard, &a)) {
        const DWORD err = GetLastError();
        if (!is_absent(err)) {
            fi.exists = true;
            fi.error = error_text(err);
        }
        return fi;
    }
    fi.exists = true;
    fi.regular = !(a.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE));
    fi.kind = fi.regular ? "a regular file" : (a.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) ? "a folder" : "a device";
    fi.size = ((uint64_t) a.nFileSizeHigh << 32) | a.nFileSizeLow;
    // FILETIME: 100 ns steps since 1601-01-01; 11644473600 s from then to 1970-01-01
    const uint64_t t = ((uint64_t) a.ftLastWriteTime.dwHighDateTime << 32) | a.ftLastWriteTime.dwLowDateTime;
    fi.mtime = (int64_t) (t / 10000000ull) - 11644473600ll;
    return fi;
}

file * file_open(const std::string & path, open_mode mode, std::string * why, bool * absent) {
    *absent = false;
    const DWORD access = mode == open_mode::read ? GENERIC_READ : GENERIC_READ | FILE_APPEND_DATA;
    const DWORD create = mode == open_mode::create_new ? CREATE_NEW : OPEN_EXISTING;
    if (mode != open_mode::create_new) {
        const file_info fi = stat_file(path);
        if (fi.exists && fi.error.empty() && !fi.regular) {   // a folder or device is never opened
            *why = std::string("is ") + fi.kind + ", not a regular file";
            return nullptr;
        }
    }
    HANDLE h = CreateFileW(wide(path).c_str(), access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                           create, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (h == INVALID_HANDLE_VALUE) {
        const DWORD err = GetLastError();
        *absent = is_absent(err);
        *why = std::string(mode == open_mode::create_new ? "cannot be created: " : "cannot be opened: ") +
               error_text(err);
        return nullptr;
    }
    if (GetFileType(h) != FILE_TYPE_DISK) {   // a pipe or console opened by name: checked on what was opened
        CloseHandle(h);
        *why = "is a pipe or device, not a regular file";
        return nullptr;
    }
    return new file{h};
}

bool file_read(file * f, size_t max, uint64_t offset, std::string * out, std::string * why) {
    out->resize(max);
    size_t got = 0;
    while (got < max) {
        OVERLAPPED at{};
        at.Offset = (DWORD) (offset + got);
        at.OffsetHigh = (DWORD) ((offset + got) >> 32);
        DWORD n = 0;
        const DWORD want = (DWORD) std::min<size_t>(max - got, 1u << 30);
        if (!ReadFile(f->h, &(*out)[got], want, &n, &at)) {
            const DWORD err = GetLastError();
            if (err == ERROR_HANDLE_EOF) break;
            *why = "cannot be read: " + error_text(err);
            out->clear();
            return false;
        }
        if (n == 0) break;
        got += n;
    }
    out->resize(got);
    return true;
}

bool file_append(file * f, const std::string & text, std::string * why) {
    for (size_t done = 0; done < text.size();) {
        DWORD n = 0;
        const DWORD want = (DWORD) std::min<size_t>(text.size() - done, 1u << 30);
        if (!WriteFile(f->h, text.data() + done, want, &n, nullptr) || n == 0) {
            *why = "cannot be written: " + error_text(GetLastError());
            return false;
        }
        done += n;
    }
    return true;
}

FILE * file_stdio(file * f) {
    const int fd = _open_osfhandle((intptr_t) f->h, _O_APPEND | _O_BINARY);
    FILE * out = fd >= 0 ? _fdopen(fd, "ab") : nullptr;
    if (!out && fd >= 0) _close(fd);          // the descriptor owns the handle
    if (!out && fd < 0) CloseHandle(f->h);
    delete f;
    return out;
}

bool file_close(file * f, std::string * why) {
    const bool ok = CloseHandle(f->h) != 0;
    if (!ok) *why = "cannot be written: " + error_text(GetLastError());
    delete f;
    return ok;
}

std::string real_path(const std::string & path) {
    HANDLE h = CreateFileW(wide(path).c_str(), 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                           OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr);
    if (h == INVALID_HANDLE_VALUE) return path;
    std::wstring buf(MAX_PATH, L'\0');
    DWORD n = GetFinalPathNameByHandleW(h, &buf[0], (DWORD) buf.size(), FILE_NAME_NORMALIZED);
    if (n >= buf.size()) {
        buf.resize(n + 1);
        n = GetFinalPathNameByHandleW(h, &buf[0], (DWORD) buf.size(), FILE_NAME_NORMALIZED);
    }
    CloseHandle(h);
    if (n == 0 || n >= buf.size()) return path;
    std::string s = utf8(buf.c_str(), (int) n);
    if (s.rfind("\\\\?\\", 0) == 0 && s.rfind("\\\\?\\UNC\\", 0) != 0) s = s.substr(4);   // "\\?\C:\..." -> "C:\..."
    return s;
}

bool replace_file(const std::string & from, const std::string & to, std::string * why) {
    if (MoveFileExW(wide(from).c_str(), wide(to).c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) return true;
    *why = error_text(GetLastError());
    return false;
}

bool remove_file(const std::string & path) { return DeleteFileW(wide(path).c_str()) != 0; }

library * library_open(const std::string & path, std::string * why) {
    // the library's own folder is searched for its dependencies, as for a library beside a program
    HMODULE m = LoadLibraryExW(wide(path).c_str(), nullptr,
                               LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_DEFAULT_DIRS);
    if (!m) {
        *why = error_text(GetLastError());
        return nullptr;
    }
    return new library{m};
}

void * library_symbol(library * lib, const char * name) {
    return reinterpret_cast<void *>(GetProcAddress(lib->module, name));
}

const char * library_suffix() { return ".dll"; }

int process_id() { return (int) GetCurrentProcessId(); }

int cores_available() {
    DWORD_PTR process = 0, system = 0;
    int n = 0;
    if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system)) {
        for (; process; process &= process - 1) ++n;
    }
    if (n <= 0) n = (int) std::thread::hardware_concurrency();
    return n > 0 ? n : 1;
}

std::string cpu_model_name() {
    HKEY key;
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, L"HARDWARE\\DESCRIPTION\\System\\CentralProcessor\\0", 0, KEY_READ, &key) !=
        ERROR_SUCCESS) {
        return "?";
    }
    wchar_t buf[256];
    DWORD bytes = sizeof(buf), type = 0;
    const LONG rc = RegQueryValueExW(key, L"ProcessorNameString", nullptr, &type, (LPBYTE) buf, &bytes);
    RegCloseKey(key);
    if (rc != ERROR_SUCCESS || type != REG_SZ) return "?";
    buf[sizeof(buf) / sizeof(buf[0]) - 1] = L'\0';
    std::string s = utf8(buf);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s.empty() ? "?" : s;
}

size_t memory_available() {
    MEMORYSTATUSEX m{};
    m.dwLength = sizeof(m);
    return GlobalMemoryStatusEx(&m) ? (size_t) m.ullAvailPhys : SIZE_MAX;
}

size_t page_size() {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwPageSize;
}

void * aligned_alloc_zeroed(size_t align, size_t bytes) {
    void * p = _aligned_malloc(bytes ? bytes : 1, align);
    if (p) std::memset(p, 0, bytes);
    return p;
}

void aligned_free(void * p) { _aligned_free(p); }

void precise_timed_waits() {}

// ntdll's RtlDllShutdownInProgress: true while the loader runs the libraries' detach code for a process that is
// ending (ExitProcess has then ended every other thread); false when a library is merely unloaded.
bool threads_ended_at_exit() {
    using fn_t = BOOLEAN(WINAPI *)(void);
    static const fn_t fn = reinterpret_cast<fn_t>(
        reinterpret_cast<void *>(GetProcAddress(GetModuleHandleW(L"ntdll.dll"), "RtlDllShutdownInProgress")));
    return fn && fn();
}

} // namespace xdna::os
