// Instruction stream files (see npu_instr.h).
#include "npu_instr.h"

#include "npu_error.h"

#include "util/own_file.h"

#include <cctype>
#include <cstdio>
#include <sstream>

namespace xdna {

namespace {

// Printable ASCII or white space: what a hex text file is made of.
bool looks_like_text(const std::string& data) {
    for (char ch : data) {
        const unsigned char c = static_cast<unsigned char>(ch);
        if (!(c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c < 0x7F))) return false;
    }
    return true;
}

} // namespace

std::vector<uint32_t> npu_load_instr(const std::string& path) {
    // only a regular file, no larger than the NPU's 64 MiB instruction heap (own_file.h)
    std::string data, why;
    const file_read got = read_regular_file(path, size_t(64) << 20, &data, &why);
    if (got != file_read::ok) {
        throw npu_error(npu_errc::kernel, "instruction file '" + path + "': " +
                                              (got == file_read::absent ? "cannot open file" : why));
    }
    return npu_parse_instr(data, "instruction file '" + path + "'");
}

std::vector<uint32_t> npu_parse_instr(const std::string& data, const std::string& what) {
    auto fail = [&what](const std::string& why) -> npu_error {
        return npu_error(npu_errc::kernel, what + ": " + why);
    };
    std::vector<uint32_t> words;
    if (!data.empty() && looks_like_text(data)) {
        std::istringstream lines(data);
        std::string line;
        for (int no = 1; std::getline(lines, line); ++no) {
            size_t b = 0, e = line.size();
            while (b < e && std::isspace(static_cast<unsigned char>(line[b]))) ++b;
            while (e > b && std::isspace(static_cast<unsigned char>(line[e - 1]))) --e;
            if (b == e || line[b] == '#') continue;
            std::string tok = line.substr(b, e - b);
            if (tok.size() > 2 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X')) tok = tok.substr(2);
            if (tok.empty() || tok.size() > 8) throw fail("hex text, line " + std::to_string(no) + ": not a 32-bit hex word");
            for (char ch : tok) {
                if (!std::isxdigit(static_cast<unsigned char>(ch))) {
                    throw fail("hex text, line " + std::to_string(no) + ": not a 32-bit hex word");
                }
            }
            words.push_back(static_cast<uint32_t>(std::stoul(tok, nullptr, 16)));
        }
    } else {
        if (data.size() % 4) {
            throw fail("binary, size " + std::to_string(data.size()) + " bytes is not a whole number of 32-bit words");
        }
        words.resize(data.size() / 4);
        for (size_t i = 0; i < words.size(); ++i) {
            const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data()) + 4 * i;
            words[i] = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
        }
    }
    if (words.empty()) {
        throw fail("no instructions");
    }
    return words;
}

void npu_check_instr_header(const std::vector<uint32_t>& words, const std::string& what) {
    auto hex = [](uint32_t v) {
        char buf[16];
        std::snprintf(buf, sizeof(buf), "0x%08x", v);
        return std::string(buf);
    };
    if (words.size() < 4) {
        throw npu_error(npu_errc::kernel, what + ": " + std::to_string(words.size()) + " word(s), shorter than the "
                                                "4-word header of an NPU instruction stream (truncated?)");
    }
    const unsigned rows = words[0] >> 24, generation = (words[0] >> 16) & 0xff;
    if (generation != 3 || rows != 6) {
        const std::string device = generation == 4 ? "npu2 (Strix / Krackan)"
                                                   : "device generation " + std::to_string(generation) + ", " +
                                                         std::to_string(rows) + " rows";
        throw npu_error(npu_errc::kernel, what + ": header word 0 is " + hex(words[0]) + ", a stream for " + device +
                                              ", not npu1 (Phoenix / Hawk Point, 0x06030100): rebuild the kernels "
                                              "for npu1 (kernels/build-kernels.sh)");
    }
    const size_t bytes = words.size() * sizeof(uint32_t);
    if (words[3] != bytes) {
        throw npu_error(npu_errc::kernel, what + ": the header gives the stream " + std::to_string(words[3]) +
                                              " bytes, the file holds " + std::to_string(bytes) +
                                              (words[3] > bytes ? " (truncated)" : ""));
    }
}

} // namespace xdna
