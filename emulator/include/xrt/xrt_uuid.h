// Software XDNA1: xrt::uuid, the identity of an xclbin (the subset of XRT's xrt/xrt_uuid.h the project uses).
#ifndef XDNA_EMU_XRT_UUID_H
#define XDNA_EMU_XRT_UUID_H

#include <array>
#include <cstdint>
#include <string>

namespace xrt {

class uuid {
public:
    uuid() : m_bytes{} {}
    // Parses the canonical 8-4-4-4-12 hex form; throws std::invalid_argument on anything else.
    explicit uuid(const std::string& str);

    std::string to_string() const;
    const unsigned char* get() const { return m_bytes.data(); }

    explicit operator bool() const {
        for (unsigned char b : m_bytes) {
            if (b) return true;
        }
        return false;
    }
    bool operator==(const uuid& rhs) const { return m_bytes == rhs.m_bytes; }
    bool operator!=(const uuid& rhs) const { return m_bytes != rhs.m_bytes; }
    bool operator<(const uuid& rhs) const { return m_bytes < rhs.m_bytes; }

private:
    std::array<unsigned char, 16> m_bytes;
};

} // namespace xrt

#endif
