// docs/configuration.md has one row per variable of the code's table, with the same default, and no other variable.
#include "config/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <string>

TEST(config_docs, every_variable_is_documented_with_its_default) {
    std::ifstream f(XDNA_CONFIG_DOC);
    ASSERT_TRUE(f) << "cannot open " << XDNA_CONFIG_DOC;
    // | `NAME` | `default` or (empty) | effect |
    const std::regex row(R"(^\| `(GGML_XDNA_[A-Z0-9_]+)` \| (`([^`]*)`|\(empty\)) \| .+\|$)");
    std::map<std::string, std::string> documented;
    std::string line;
    while (std::getline(f, line)) {
        std::smatch m;
        if (std::regex_match(line, m, row)) {
            EXPECT_TRUE(documented.emplace(m[1], m[2] == "(empty)" ? "" : m[3].str()).second) << "twice: " << m[1];
        }
    }
    size_t n = 0;
    for (const xdna::config_var * v = xdna::config_vars; v->name; ++v, ++n) {
        auto it = documented.find(v->name);
        ASSERT_NE(it, documented.end()) << v->name << " is not documented in docs/configuration.md";
        EXPECT_EQ(it->second, v->default_value) << v->name << ": documented default differs from the code's";
    }
    EXPECT_EQ(documented.size(), n) << "docs/configuration.md documents a variable the code does not read";
}
