#!/usr/bin/env bash
# Runs everything: install deps if missing, build, unit tests, build the control plane if stale, e2e, the
# differential scenarios and packaging, and (beside them, at low priority) a short run of every fuzz target.
# Exits non-zero on any failure; prints how many unit and e2e tests ran.
. "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}"
t0=$(date +%s)
bash hack/install-deps.sh fuzz  # clang for the fuzz targets too, before anything runs in the background
bash hack/build.sh
# docs/flags.md and the typed options must match the code that reads them.
gen_rc=0
python3 hack/gen-typed-options.py "${REPO_ROOT}" --check || gen_rc=$?

counts() {  # counts FILE...: "<passed> <failed>" from GoogleTest JSON reports (a missing report counts as none)
  python3 - "$@" <<'PY'
import json, sys
run = failed = 0
for path in sys.argv[1:]:
    try:
        r = json.load(open(path))
    except Exception:
        continue
    failed += sum(1 for s in r.get("testsuites", []) for t in s.get("testsuite", []) if t.get("failures"))
    run += sum(1 for s in r.get("testsuites", []) for t in s.get("testsuite", []) if t.get("result") == "COMPLETED" and t.get("status") == "RUN")
print(run - failed, failed)
PY
}
failed_names() {  # failed_names FILE...: the failed tests of GoogleTest JSON reports, one per line
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    try:
        r = json.load(open(path))
    except Exception:
        continue
    for s in r.get("testsuites", []):
        for t in s.get("testsuite", []):
            if t.get("failures"):
                print("  FAILED %s.%s" % (s.get("name"), t.get("name")))
PY
}

log "unit tests"
rm -f "${OUTPUT_DIR}/unit-results.json"
unit_rc=0
"${OUTPUT_DIR}/bin/kcm_unit_tests" --gtest_output="json:${OUTPUT_DIR}/unit-results.json" || unit_rc=$?
read -r unit_pass unit_fail < <(counts "${OUTPUT_DIR}/unit-results.json")
log "unit: ${unit_pass} passed, ${unit_fail} failed"

log "control plane (rebuilt only if the pin changed)"
bash hack/build-control-plane.sh >/dev/null

# The e2e suite and a small set of differential scenarios (ours beside upstream kcm, docs/differential.md) with the
# harness's self-test run at once: each on its own clusters, both mostly waiting on the apiservers, so the phase
# takes the longer of the two instead of their sum (KCM_TEST_SERIAL=1: one after the other).
# `hack/diff-upstream.sh all` runs every scenario. deployment-rollout stays out of this set: the sizes of a
# rollout's intermediate steps (its ScalingReplicaSet Events, the RS generation) depend on when pods become
# available relative to the syncs, so two runs of the same binary can differ there.
diff_phase() {
  local pass=0 fail=0 s
  for s in --self-test namespace-basics replication-adoption gc-propagation csr-signing endpoints-basics endpointslice-basics \
    mirroring-servicecidr topology-hints disruption-basics ttl-after-finished job-basics cronjob-basics daemonset-basics statefulset-basics \
    resourcequota-basics hpa-basics pv-protection pvc-protection ephemeral-volume \
    pv-binder vac-protection attach-detach volume-expand selinux-warning resource-claim \
    storage-version-migration storageversion-gc podgroup-protection vap-status device-taint resource-pool-status; do
    if bash hack/diff-upstream.sh "$s"; then pass=$(( pass + 1 )); else fail=$(( fail + 1 )); echo "  FAILED diff $s" >> "${OUTPUT_DIR}/diff-failed"; fi
  done
  echo "${pass} ${fail}" > "${OUTPUT_DIR}/diff-counts"
}
# The release artefacts as an operator gets them (test/packaging/run.sh): the .deb installed, the OCI image run by
# podman, and that image running the controllers against a cluster of its own.
packaging_phase() {
  bash test/packaging/run.sh > "${OUTPUT_DIR}/packaging.log" 2>&1 || true
  grep -E '^(PASS|FAIL) packaging/' "${OUTPUT_DIR}/packaging.log" || true
}
# The e2e suite in two lanes, each on a cluster of its own (suites share nothing across clusters; within a lane
# they are isolated by namespace as before). Lane 1 holds the long suites that wait on time (node grace periods,
# leader election, both binaries in turn), lane 2 the rest: about half of the suite's time each.
E2E_LANE1='OperatorView.*:NodeLifecycle.*:Daemon.*:PodGC.*:Namespaces.*:LeaderMigration.*:Informer.*'
E2E_RESULTS=("${OUTPUT_DIR}/e2e-results-1.json" "${OUTPUT_DIR}/e2e-results-2.json")
e2e_lanes() {
  local rc=0 p1 p2
  KCM_E2E_RESULTS="${E2E_RESULTS[0]}" bash test/e2e/run.sh --gtest_filter="${E2E_LANE1}" > "${OUTPUT_DIR}/e2e-lane1.log" 2>&1 &
  p1=$!
  KCM_E2E_RESULTS="${E2E_RESULTS[1]}" bash test/e2e/run.sh --gtest_filter="-${E2E_LANE1}" > "${OUTPUT_DIR}/e2e-lane2.log" 2>&1 &
  p2=$!
  wait "$p1" || rc=$?
  wait "$p2" || rc=$?
  cat "${OUTPUT_DIR}/e2e-lane1.log" "${OUTPUT_DIR}/e2e-lane2.log"
  return $rc
}
# The fuzz targets (hack/fuzz.sh: clang build with ASan+UBSan, then 20 s per target) run at the lowest CPU priority
# beside the phases below, which mostly wait on their clusters: they take the idle CPU, not the clusters'.
rm -f "${OUTPUT_DIR}/fuzz-phase.log"
nice -n 19 bash hack/fuzz.sh 20 > "${OUTPUT_DIR}/fuzz-phase.log" 2>&1 &
fuzz_pid=$!
rm -f "${OUTPUT_DIR}"/e2e-results*.json "${OUTPUT_DIR}"/e2e-lane*.log "${OUTPUT_DIR}/diff-counts" "${OUTPUT_DIR}/diff-failed" "${OUTPUT_DIR}/packaging.log"
e2e_rc=0
if [ -n "${KCM_TEST_SERIAL:-}" ]; then
  log "e2e tests"
  KCM_E2E_RESULTS="${E2E_RESULTS[0]}" bash test/e2e/run.sh || e2e_rc=$?
  log "differential scenarios beside upstream"
  diff_phase
  log "packaging"
  packaging_phase
else
  log "e2e tests in two lanes, and differential scenarios beside upstream at the same time (their output follows)"
  { diff_phase; packaging_phase; } > "${OUTPUT_DIR}/diff-phase.log" 2>&1 &
  diff_pid=$!
  e2e_lanes || e2e_rc=$?
  wait "${diff_pid}" || true
  log "differential scenarios beside upstream, then packaging (run during the e2e tests)"
  cat "${OUTPUT_DIR}/diff-phase.log"
fi
fuzz_rc=0
wait "${fuzz_pid}" || fuzz_rc=$?
log "fuzz targets (run beside the tests above)"
tail -n 30 "${OUTPUT_DIR}/fuzz-phase.log"
fuzz_pass="$(grep -cE '^fuzz_[a-z_]+: [0-9]+ executions' "${OUTPUT_DIR}/fuzz-phase.log" || true)"
fuzz_fail="$(grep -cE '^fuzz_[a-z_]+: .* -- FAILED' "${OUTPUT_DIR}/fuzz-phase.log" || true)"
fuzz_pass=$(( ${fuzz_pass:-0} - ${fuzz_fail:-0} ))
[ "${fuzz_rc}" -ne 0 ] && [ "${fuzz_fail:-0}" -eq 0 ] && fuzz_fail=1  # the build or the script failed
read -r e2e_pass e2e_fail < <(counts "${E2E_RESULTS[@]}")
read -r diff_pass diff_fail < "${OUTPUT_DIR}/diff-counts" 2>/dev/null || { diff_pass=0; diff_fail=1; }
pkg_pass="$(grep -c '^PASS packaging/' "${OUTPUT_DIR}/packaging.log" 2>/dev/null || true)"
pkg_fail="$(grep -c '^FAIL packaging/' "${OUTPUT_DIR}/packaging.log" 2>/dev/null || true)"
[ "$(( ${pkg_pass:-0} + ${pkg_fail:-0} ))" -eq 0 ] && pkg_fail=1  # never ran to the end

echo
echo "unit: ${unit_pass} passed, ${unit_fail} failed"
failed_names "${OUTPUT_DIR}/unit-results.json"
echo "e2e: ${e2e_pass} passed, ${e2e_fail} failed"
failed_names "${E2E_RESULTS[@]}"
for i in 1 2; do  # a lane without a report died (its cluster, or the test binary crashed): show where, here at the end
  [ -f "${E2E_RESULTS[$((i - 1))]}" ] || [ ! -f "${OUTPUT_DIR}/e2e-lane${i}.log" ] && continue
  echo "  e2e lane ${i}: no report (its cluster or the test binary died); the end of ${OUTPUT_DIR}/e2e-lane${i}.log:"
  grep -vE '^\[       OK \]|^\[ RUN      \]' "${OUTPUT_DIR}/e2e-lane${i}.log" | tail -n 15 | sed 's/^/    /'
  grep -E '^\[ RUN      \]' "${OUTPUT_DIR}/e2e-lane${i}.log" | tail -n 1 | sed 's/^/    last started: /'
done
echo "diff: ${diff_pass} passed, ${diff_fail} failed"
cat "${OUTPUT_DIR}/diff-failed" 2>/dev/null || true
echo "packaging: ${pkg_pass:-0} passed, ${pkg_fail:-0} failed"
grep '^FAIL packaging/' "${OUTPUT_DIR}/packaging.log" 2>/dev/null | sed 's/^FAIL /  FAILED /' || true
echo "fuzz: ${fuzz_pass} passed, ${fuzz_fail} failed"
grep -E '^fuzz_[a-z_]+: .* -- FAILED' "${OUTPUT_DIR}/fuzz-phase.log" 2>/dev/null | sed 's/^/  FAILED /; s/:.*//' || true
[ $gen_rc -ne 0 ] && echo "typed options: not current (hack/gen-typed-options.py . --check failed; 1 failure)"
echo "took $(( $(date +%s) - t0 )) s"
total_fail=$(( unit_fail + e2e_fail + diff_fail + pkg_fail + fuzz_fail ))
[ $unit_rc -ne 0 ] && [ "$unit_fail" -eq 0 ] && total_fail=$(( total_fail + 1 ))  # crashed before reporting
[ $e2e_rc -ne 0 ] && [ "$e2e_fail" -eq 0 ] && total_fail=$(( total_fail + 1 ))
[ $gen_rc -ne 0 ] && total_fail=$(( total_fail + 1 ))
echo "$(( unit_pass + e2e_pass + diff_pass + pkg_pass + fuzz_pass )) passed, ${total_fail} failed"
[ $unit_rc -eq 0 ] && [ $e2e_rc -eq 0 ] && [ $gen_rc -eq 0 ] && [ $diff_fail -eq 0 ] && [ "$pkg_fail" -eq 0 ] && \
  [ "$fuzz_fail" -eq 0 ]
