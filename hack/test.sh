#!/usr/bin/env bash
# Runs everything: install deps if missing, build, unit tests, build the control plane if stale, e2e.
# Exits non-zero on any failure; prints how many unit and e2e tests ran.
. "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}"
t0=$(date +%s)
bash hack/install-deps.sh
bash hack/build.sh
# docs/flags.md and the typed options must match the code that reads them.
gen_rc=0
python3 hack/gen-typed-options.py "${REPO_ROOT}" --check || gen_rc=$?

counts() {  # counts FILE: "<passed> <failed>" from a GoogleTest JSON report
  python3 - "$1" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("0 0"); sys.exit()
failed = sum(1 for s in r.get("testsuites", []) for t in s.get("testsuite", []) if t.get("failures"))
run = sum(1 for s in r.get("testsuites", []) for t in s.get("testsuite", []) if t.get("result") == "COMPLETED" and t.get("status") == "RUN")
print(run - failed, failed)
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

log "e2e tests"
rm -f "${OUTPUT_DIR}/e2e-results.json"
e2e_rc=0
bash test/e2e/run.sh || e2e_rc=$?
read -r e2e_pass e2e_fail < <(counts "${OUTPUT_DIR}/e2e-results.json")

# A small set of differential scenarios (ours beside upstream kcm, docs/differential.md) and the harness's
# self-test; `hack/diff-upstream.sh all` runs every scenario. deployment-rollout stays out of this set: the sizes of
# a rollout's intermediate steps (its ScalingReplicaSet Events, the RS generation) depend on when pods become
# available relative to the syncs, so two runs of the same binary can differ there.
log "differential scenarios beside upstream"
diff_pass=0 diff_fail=0
for s in --self-test namespace-basics replication-adoption gc-propagation csr-signing endpoints-basics endpointslice-basics \
  mirroring-servicecidr topology-hints disruption-basics ttl-after-finished job-basics cronjob-basics daemonset-basics statefulset-basics \
  resourcequota-basics; do
  if bash hack/diff-upstream.sh "$s"; then diff_pass=$(( diff_pass + 1 )); else diff_fail=$(( diff_fail + 1 )); fi
done

echo
echo "unit: ${unit_pass} passed, ${unit_fail} failed"
echo "e2e: ${e2e_pass} passed, ${e2e_fail} failed"
echo "diff: ${diff_pass} passed, ${diff_fail} failed"
echo "took $(( $(date +%s) - t0 )) s"
total_fail=$(( unit_fail + e2e_fail + diff_fail ))
[ $unit_rc -ne 0 ] && [ "$unit_fail" -eq 0 ] && total_fail=$(( total_fail + 1 ))  # crashed before reporting
[ $e2e_rc -ne 0 ] && [ "$e2e_fail" -eq 0 ] && total_fail=$(( total_fail + 1 ))
[ $gen_rc -ne 0 ] && total_fail=$(( total_fail + 1 ))
echo "$(( unit_pass + e2e_pass + diff_pass )) passed, ${total_fail} failed"
[ $unit_rc -eq 0 ] && [ $e2e_rc -eq 0 ] && [ $gen_rc -eq 0 ] && [ $diff_fail -eq 0 ]
