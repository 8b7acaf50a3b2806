// The load-time check: the backend interface has no stable ABI, so the plugin loads only into the ggml it was built
// for. Strict on ggml_version(); the commit string is not compared (a tarball or npm build reports another commit, or
// none, for the same release). Cheap sanity checks catch a mismatched build that reports the same version: the op names
// of MUL_MAT and MUL_MAT_ID (the headers' enum values must name them in the library), the tensor overhead (the size of
// struct ggml_tensor) and the names, block sizes and type sizes of the weight types the plugin converts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

struct ggml_type_fact {
    int         type;        // enum ggml_type value of the headers the plugin was compiled with
    std::string name;        // ggml_type_name
    int64_t     block = 0;   // ggml_blck_size
    size_t      size  = 0;   // ggml_type_size
};

struct ggml_facts {
    std::string version;           // ggml_version()
    std::string mul_mat;           // ggml_op_name(GGML_OP_MUL_MAT)
    std::string mul_mat_id;        // ggml_op_name(GGML_OP_MUL_MAT_ID)
    size_t      tensor_overhead = 0;
    std::vector<ggml_type_fact> types;
};

// What the plugin was built for (the generated xdna_ggml_compat.h).
ggml_facts ggml_built_facts();

// What the ggml loaded in this process says, asked for the same types as `built`.
ggml_facts ggml_loaded_facts(const ggml_facts & built);

// Whether the plugin may load into `loaded`; if not, `why_not` gets one line (no newline) saying why and what to do.
bool ggml_matches(const ggml_facts & built, const ggml_facts & loaded, std::string * why_not = nullptr);

}  // namespace xdna
