// The load-time check (ggml_check.h): the facts the plugin was built for against the ggml this test runs with (the
// same build: they must agree), and one line for each kind of mismatch.
#include "backend/ggml_check.h"

#include "ggml.h"

#include <gtest/gtest.h>

using namespace xdna;

namespace {

// why the plugin refuses `loaded` (and that it does)
std::string mismatch(const ggml_facts & built, const ggml_facts & loaded) {
    std::string why;
    EXPECT_FALSE(ggml_matches(built, loaded, &why));
    return why;
}

void expect_one_line(const std::string & why, const std::string & has) {
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    EXPECT_NE(why.find(has), std::string::npos) << "'" << has << "' not in: " << why;
    EXPECT_NE(why.find("not loading: rebuild the plugin against this llama.cpp"), std::string::npos) << why;
}

}  // namespace

TEST(ggml_check, the_ggml_it_was_built_against_passes) {
    const ggml_facts built = ggml_built_facts();
    const ggml_facts loaded = ggml_loaded_facts(built);
    EXPECT_EQ(built.version, ggml_version());
    EXPECT_EQ(loaded.tensor_overhead, ggml_tensor_overhead());
    ASSERT_GE(built.types.size(), 10u);
    for (const ggml_type_fact & t : built.types) {
        EXPECT_EQ(t.block, ggml_blck_size(ggml_type(t.type))) << t.name;
        EXPECT_EQ(t.size, ggml_type_size(ggml_type(t.type))) << t.name;
    }
    std::string why;
    EXPECT_TRUE(ggml_matches(built, loaded, &why)) << why;
}

TEST(ggml_check, another_version_is_refused_whatever_the_commit) {
    const ggml_facts built = ggml_built_facts();
    ggml_facts other = ggml_loaded_facts(built);
    other.version = "0.19.0";
    const std::string why = mismatch(built, other);
    expect_one_line(why, "built for ggml " + built.version + " but loaded into ggml 0.19.0");
    EXPECT_NE(why.find("one of llama.cpp b10361 to v0.5.0"), std::string::npos) << why;
}

TEST(ggml_check, same_version_another_build_is_refused) {
    const ggml_facts built = ggml_built_facts();
    {
        ggml_facts l = ggml_loaded_facts(built);
        l.mul_mat = "MUL_MAT_ID";
        expect_one_line(mismatch(built, l), "its op MUL_MAT is MUL_MAT_ID");
    }
    {
        ggml_facts l = ggml_loaded_facts(built);
        l.tensor_overhead += 16;
        expect_one_line(mismatch(built, l), "its tensor overhead is " + std::to_string(built.tensor_overhead + 16));
    }
    {
        ggml_facts l = ggml_loaded_facts(built);
        l.types[3].name = "NONE";
        expect_one_line(mismatch(built, l), "is NONE, not " + built.types[3].name);
    }
    {
        ggml_facts l = ggml_loaded_facts(built);
        l.types.back().size += 2;
        expect_one_line(mismatch(built, l), "its type " + built.types.back().name + " has blocks of");
    }
    {
        ggml_facts l = ggml_loaded_facts(built);
        l.types.pop_back();
        expect_one_line(mismatch(built, l), "missing");
    }
}
