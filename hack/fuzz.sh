#!/usr/bin/env bash
# Builds the libFuzzer targets of test/fuzz (clang, ASan+UBSan, in _output/build-fuzz) and runs each for
# SECONDS (default 30), one after the other, on a corpus kept in _output/fuzz/corpus/<target> (seeded from
# test/fuzz/corpus/<target>). Prints per target the executions, executions/s, coverage (libFuzzer's cov: and
# ft: counters) and corpus size; fails when a target crashes, leaks, hangs past 10 s or breaks a property, with the
# input under _output/fuzz/crashes/ (add it to test/fuzz/corpus/<target>/ as a regression seed once fixed).
# Usage: hack/fuzz.sh [SECONDS] [TARGET...]
. "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}"
seconds="${1:-30}"
shift || true
bash hack/install-deps.sh fuzz
BUILD_DIR="${OUTPUT_DIR}/build-fuzz"
if [ ! -f "${BUILD_DIR}/build.ninja" ]; then
  cmake -S . -B "${BUILD_DIR}" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKCM_FUZZ=ON -DKCM_BUILD_TESTS=OFF >/dev/null
fi
log "building the fuzz targets"
cmake --build "${BUILD_DIR}" -j "${KCM_BUILD_JOBS:-2}" --target kcm_fuzzers
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in test/fuzz/fuzz_*.cc; do targets+=("$(basename "${f%.cc}")"); done
fi
FUZZ_DIR="${OUTPUT_DIR}/fuzz"
mkdir -p "${FUZZ_DIR}/crashes" "${FUZZ_DIR}/logs"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
rc=0
summary=()
for t in "${targets[@]}"; do
  corpus="${FUZZ_DIR}/corpus/${t}"
  mkdir -p "${corpus}"
  logf="${FUZZ_DIR}/logs/${t}.log"
  dict=""
  [ -f "test/fuzz/${t}.dict" ] && dict="test/fuzz/${t}.dict"
  log "fuzzing ${t} for ${seconds} s"
  trc=0
  "${BUILD_DIR}/bin/${t}" -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="${FUZZ_DIR}/crashes/${t}-" ${dict:+-dict="${dict}"} "${corpus}" \
    "test/fuzz/corpus/${t}" \
    >"${logf}" 2>&1 || trc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "${logf}" | tail -1)
  # Executions per second over the whole run (libFuzzer's own average_exec_per_sec reads 0 for some targets).
  rate=$(( ${execs:-0} / seconds ))
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "${logf}" | tail -1)
  line="${t}: ${execs:-?} executions, ${rate:-?}/s, ${cov:-no coverage line}"
  if [ "${trc}" -ne 0 ]; then
    line+=" -- FAILED (exit ${trc}; ${logf})"
    grep -E "ERROR: |fuzz property failed|SUMMARY|Test unit written" "${logf}" | head -5 >&2 || true
    rc=1
  fi
  summary+=("${line}")
done
log "fuzz summary (${seconds} s per target):"
printf '%s\n' "${summary[@]}"
exit "${rc}"
