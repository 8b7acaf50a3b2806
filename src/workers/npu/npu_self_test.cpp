// The NPU worker's safe start (npu_worker::self_test): every block of the kernel set run once against its exact
// product, then a small multiply through the worker itself against an fp64 reference. A kernel set whose streams
// compute another shape or type than the manifest says, or a worker that computes wrong, keeps the NPU off.
#include "workers/npu/npu_worker.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"

#include <cstring>
#include <string>
#include <vector>

namespace xdna {

// Every block the worker may use, once, whole: small integers (exact in bf16 and int8) against their exact product.
// A kernel whose instruction stream computes another shape or type than its manifest says fails here.
static bool test_every_block(npu_runtime & rt, npu_dtype b_type, std::string * why) {
    for (const npu_design & d : rt.manifest().designs()) {
        if (d.b != b_type) continue;
        for (int idx : d.kernels) {
            const npu_kernel & k = rt.manifest().kernels()[idx];
            npu_buffer a = rt.alloc(k, npu_arg::a), b = rt.alloc(k, npu_arg::b), c = rt.alloc(k, npu_arg::c);
            auto val = [](int64_t i, int64_t salt) { return int((i * 7919 + salt * 104729) % 15) - 7; };
            // the inputs as integers, for the reference below (a 512 x 1,024 x 1,024 block checks ~12 M products)
            std::vector<int8_t> va(size_t(k.tokens) * k.k), vb(size_t(k.rows) * k.k);
            for (size_t i = 0; i < va.size(); ++i) {
                va[i] = (int8_t) val((int64_t) i, 1);
                if (k.a == npu_dtype::i8) a.as<int8_t>()[i] = va[i];
                else a.as<uint16_t>()[i] = npu_f32_to_bf16((float) va[i]);
            }
            for (size_t i = 0; i < vb.size(); ++i) {
                vb[i] = (int8_t) val((int64_t) i, 2);
                if (k.b == npu_dtype::i8) b.as<int8_t>()[i] = vb[i];
                else b.as<uint16_t>()[i] = npu_f32_to_bf16((float) vb[i]);
            }
            memset(c.data(), 0xff, c.size());
            c.sync_to_device();
            a.sync_to_device();
            b.sync_to_device();
            npu_run run = rt.launch(k, a, b, c);
            rt.wait(run);
            c.sync_from_device();
            for (int64_t t = 0; t < k.tokens; ++t) {
                for (int64_t r = 0; r < k.rows; ++r) {
                    // the block's edges and a diagonal sample: a wrong shape or type shows there, at little cost
                    const bool edge = t == 0 || t == k.tokens - 1 || r == 0 || r == k.rows - 1;
                    if (!edge && (t + r) % 61 != 0) continue;
                    const int8_t * at = &va[size_t(t) * k.k], * br = &vb[size_t(r) * k.k];
                    int32_t ref = 0;   // |ref| <= 49 * k: far within int32
                    for (int64_t i = 0; i < k.k; ++i) ref += int32_t(at[i]) * br[i];
                    const double got = k.c == npu_dtype::i32 ? double(c.as<int32_t>()[t * k.rows + r])
                                                             : double(c.as<float>()[t * k.rows + r]);
                    if (got != double(ref)) {
                        if (why) {
                            *why = "kernel '" + k.name + "' computes a wrong result at token " + std::to_string(t) +
                                   ", row " + std::to_string(r) + " (" + std::to_string(got) + " instead of " +
                                   std::to_string(ref) + "): its shape or types differ from the manifest's";
                        }
                        return false;
                    }
                }
            }
        }
    }
    return true;
}

bool npu_worker::self_test(std::string * why) {
    if (!rt->results_valid()) return true;   // the emulator's null mode computes nothing by design
    try {
        if (!test_every_block(*rt, w8 ? npu_dtype::i8 : npu_dtype::bf16, why)) return false;
    } catch (const std::exception & e) {
        if (why) *why = e.what();
        return false;
    }
    const int64_t k = 1024 + 256, rows = 256 + 8, tokens = 40;   // two K blocks and padded edges
    ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
    ggml_context * ctx = ggml_init(p);
    ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, rows);
    ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, tokens);
    ggml_tensor * y = ggml_mul_mat(ctx, w, x);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    bool ok = buf != nullptr;
    if (ok) {
        // small integers times powers of two: exact in bf16 and int8, so the fp64 reference is the exact answer
        float * wd = (float *) w->data, * xd = (float *) x->data;
        for (int64_t i = 0; i < k * rows; ++i) wd[i] = float(int((i * 7919) % 255) - 127) / 64.0f;
        for (int64_t i = 0; i < k * tokens; ++i) xd[i] = float(int((i * 104729) % 255) - 127);
        multiply m = describe_multiply(y);
        ok = describe(m);
        if (ok) {
            begin(m, { 0, rows });
            const work_record r = end();
            ok = r.ok();
            if (!ok && why) *why = r.why();
        } else if (why) {
            *why = "no kernel for the test's multiply";
        }
        double err = 0, ref2 = 0;
        for (int64_t t = 0; ok && t < tokens; ++t) {
            for (int64_t j = 0; j < rows; ++j) {
                double ref = 0;
                for (int64_t i = 0; i < k; ++i) ref += double(wd[j * k + i]) * xd[t * k + i];
                const double got = ((const float *) y->data)[t * rows + j];
                err += (got - ref) * (got - ref);
                ref2 += ref * ref;
            }
        }
        if (ok && !(err <= 1e-6 * ref2)) {
            ok = false;
            if (why) *why = "the result differs from the reference (normalized error " + std::to_string(err / ref2) + ")";
        }
    } else if (why) {
        *why = "cannot allocate the test tensors";
    }
    if (buf) ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return ok;
}

}  // namespace xdna
