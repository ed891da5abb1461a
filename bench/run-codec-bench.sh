#!/usr/bin/env bash
# Decode/encode throughput and bytes per pod: our codec and client-go's, same file, same run, same machine.
# Usage: bench/run-codec-bench.sh [PODS=10000] [ITERATIONS=10]
. "$(dirname "$0")/../hack/lib.sh"
pods="${1:-10000}"; iters="${2:-10}"
bash "${REPO_ROOT}/hack/build.sh" --target codec_bench >/dev/null
mkdir -p "${OUTPUT_DIR}/bench"
file="${OUTPUT_DIR}/bench/pods-${pods}.json"
[ -f "$file" ] || python3 "${REPO_ROOT}/bench/gen_podlist.py" "$pods" "$file"
(cd "${REPO_ROOT}/test/cluster/k8s" && go build -o "${OUTPUT_DIR}/bench/decodebench" ./bench/decode)
echo "input: ${file} ($(du -h "$file" | cut -f1)), ${iters} iterations, $(nproc) cores, $(date -u +%Y-%m-%d)"
"${OUTPUT_DIR}/build/bin/codec_bench" "$file" "$iters"
"${OUTPUT_DIR}/bench/decodebench" "$file" "$iters"
