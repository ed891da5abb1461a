#!/usr/bin/env bash
# Runs the e2e suite on one fresh local cluster (hack/cluster.sh), torn down afterwards even on failure.
# Usage: test/e2e/run.sh [gtest args...]   Writes results to _output/e2e-results.json (KCM_E2E_RESULTS: elsewhere).
# KCM_E2E_TESTS: another build of the test binary (hack/test-asan.sh); KCM_BINARY: of kube-controller-manager.
. "$(dirname "$0")/../../hack/lib.sh"
name="e2e-$$"
cleanup() { bash "${REPO_ROOT}/hack/cluster.sh" down "$name" || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
METRICS_API=1 bash "${REPO_ROOT}/hack/cluster.sh" up "$name"
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
rc=0
results="${KCM_E2E_RESULTS:-${OUTPUT_DIR}/e2e-results.json}"
"${KCM_E2E_TESTS:-${OUTPUT_DIR}/bin/kcm_e2e_tests}" --gtest_output="json:${results}" "$@" || rc=$?
if [ $rc -ne 0 ]; then
  logs="${OUTPUT_DIR}/e2e-logs/${name}"
  mkdir -p "${logs}"; cp -r "${CLUSTER_DIR}/logs/." "${logs}/" || true
  log "e2e failed; component logs copied to ${logs}"
fi
exit $rc
