#include "backend/ggml_check.h"

#include "ggml.h"
#include "xdna_ggml_compat.h"

namespace xdna {

ggml_facts ggml_built_facts() {
    struct fact { int type; const char * name; long long block; size_t size; };
    static const fact table[] = { XDNA_GGML_TYPE_FACTS };
    ggml_facts f;
    f.version         = XDNA_GGML_VERSION;
    f.mul_mat         = "MUL_MAT";
    f.mul_mat_id      = "MUL_MAT_ID";
    f.tensor_overhead = XDNA_GGML_TENSOR_OVERHEAD;
    for (const fact & t : table) f.types.push_back({ t.type, t.name, int64_t(t.block), t.size });
    return f;
}

ggml_facts ggml_loaded_facts(const ggml_facts & built) {
    ggml_facts f;
    f.version         = ggml_version();
    f.mul_mat         = ggml_op_name(GGML_OP_MUL_MAT);
    f.mul_mat_id      = ggml_op_name(GGML_OP_MUL_MAT_ID);
    f.tensor_overhead = ggml_tensor_overhead();
    for (const ggml_type_fact & b : built.types) {
        ggml_type_fact t;
        t.type = b.type;
        t.name = ggml_type_name(ggml_type(b.type));   // bounds-checked by ggml ("NONE" past its last type)
        if (t.name == b.name) {                       // the sizes only of a type the library knows by that value
            t.block = ggml_blck_size(ggml_type(b.type));
            t.size  = ggml_type_size(ggml_type(b.type));
        }
        f.types.push_back(t);
    }
    return f;
}

bool ggml_matches(const ggml_facts & built, const ggml_facts & loaded, std::string * why_not) {
    const std::string head = "built for ggml " + built.version + " but loaded into ggml " + loaded.version;
    const std::string tail = "; not loading: rebuild the plugin against this llama.cpp, one of " XDNA_GGML_RANGE;
    if (loaded.version != built.version) {
        if (why_not) *why_not = head + tail;
        return false;
    }
    std::string why;
    if (loaded.mul_mat != built.mul_mat || loaded.mul_mat_id != built.mul_mat_id) {
        why = "its op " + built.mul_mat + " is " + loaded.mul_mat + " and " + built.mul_mat_id + " is " + loaded.mul_mat_id;
    } else if (loaded.tensor_overhead != built.tensor_overhead) {
        why = "its tensor overhead is " + std::to_string(loaded.tensor_overhead) + " bytes, not " +
              std::to_string(built.tensor_overhead);
    } else {
        for (size_t i = 0; i < built.types.size() && why.empty(); ++i) {
            const ggml_type_fact & b = built.types[i];
            const ggml_type_fact * l = i < loaded.types.size() ? &loaded.types[i] : nullptr;
            if (!l || l->name != b.name) {
                why = "its type " + std::to_string(b.type) + " is " + (l ? l->name : std::string("missing")) + ", not " + b.name;
            } else if (l->block != b.block || l->size != b.size) {
                why = "its type " + b.name + " has blocks of " + std::to_string(l->block) + " values in " +
                      std::to_string(l->size) + " bytes, not " + std::to_string(b.block) + " in " + std::to_string(b.size);
            }
        }
    }
    if (why.empty()) return true;
    if (why_not) *why_not = head + " (same version, another build: " + why + ")" + tail;
    return false;
}

}  // namespace xdna
