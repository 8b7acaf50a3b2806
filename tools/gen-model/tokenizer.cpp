#include "tokenizer.h"

#include "gguf.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace xdna {

namespace {

// llama.cpp's token types (llama_token_type): the ones this file distinguishes
constexpr int32_t TOKEN_NORMAL       = 1;
constexpr int32_t TOKEN_CONTROL      = 3;
constexpr int32_t TOKEN_USER_DEFINED = 4;
constexpr int32_t TOKEN_UNUSED       = 5;

struct gguf_deleter {
    void operator()(gguf_context * c) const { gguf_free(c); }
};
using gguf_ptr = std::unique_ptr<gguf_context, gguf_deleter>;

bool starts_with(const std::string & s, const char * p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string & s, const char * p) {
    const size_t n = strlen(p);
    return s.size() >= n && s.compare(s.size() - n, n, p) == 0;
}

// Copies one scalar or array value, under the same key.
void copy_kv(gguf_context * dst, const gguf_context * src, int64_t id) {
    const char * key = gguf_get_key(src, id);
    switch (gguf_get_kv_type(src, id)) {
        case GGUF_TYPE_UINT8:   gguf_set_val_u8  (dst, key, gguf_get_val_u8  (src, id)); break;
        case GGUF_TYPE_INT8:    gguf_set_val_i8  (dst, key, gguf_get_val_i8  (src, id)); break;
        case GGUF_TYPE_UINT16:  gguf_set_val_u16 (dst, key, gguf_get_val_u16 (src, id)); break;
        case GGUF_TYPE_INT16:   gguf_set_val_i16 (dst, key, gguf_get_val_i16 (src, id)); break;
        case GGUF_TYPE_UINT32:  gguf_set_val_u32 (dst, key, gguf_get_val_u32 (src, id)); break;
        case GGUF_TYPE_INT32:   gguf_set_val_i32 (dst, key, gguf_get_val_i32 (src, id)); break;
        case GGUF_TYPE_FLOAT32: gguf_set_val_f32 (dst, key, gguf_get_val_f32 (src, id)); break;
        case GGUF_TYPE_UINT64:  gguf_set_val_u64 (dst, key, gguf_get_val_u64 (src, id)); break;
        case GGUF_TYPE_INT64:   gguf_set_val_i64 (dst, key, gguf_get_val_i64 (src, id)); break;
        case GGUF_TYPE_FLOAT64: gguf_set_val_f64 (dst, key, gguf_get_val_f64 (src, id)); break;
        case GGUF_TYPE_BOOL:    gguf_set_val_bool(dst, key, gguf_get_val_bool(src, id)); break;
        case GGUF_TYPE_STRING:  gguf_set_val_str (dst, key, gguf_get_val_str (src, id)); break;
        case GGUF_TYPE_ARRAY: {
            const size_t n = gguf_get_arr_n(src, id);
            const gguf_type t = gguf_get_arr_type(src, id);
            if (t == GGUF_TYPE_STRING) {
                std::vector<const char *> v(n);
                for (size_t i = 0; i < n; ++i) {
                    v[i] = gguf_get_arr_str(src, id, i);
                }
                gguf_set_arr_str(dst, key, v.data(), n);
            } else if (t == GGUF_TYPE_ARRAY) {
                throw std::runtime_error(std::string("tokenizer key ") + key + " holds nested arrays, not supported");
            } else {
                gguf_set_arr_data(dst, key, t, gguf_get_arr_data(src, id), n);
            }
            break;
        }
        default:
            throw std::runtime_error(std::string("tokenizer key ") + key + " has an unknown type");
    }
}

// The tokenizer arrays, edited in memory before they are written.
struct vocab_arrays {
    std::vector<std::string> tokens;
    std::vector<int32_t>     types;
    std::vector<float>       scores;   // empty when the file has none
    std::vector<std::string> merges;   // empty when the file has none
};

int64_t require_key(const gguf_context * c, const char * key, const std::string & path) {
    const int64_t id = gguf_find_key(c, key);
    if (id < 0) {
        throw std::runtime_error(path + ": no " + key + " (not a tokenizer file)");
    }
    return id;
}

std::vector<std::string> read_strs(const gguf_context * c, int64_t id) {
    std::vector<std::string> v(gguf_get_arr_n(c, id));
    for (size_t i = 0; i < v.size(); ++i) {
        v[i] = gguf_get_arr_str(c, id, i);
    }
    return v;
}

void pad(vocab_arrays & a, int64_t n_vocab) {
    for (int64_t i = (int64_t) a.tokens.size(); i < n_vocab; ++i) {
        a.tokens.push_back("[PAD" + std::to_string(i) + "]");
        a.types.push_back(TOKEN_UNUSED);
        if (!a.scores.empty()) {
            a.scores.push_back(-1e4f);
        }
    }
}

// Keeps the named control tokens and the first ordinary tokens; returns old id -> new id.
std::unordered_map<int64_t, int64_t> cut(vocab_arrays & a, int64_t n_vocab, const std::set<int64_t> & referenced) {
    std::vector<int64_t> special;
    for (int64_t i = 0; i < (int64_t) a.tokens.size(); ++i) {
        const std::string & t = a.tokens[i];
        const bool named = (a.types[i] == TOKEN_CONTROL || a.types[i] == TOKEN_USER_DEFINED) &&
                           !starts_with(t, "[PAD") && !starts_with(t, "<|reserved_special_token");
        if (referenced.count(i) || named) {
            special.push_back(i);
        }
    }
    if ((int64_t) special.size() > n_vocab / 4) {
        special.resize(n_vocab / 4);   // keep room for ordinary tokens; referenced ones come first below
    }
    for (int64_t id : referenced) {
        if (std::find(special.begin(), special.end(), id) == special.end()) {
            special.insert(special.begin(), id);
            special.pop_back();
        }
    }
    const std::unordered_set<int64_t> special_set(special.begin(), special.end());

    std::vector<int64_t> keep;
    const int64_t n_ordinary = n_vocab - (int64_t) special.size();
    for (int64_t i = 0; i < (int64_t) a.tokens.size() && (int64_t) keep.size() < n_ordinary; ++i) {
        if (!special_set.count(i) && a.types[i] != TOKEN_UNUSED) {
            keep.push_back(i);
        }
    }
    keep.insert(keep.end(), special.begin(), special.end());

    std::unordered_map<int64_t, int64_t> remap;
    vocab_arrays out;
    for (int64_t i : keep) {
        remap[i] = (int64_t) out.tokens.size();
        out.tokens.push_back(a.tokens[i]);
        out.types.push_back(a.types[i]);
        if (!a.scores.empty()) {
            out.scores.push_back(a.scores[i]);
        }
    }
    // a merge survives when both parts and the merged token are all kept
    std::unordered_set<std::string> kept_text(out.tokens.begin(), out.tokens.end());
    for (const std::string & m : a.merges) {
        const size_t sp = m.find(' ', 1);
        if (sp == std::string::npos) {
            continue;
        }
        const std::string l = m.substr(0, sp), r = m.substr(sp + 1);
        if (kept_text.count(l) && kept_text.count(r) && kept_text.count(l + r)) {
            out.merges.push_back(m);
        }
    }
    a = std::move(out);
    pad(a, n_vocab);
    return remap;
}

} // namespace

std::string bpe_token_bytes(const std::string & text) {
    // code point -> byte of the byte-level alphabet
    static const std::vector<int> byte_of = [] {
        std::vector<int> m(512, -1);
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
            m[printable ? b : 256 + extra++] = b;
        }
        return m;
    }();
    std::string out;
    for (size_t i = 0; i < text.size();) {
        // decode one UTF-8 code point of the token text
        const unsigned char c = text[i];
        int cp = -1, len = 1;
        if (c < 0x80) {
            cp = c;
        } else if ((c & 0xE0) == 0xC0 && i + 1 < text.size()) {
            cp = ((c & 0x1F) << 6) | (text[i + 1] & 0x3F);
            len = 2;
        }
        if (cp < 0 || cp >= (int) byte_of.size() || byte_of[cp] < 0) {
            return {};
        }
        out.push_back((char) byte_of[cp]);
        i += len;
    }
    return out;
}

bool is_valid_utf8(const std::string & s) {
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = s[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) { ++i; continue; }
        else if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
        else return false;
        if (i + n >= s.size()) return false;   // truncated sequence
        for (size_t k = 1; k <= n; ++k) {
            const unsigned char d = s[i + k];
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        // no overlong forms, no surrogates, nothing past U+10FFFF
        static const uint32_t min_cp[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
        i += n + 1;
    }
    return true;
}

std::vector<uint8_t> copy_tokenizer(gguf_context * dst, const std::string & vocab_path, int64_t n_vocab, bool add_bos) {
    gguf_init_params params = { /*no_alloc =*/ true, /*ctx =*/ nullptr };
    gguf_ptr src(gguf_init_from_file(vocab_path.c_str(), params));
    if (!src) {
        throw std::runtime_error(vocab_path + ": cannot read as GGUF (set --llama-src or LLAMA_SRC to the llama.cpp source tree)");
    }
    const gguf_context * s = src.get();

    vocab_arrays a;
    a.tokens = read_strs(s, require_key(s, "tokenizer.ggml.tokens", vocab_path));
    {
        const int64_t id = require_key(s, "tokenizer.ggml.token_type", vocab_path);
        const int32_t * p = (const int32_t *) gguf_get_arr_data(s, id);
        a.types.assign(p, p + gguf_get_arr_n(s, id));
    }
    if (const int64_t id = gguf_find_key(s, "tokenizer.ggml.scores"); id >= 0) {
        const float * p = (const float *) gguf_get_arr_data(s, id);
        a.scores.assign(p, p + gguf_get_arr_n(s, id));
    }
    if (const int64_t id = gguf_find_key(s, "tokenizer.ggml.merges"); id >= 0) {
        a.merges = read_strs(s, id);
    }
    const std::string model = gguf_get_val_str(s, require_key(s, "tokenizer.ggml.model", vocab_path));
    if (a.types.size() != a.tokens.size() || (!a.scores.empty() && a.scores.size() != a.tokens.size())) {
        throw std::runtime_error(vocab_path + ": token, type and score arrays differ in length");
    }

    // the special token ids (bos, eos, padding, ...) the tokenizer keys point at
    std::map<std::string, int64_t> id_keys;
    std::set<int64_t> referenced;
    for (int64_t i = 0; i < gguf_get_n_kv(s); ++i) {
        const std::string key = gguf_get_key(s, i);
        if (starts_with(key, "tokenizer.") && ends_with(key, "_token_id") && gguf_get_kv_type(s, i) == GGUF_TYPE_UINT32) {
            id_keys[key] = gguf_get_val_u32(s, i);
            referenced.insert(gguf_get_val_u32(s, i));
        }
    }

    std::unordered_map<int64_t, int64_t> remap;
    if (n_vocab >= (int64_t) a.tokens.size()) {
        pad(a, n_vocab);
    } else {
        if (model != "gpt2") {
            throw std::runtime_error(vocab_path + ": cutting a '" + model + "' tokenizer is not supported, only byte-level BPE (gpt2)");
        }
        if (n_vocab < 512) {
            throw std::runtime_error("vocabulary of " + std::to_string(n_vocab) + " tokens is too small (at least 512: 256 bytes plus merges)");
        }
        remap = cut(a, n_vocab, referenced);
    }

    // every other tokenizer key as it is; the edited arrays and ids replace theirs
    for (int64_t i = 0; i < gguf_get_n_kv(s); ++i) {
        const std::string key = gguf_get_key(s, i);
        if (starts_with(key, "tokenizer.")) {
            copy_kv(dst, s, i);
        }
    }
    std::vector<const char *> ptrs;
    for (const auto & t : a.tokens) {
        ptrs.push_back(t.c_str());
    }
    gguf_set_arr_str(dst, "tokenizer.ggml.tokens", ptrs.data(), ptrs.size());
    gguf_set_arr_data(dst, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, a.types.data(), a.types.size());
    if (!a.scores.empty()) {
        gguf_set_arr_data(dst, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, a.scores.data(), a.scores.size());
    }
    if (gguf_find_key(s, "tokenizer.ggml.merges") >= 0) {
        ptrs.clear();
        for (const auto & m : a.merges) {
            ptrs.push_back(m.c_str());
        }
        gguf_set_arr_str(dst, "tokenizer.ggml.merges", ptrs.data(), ptrs.size());
    }
    if (!remap.empty()) {
        for (const auto & [key, old_id] : id_keys) {
            gguf_set_val_u32(dst, key.c_str(), (uint32_t) remap.at(old_id));
        }
    }
    gguf_set_val_bool(dst, "tokenizer.ggml.add_bos_token", add_bos);

    std::vector<uint8_t> plain(a.tokens.size(), 0);
    for (size_t i = 0; i < a.tokens.size(); ++i) {
        if (a.types[i] != TOKEN_NORMAL) {
            continue;
        }
        const std::string bytes = model == "gpt2" ? bpe_token_bytes(a.tokens[i]) : a.tokens[i];
        plain[i] = !bytes.empty() && is_valid_utf8(bytes);
    }
    return plain;
}

} // namespace xdna
