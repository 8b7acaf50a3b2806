// Weight types of generated models: F32/F16/BF16 are written directly, the rest through the pinned llama-quantize.
#pragma once

#include "specs.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

struct quant_choice {
    std::string name;                    // canonical type name, used in the cache key
    bool        direct = false;          // written by the generator itself
    ggml_type   direct_type = GGML_TYPE_F16;
    std::string ftype;                   // llama-quantize's type argument
    std::vector<std::string> extra_args; // extra llama-quantize options
};

// Throws std::runtime_error for an unknown type or one that does not apply to the model.
quant_choice resolve_quant_type(const std::string & type, const model_spec & spec);

// "F32 F16 BF16 Q8_0 ..." for the usage text.
std::string quantize_type_names();

// Runs llama-quantize base -> out; on failure removes out and throws with the tail of its log.
void run_quantize(const std::string & exe, const std::string & base, const std::string & out, const quant_choice & q,
                  bool verbose);

} // namespace xdna
