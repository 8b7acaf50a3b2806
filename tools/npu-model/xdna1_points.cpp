#include "xdna1_points.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace xdna {

std::vector<xdna1_point> xdna1_load_points(const std::string & path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("'" + path + "': cannot open");
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(in);
    } catch (const std::exception & e) {
        throw std::runtime_error("'" + path + "': not valid JSON: " + e.what());
    }
    std::vector<xdna1_point> out;
    const auto & pts = doc.at("points");
    for (size_t i = 0; i < pts.size(); ++i) {
        const auto & j = pts[i];
        try {
            xdna1_point p;
            p.types = j.at("types").get<std::string>();
            p.c     = j.at("c").get<std::string>();
            const auto & t = j.at("tile");
            p.tile.m = t.at(0).get<int>();
            p.tile.k = t.at(1).get<int>();
            p.tile.n = t.at(2).get<int>();
            p.tile.c_single_buffer = j.value("c_single_buffer", false);
            p.block.M = j.at("M").get<int64_t>();
            p.block.K = j.at("K").get<int64_t>();
            p.block.N = j.at("N").get<int64_t>();
            const bool i8 = p.types == "i8";
            if (!i8 && p.types != "bf16") throw std::runtime_error("types must be bf16 or i8");
            p.block.macs    = i8 ? xdna1_macs::i8 : xdna1_macs::bf16;
            p.block.a_bytes = p.block.b_bytes = i8 ? 1 : 2;
            p.block.c_bytes = p.c == "bf16" ? 2 : 4;
            if (j.contains("gflops")) {
                p.lo = p.hi = j.at("gflops").get<double>();
            } else {
                p.lo = j.at("gflops_min").get<double>();
                p.hi = j.at("gflops_max").get<double>();
            }
            p.source  = j.at("source").get<std::string>();
            p.assumed = j.value("assumed", std::string());
            out.push_back(p);
        } catch (const std::exception & e) {
            throw std::runtime_error("'" + path + "': points[" + std::to_string(i) + "]: " + e.what());
        }
    }
    return out;
}

double xdna1_point_model(const xdna1_point & p) {
    const double s = xdna1_dispatch_s + xdna1_block_seconds(p.tile, p.block);
    return 2.0 * double(p.block.M) * double(p.block.N) * double(p.block.K) / s / 1e9;
}

double xdna1_point_error(const xdna1_point & p) {
    const double v = xdna1_point_model(p);
    if (v < p.lo) return v / p.lo - 1.0;
    if (v > p.hi) return v / p.hi - 1.0;
    return 0.0;
}

std::string xdna1_points_table(const std::vector<xdna1_point> & points) {
    std::string out = "| types | tile m/k/n | M x K x N | published | model | off by | source |\n"
                      "|---|---|---|---|---|---|---|\n";
    char buf[512];
    for (const xdna1_point & p : points) {
        std::string published = p.lo == p.hi ? std::to_string(int(std::lround(p.lo)))
                                             : std::to_string(int(std::lround(p.lo))) + "-" + std::to_string(int(std::lround(p.hi)));
        std::snprintf(buf, sizeof(buf), "| %s -> %s | %d/%d/%d%s | %lld x %lld x %lld | %s | %.0f | %+.1f%% | %s%s |\n",
                      p.types.c_str(), p.c.c_str(), p.tile.m, p.tile.k, p.tile.n,
                      p.tile.c_single_buffer ? ", C single-buffered" : "", (long long) p.block.M, (long long) p.block.K,
                      (long long) p.block.N, published.c_str(), xdna1_point_model(p), 100.0 * xdna1_point_error(p),
                      p.source.c_str(), p.assumed.empty() ? "" : ("; assumed: " + p.assumed).c_str());
        out += buf;
    }
    return out;
}

}  // namespace xdna
