#!/usr/bin/env bash
# Measures what every change pays in build time: a clean build of the whole tree (binary, unit and e2e tests,
# benchmarks) in a fresh build folder, then a rebuild after touching one controller's .cc file, both with -j2
# (KCM_BUILD_JOBS) as hack/build.sh (benchmarks are not in the default build). Prints both, and the ten slowest translation units of the clean build.
# Usage: hack/build-time.sh [FILE_TO_TOUCH=src/controllers/deployment/sync.cc]
. "$(dirname "$0")/lib.sh"
file="${1:-src/controllers/deployment/sync.cc}"
dir="$(mktemp -d "${OUTPUT_DIR:-/tmp}/build-time.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
cmake -S "${REPO_ROOT}" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
t0=$(date +%s)
cmake --build "$dir" -j "${KCM_BUILD_JOBS:-2}" >/dev/null
t1=$(date +%s)
touch "${REPO_ROOT}/${file}"
cmake --build "$dir" -j "${KCM_BUILD_JOBS:-2}" >/dev/null
t2=$(date +%s)
echo "clean build: $((t1 - t0)) s on $(nproc) cores (-j${KCM_BUILD_JOBS:-2})"
echo "touch ${file}, rebuild and relink: $((t2 - t1)) s"
echo "slowest translation units of the clean build:"
awk 'NR>1 && $4 ~ /\.o$/ {printf "  %6.1f s  %s\n", ($2-$1)/1000, $4}' "$dir/.ninja_log" | sort -rn | head -10
