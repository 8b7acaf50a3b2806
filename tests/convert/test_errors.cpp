// Bad input gets false and one line that names what is wrong; nothing is written.

#include "test_util.h"

#include "ggml-backend-impl.h"

using namespace xdna_test;

namespace {

void expect_error(bool ok, const std::string & err, const char * what) {
    EXPECT_FALSE(ok);
    EXPECT_NE(err.find(what), std::string::npos) << "message \"" << err << "\" does not say \"" << what << "\"";
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

class ConvertErrors : public ::testing::Test {
  protected:
    void SetUp() override { make_plain(w, GGML_TYPE_Q4_0, 256, 16, 2, quantized_rows(GGML_TYPE_Q4_0, 256, 64, 1)); }
    weight                   w;
    std::vector<ggml_bf16_t> bf16 = std::vector<ggml_bf16_t>(16 * 256);
    std::vector<int8_t>      i8   = std::vector<int8_t>(16 * 256);
    std::vector<float>       sc   = std::vector<float>(16);
    std::string              err;
};

TEST_F(ConvertErrors, Bf16Arguments) {
    expect_error(xdna_weight_to_bf16(nullptr, 0, 0, 1, bf16.data(), 256, &err), err, "null");
    expect_error(xdna_weight_to_bf16(w.t, 2, 0, 1, bf16.data(), 256, &err), err, "expert 2");
    expect_error(xdna_weight_to_bf16(w.t, -1, 0, 1, bf16.data(), 256, &err), err, "expert -1");
    expect_error(xdna_weight_to_bf16(w.t, 0, 0, 17, bf16.data(), 256, &err), err, "row range [0, 17)");
    expect_error(xdna_weight_to_bf16(w.t, 0, 5, 4, bf16.data(), 256, &err), err, "row range [5, 4)");
    expect_error(xdna_weight_to_bf16(w.t, 0, 0, 1, nullptr, 256, &err), err, "destination is null");
    expect_error(xdna_weight_to_bf16(w.t, 0, 0, 1, bf16.data(), 255, &err), err, "row stride 255");
    EXPECT_TRUE(xdna_weight_to_bf16(w.t, 0, 3, 3, nullptr, 256, &err)) << "an empty range is fine: " << err;
    EXPECT_FALSE(xdna_weight_to_bf16(w.t, 0, 0, 17, bf16.data(), 256, nullptr)) << "no message wanted: still false";
}

TEST_F(ConvertErrors, Int8Arguments) {
    expect_error(xdna_weight_to_int8(w.t, 0, 0, 1, i8.data(), 256, nullptr, 1, &err), err, "scales is null");
    expect_error(xdna_weight_to_int8(w.t, 0, 0, 1, i8.data(), 256, sc.data(), 0, &err), err, "scale row stride 0");
    expect_error(xdna_weight_to_int8(w.t, 1, 0, 99, i8.data(), 256, sc.data(), 1, &err), err, "row range");
}

TEST_F(ConvertErrors, PlainRowsArguments) {
    std::vector<uint8_t> buf(4096);
    expect_error(xdna_weight_plain_rows(w.t, 0, 0, 1, buf.data(), 100, &err), err, "destination row of 100 bytes");
}

TEST_F(ConvertErrors, UnconvertibleTypesAndShapes) {
    ggml_init_params p   = { 16 * ggml_tensor_overhead(), nullptr, true };
    ggml_context *   ctx = ggml_init(p);
    ggml_tensor *    i32 = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 64, 8);
    ggml_set_name(i32, "ids");
    expect_error(xdna_weight_convertible(i32, &err), err, "cannot dequantize");
    EXPECT_NE(err.find("ids (i32)"), std::string::npos) << err;
    ggml_tensor * q8k = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_K, 256, 8);
    expect_error(xdna_weight_convertible(q8k, &err), err, "cannot dequantize");
    ggml_tensor * four_d = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 64, 8, 2, 2);
    expect_error(xdna_weight_convertible(four_d, &err), err, "4-D");
    ggml_tensor * f16 = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 64, 8);
    ggml_tensor * tr  = ggml_transpose(ctx, f16);
    expect_error(xdna_weight_convertible(tr, &err), err, "not contiguous");
    expect_error(xdna_weight_convertible(nullptr, &err), err, "null");
    EXPECT_TRUE(xdna_weight_convertible(f16, &err)) << err;
    expect_error(xdna_weight_to_bf16(f16, 0, 0, 1, bf16.data(), 64, &err), err, "no data");
    ggml_free(ctx);
}

TEST_F(ConvertErrors, ViewOfRepackedWeightIsRefused) {
    ASSERT_NE(cpu_device(), nullptr);
    weight      rp;
    std::string why;
    if (!make_repacked(rp, GGML_TYPE_Q4_0, 256, 16, 1, quantized_rows(GGML_TYPE_Q4_0, 256, 64, 1), &why)) {
        GTEST_SKIP() << why;
    }
    ggml_init_params p   = { 4 * ggml_tensor_overhead(), nullptr, true };
    ggml_context *   ctx = ggml_init(p);
    ggml_tensor *    v   = ggml_view_2d(ctx, rp.t, 256, 8, rp.t->nb[1], 0);
    ASSERT_EQ(ggml_backend_view_init(v), GGML_STATUS_SUCCESS);
    expect_error(xdna_weight_convertible(v, &err), err, "a view of a repacked weight");
    expect_error(xdna_weight_to_bf16(v, 0, 0, 8, bf16.data(), 256, &err), err, "a view of a repacked weight");
    ggml_free(ctx);
}

// A weight in device memory (a buffer type that is not host memory) must be refused, not dereferenced.
TEST_F(ConvertErrors, DeviceMemoryIsRefused) {
    ggml_backend_buffer_type fake_buft = {};
    fake_buft.iface.get_name           = [](ggml_backend_buffer_type_t) { return "FAKE_DEVICE"; };
    fake_buft.iface.is_host            = [](ggml_backend_buffer_type_t) { return false; };
    ggml_backend_buffer_i iface        = {};
    iface.get_base                     = [](ggml_backend_buffer_t) { return (void *) 0x1000; };
    ggml_backend_buffer_t buf          = ggml_backend_buffer_init(&fake_buft, iface, nullptr, 4096);
    ASSERT_NE(buf, nullptr);
    ggml_init_params p   = { 2 * ggml_tensor_overhead(), nullptr, true };
    ggml_context *   ctx = ggml_init(p);
    ggml_tensor *    t   = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 64, 8);
    ggml_set_name(t, "gpu_weight");
    t->buffer = buf;
    t->data   = (void *) 0x1000;
    expect_error(xdna_weight_convertible(t, &err), err, "not in host memory (buffer FAKE_DEVICE)");
    expect_error(xdna_weight_to_bf16(t, 0, 0, 8, bf16.data(), 64, &err), err, "gpu_weight (f16): not in host memory");
    ggml_free(ctx);
    ggml_backend_buffer_free(buf);
}

TEST(ConvertIsa, SetClampsToTheMachine) {
    const xdna_convert_isa best = xdna_convert_isa_best();
    EXPECT_EQ(xdna_convert_isa_set(XDNA_CONVERT_GENERIC), XDNA_CONVERT_GENERIC);
    EXPECT_EQ(xdna_convert_isa_get(), XDNA_CONVERT_GENERIC);
    EXPECT_EQ(xdna_convert_isa_set((xdna_convert_isa) 99), best);
    EXPECT_EQ(xdna_convert_isa_get(), best);
    printf("[ INFO     ] conversion kernels: %s\n", xdna_convert_isa_name(best));
}

}  // namespace
