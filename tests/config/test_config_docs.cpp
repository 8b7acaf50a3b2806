// docs/configuration.md has one row per variable of the code's table, with the same default, and no other variable;
// the tests' knobs (test_vars) likewise, in a section of their own after the users' table; and the scripts read no
// GGML_XDNA_* name the plugin would call unknown.
#include "config/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>
#include <map>
#include <regex>
#include <string>

namespace {

struct documented_row {
    std::string default_value;
    bool        in_tests_section = false;
};

}  // namespace

TEST(config_docs, every_variable_is_documented_with_its_default) {
    std::ifstream f(XDNA_CONFIG_DOC);
    ASSERT_TRUE(f) << "cannot open " << XDNA_CONFIG_DOC;
    // | `NAME` | `default` or (empty) | effect |
    const std::regex row(R"(^\| `((GGML_XDNA|XDNA_TEST)_[A-Z0-9_]+)` \| (`([^`]*)`|\(empty\)) \| .+\|$)");
    std::map<std::string, documented_row> documented;
    bool in_tests = false, tests_section = false;
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("## ", 0) == 0) in_tests = line == "## For tests, not for users";
        tests_section = tests_section || in_tests;
        std::smatch m;
        if (std::regex_match(line, m, row)) {
            const documented_row d{ m[3] == "(empty)" ? "" : m[4].str(), in_tests };
            EXPECT_TRUE(documented.emplace(m[1], d).second) << "twice: " << m[1];
        }
    }
    EXPECT_TRUE(tests_section) << "no section \"## For tests, not for users\"";
    size_t n = 0;
    for (const xdna::config_var * vars : { xdna::config_vars, xdna::test_vars }) {
        const bool tests = vars == xdna::test_vars;
        for (const xdna::config_var * v = vars; v->name; ++v, ++n) {
            EXPECT_EQ(std::string(v->name).rfind(tests ? "XDNA_TEST_" : "GGML_XDNA_", 0), 0u) << v->name;
            auto it = documented.find(v->name);
            ASSERT_NE(it, documented.end()) << v->name << " is not documented in docs/configuration.md";
            EXPECT_EQ(it->second.default_value, v->default_value) << v->name << ": documented default differs";
            EXPECT_EQ(it->second.in_tests_section, tests)
                << v->name << (tests ? ": a test's knob outside" : ": a user's variable in") << " the tests' section";
        }
    }
    EXPECT_EQ(documented.size(), n) << "docs/configuration.md documents a variable the code does not read";
}

// A GGML_XDNA_* variable a set-up or test script reads is the plugin's or one of the scripts' own that unknown_vars
// knows: else a user who sets it as the script says gets a line calling it unknown.
TEST(config_docs, every_variable_the_scripts_read_is_known) {
    const std::regex read(R"(\$\{?(GGML_XDNA_[A-Z0-9_]+))");
    std::vector<std::string> names;
    for (const auto & e : std::filesystem::directory_iterator(XDNA_SCRIPTS_DIR)) {
        if (e.path().extension() != ".sh") continue;
        std::ifstream f(e.path());
        const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        for (std::sregex_iterator it(text.begin(), text.end(), read), end; it != end; ++it) {
            names.push_back((*it)[1].str());
        }
    }
    EXPECT_GT(names.size(), 10u) << "the scripts' variables were not found in " << XDNA_SCRIPTS_DIR;
    for (const std::string & u : xdna::unknown_vars(names)) ADD_FAILURE() << u;
}
