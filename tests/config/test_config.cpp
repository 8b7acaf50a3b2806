// The configuration table: defaults, valid values, and a clear warning plus the default for every malformed value.
#include "config/config.h"
#include "backend/device.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace xdna;

namespace {

config parse(const std::map<std::string, std::string> & env, std::vector<std::string> * warnings = nullptr) {
    return parse_config([&env](const char * name) -> const char * {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    }, warnings);
}

}  // namespace

TEST(config, defaults_match_the_table) {
    std::vector<std::string> w;
    const config c = parse({}, &w);
    EXPECT_TRUE(w.empty());
    EXPECT_FALSE(c.disable);
    EXPECT_EQ(c.min_batch, 32);
    EXPECT_LT(c.npu_share, 0.0);   // auto
    EXPECT_EQ(c.npu_cache_mb, 4096u);
    EXPECT_TRUE(c.npu_warm);
    EXPECT_FALSE(c.npu_w8);
    EXPECT_EQ(c.npu_decode, 0.0);
    EXPECT_EQ(c.npu, npu_mode::automatic);

    // every documented default parses to the same configuration
    std::map<std::string, std::string> env;
    for (const config_var * v = config_vars; v->name; ++v) env[v->name] = v->default_value;
    for (const config_var * v = test_vars; v->name; ++v) env[v->name] = v->default_value;
    const config d = parse(env, &w);
    EXPECT_TRUE(w.empty()) << w.front();
    EXPECT_EQ(d.min_batch, c.min_batch);
    EXPECT_EQ(d.npu_share, c.npu_share);
    EXPECT_EQ(d.npu_cache_mb, c.npu_cache_mb);
    EXPECT_EQ(d.npu_warm, c.npu_warm);
    EXPECT_EQ(d.npu, c.npu);
    EXPECT_EQ(d.npu_team_drives, c.npu_team_drives);
    EXPECT_EQ(d.npu_moe_min_tokens, c.npu_moe_min_tokens);
    EXPECT_EQ(d.npu_timeout_ms, c.npu_timeout_ms);
}

TEST(config, valid_values) {
    std::vector<std::string> w;
    const config c = parse({ { "GGML_XDNA_DISABLE", "1" }, { "GGML_XDNA_MIN_BATCH", "1000000" },
                             { "GGML_XDNA_NPU_SHARE", "0.4" }, { "GGML_XDNA_NPU_W8", "on" },
                             { "GGML_XDNA_NPU_DECODE", "1" }, { "GGML_XDNA_GPU", "none" },
                             { "GGML_XDNA_NPU_CACHE_MB", "5120" } }, &w);
    EXPECT_TRUE(w.empty());
    EXPECT_TRUE(c.disable);
    EXPECT_EQ(c.min_batch, 1000000);
    EXPECT_DOUBLE_EQ(c.npu_share, 0.4);
    EXPECT_TRUE(c.npu_w8);
    EXPECT_EQ(c.npu_decode, 1.0);
    EXPECT_EQ(c.gpu, "none");
    EXPECT_EQ(c.npu_cache_mb, 5120u);
    EXPECT_LT(parse({ { "GGML_XDNA_NPU_SHARE", "AUTO" } }).npu_share, 0.0);
    EXPECT_DOUBLE_EQ(parse({ { "GGML_XDNA_GPU_SHARE", "0.25" } }).gpu_share, 0.25);
    EXPECT_LT(parse({ { "GGML_XDNA_GPU_SHARE", "auto" } }).gpu_share, 0.0);
    EXPECT_LT(parse({}).gpu_share, 0.0);
    EXPECT_DOUBLE_EQ(parse({ { "GGML_XDNA_NPU_DECODE", "0.25" } }).npu_decode, 0.25);
    EXPECT_EQ(parse({ { "GGML_XDNA_NPU", "emulator" } }).npu, npu_mode::emulator);
    EXPECT_EQ(parse({ { "GGML_XDNA_NPU", "Emulator" } }).npu, npu_mode::emulator);
    EXPECT_EQ(parse({ { "GGML_XDNA_NPU", "off" } }).npu, npu_mode::off);
    EXPECT_EQ(parse({ { "GGML_XDNA_NPU", "0" } }).npu, npu_mode::off);
    EXPECT_EQ(parse({ { "GGML_XDNA_NPU", "AUTO" } }).npu, npu_mode::automatic);
}

// The tests' knobs force what the defaults decide for themselves.
TEST(config, test_knobs) {
    const config def = parse({});
    EXPECT_EQ(def.npu_team_drives, -1);   // auto
    EXPECT_EQ(def.npu_moe_min_tokens, 16);
    EXPECT_EQ(def.npu_timeout_ms, 5000);
    std::vector<std::string> w;
    const config c = parse({ { "XDNA_TEST_TEAM_DRIVES", "0" }, { "XDNA_TEST_MOE_MIN_TOKENS", "1" },
                             { "XDNA_TEST_NPU_TIMEOUT_MS", "500" } }, &w);
    EXPECT_TRUE(w.empty());
    EXPECT_EQ(c.npu_team_drives, 0);
    EXPECT_EQ(c.npu_moe_min_tokens, 1);
    EXPECT_EQ(c.npu_timeout_ms, 500);
    EXPECT_EQ(parse({ { "XDNA_TEST_TEAM_DRIVES", "on" } }).npu_team_drives, 1);
    // their names outside the users' namespace: never warned about as unknown
    EXPECT_TRUE(unknown_vars({ "XDNA_TEST_TEAM_DRIVES", "XDNA_TEST_MOE_MIN_TOKENS", "XDNA_TEST_NPU_TIMEOUT_MS" }).empty());
    // the users' names they had before are gone: each named, and ignored
    const auto u = unknown_vars({ "GGML_XDNA_NPU_TEAM_DRIVES", "GGML_XDNA_NPU_MOE_MIN_TOKENS", "GGML_XDNA_NPU_TIMEOUT_MS" });
    EXPECT_EQ(u.size(), 3u);
    const config old = parse({ { "GGML_XDNA_NPU_TEAM_DRIVES", "0" }, { "GGML_XDNA_NPU_MOE_MIN_TOKENS", "1" },
                               { "GGML_XDNA_NPU_TIMEOUT_MS", "500" } });
    EXPECT_EQ(old.npu_team_drives, def.npu_team_drives);
    EXPECT_EQ(old.npu_moe_min_tokens, def.npu_moe_min_tokens);
    EXPECT_EQ(old.npu_timeout_ms, def.npu_timeout_ms);
}

TEST(config, malformed_values_warn_and_keep_the_default) {
    const std::vector<std::pair<std::string, std::string>> bad = {
        { "GGML_XDNA_DISABLE", "maybe" },   { "GGML_XDNA_MIN_BATCH", "32x" },  { "GGML_XDNA_MIN_BATCH", "" },
        { "GGML_XDNA_NPU_SHARE", "1.5" },   { "GGML_XDNA_NPU_SHARE", "-0.1" }, { "GGML_XDNA_NPU_SHARE", "nan" },
        { "GGML_XDNA_NPU_CACHE_MB", "-1" }, { "GGML_XDNA_NPU_DECODE", "2" },
        { "GGML_XDNA_MIN_BATCH", "99999999999999999999" }, { "XDNA_TEST_TEAM_DRIVES", "2" },
        { "XDNA_TEST_MOE_MIN_TOKENS", "0" },
        { "GGML_XDNA_NPU", "emu" },         { "GGML_XDNA_NPU", "1" },          { "GGML_XDNA_GPU_SHARE", "2" },
    };
    const config def = parse({});
    for (const auto & kv : bad) {
        std::vector<std::string> w;
        const config c = parse({ kv }, &w);
        if (kv.second.empty()) {
            EXPECT_TRUE(w.empty()) << "an empty value means unset";
            continue;
        }
        ASSERT_EQ(w.size(), 1u) << kv.first << "=" << kv.second;
        EXPECT_NE(w[0].find(kv.first), std::string::npos) << w[0];
        EXPECT_NE(w[0].find("using the default"), std::string::npos) << w[0];
        EXPECT_EQ(c.disable, def.disable);
        EXPECT_EQ(c.min_batch, def.min_batch);
        EXPECT_EQ(c.npu_share, def.npu_share);
        EXPECT_EQ(c.gpu_share, def.gpu_share);
        EXPECT_EQ(c.npu_cache_mb, def.npu_cache_mb);
        EXPECT_EQ(c.npu_decode, def.npu_decode);
        EXPECT_EQ(c.npu, def.npu);
        EXPECT_EQ(c.npu_team_drives, def.npu_team_drives);
        EXPECT_EQ(c.npu_moe_min_tokens, def.npu_moe_min_tokens);
    }
}

// The software XDNA1 only when asked for: a plugin with no NPU to drive runs without an NPU worker and says why.
TEST(npu_choice, the_emulator_only_when_asked_for) {
    for (bool xrt : { false, true }) {
        const npu_choice d = choose_npu(parse({}), xrt);
        EXPECT_EQ(d.open, xrt) << "default, built " << (xrt ? "with" : "without") << " XRT";
        if (!xrt) {
            EXPECT_NE(d.why.find("built without XRT"), std::string::npos) << d.why;
            EXPECT_NE(d.why.find("GGML_XDNA_NPU=emulator"), std::string::npos) << d.why;
        }
        const npu_choice e = choose_npu(parse({ { "GGML_XDNA_NPU", "emulator" } }), xrt);
        EXPECT_EQ(e.open, !xrt) << "emulator, built " << (xrt ? "with" : "without") << " XRT";
        if (xrt) { EXPECT_NE(e.why.find("built against XRT"), std::string::npos) << e.why; }
        const npu_choice o = choose_npu(parse({ { "GGML_XDNA_NPU", "off" }, { "GGML_XDNA_NPU_SHARE", "1" } }), xrt);
        EXPECT_FALSE(o.open);
        EXPECT_NE(o.why.find("GGML_XDNA_NPU=off"), std::string::npos) << o.why;
        for (const npu_choice & c : { d, e }) EXPECT_EQ(c.why.find('\n'), std::string::npos);
    }
}

TEST(config, unknown_variables_are_named) {
    const auto u = unknown_vars({ "PATH", "GGML_XDNA_NPU_SAHRE", "GGML_XDNA_NPU_SHARE", "GGML_SCHED_DEBUG",
                                  "GGML_XDNA_CACHE", "GGML_XDNA_BUILD_DIR" });   // the last two: the scripts' own
    ASSERT_EQ(u.size(), 1u);
    EXPECT_NE(u[0].find("GGML_XDNA_NPU_SAHRE"), std::string::npos);
}

// A setting the plugin no longer reads (GGML_XDNA_NPU=off says what GGML_XDNA_NPU_DISABLE=1 said) gets its line too,
// and changes nothing: the NPU stays as the default chooses it.
TEST(config, a_removed_variable_is_named_and_ignored) {
    const auto u = unknown_vars({ "GGML_XDNA_NPU_DISABLE", "GGML_XDNA_NPU" });
    ASSERT_EQ(u.size(), 1u);
    EXPECT_NE(u[0].find("GGML_XDNA_NPU_DISABLE is not a ggml-xdna variable"), std::string::npos) << u[0];
    std::vector<std::string> w;
    const config c = parse({ { "GGML_XDNA_NPU_DISABLE", "1" } }, &w);
    EXPECT_TRUE(w.empty());
    EXPECT_EQ(c.npu, npu_mode::automatic);
}
