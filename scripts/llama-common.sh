# Sourced by scripts/build-llama.sh (native) and scripts/build-llama-mingw.sh (Windows, cross-built): what both builds
# of a llama.cpp release share.

# llama_isa_flags: the GGML_* switches of the one CPU variant this machine needs (its x86 ISA extensions), one per line.
# The Windows build uses the same: its programs run here, under Wine.
llama_isa_flags() {
    [[ "$(uname -m)" == "x86_64" ]] || return 0
    local cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    local pair
    for pair in SSE42:sse4_2 AVX:avx AVX2:avx2 BMI2:bmi2 FMA:fma F16C:f16c AVX_VNNI:avx_vnni AVX512:avx512f \
                AVX512_VBMI:avx512vbmi AVX512_VNNI:avx512_vnni AVX512_BF16:avx512_bf16; do
        if [[ "$cpu_flags" == *" ${pair#*:} "* ]]; then echo "-DGGML_${pair%%:*}=ON"; else echo "-DGGML_${pair%%:*}=OFF"; fi
    done
}

# llama_fetch_release RELEASE WANT_COMMIT DIR: the llama.cpp git bundle inside npm's node-llama-cpp@RELEASE, cloned
# into DIR/src, its info file into DIR. WANT_COMMIT (empty: unchecked) is the short commit the bundle must hold.
llama_fetch_release() {
    local release=$1 want=$2 dir=$3 tmp got
    tmp=$(mktemp -d)
    command -v npm >/dev/null || { log "npm is needed to fetch llama.cpp (apt-get install npm)"; rm -rf "$tmp"; return 1; }
    (cd "$tmp" && npm pack --silent "node-llama-cpp@$release" >/dev/null) \
        || { log "npm cannot fetch node-llama-cpp@$release"; rm -rf "$tmp"; return 1; }
    tar -xzf "$tmp"/node-llama-cpp-*.tgz -C "$tmp" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json \
        || { log "node-llama-cpp@$release has no llama.cpp git bundle"; rm -rf "$tmp"; return 1; }
    git clone --quiet "$tmp/package/llama/gitRelease.bundle" "$dir/src" 2>/dev/null
    got=$(git -C "$dir/src" rev-parse --short=7 HEAD)
    if [[ -n "$want" && "$got" != "$want" ]]; then
        log "the bundle of node-llama-cpp@$release holds commit $got, expected $want"; rm -rf "$tmp"; return 1
    fi
    [[ -n "$want" ]] || log "node-llama-cpp@$release is not one this script knows: building its commit $got unchecked"
    cp "$tmp/package/llama/llama.cpp.info.json" "$dir/"
    rm -rf "$tmp"
}
