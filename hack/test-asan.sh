#!/usr/bin/env bash
# The sanitizer run: builds with ASan+UBSan (hack/build.sh --sanitize=address) or TSan (--sanitize=thread), runs the
# unit tests and the e2e suite against that kube-controller-manager, and fails on any sanitizer report (written to
# _output/<kind>-reports/).
# Usage: hack/test-asan.sh [--sanitize=address|thread] [gtest args for the e2e suite...]
. "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}"
kind=address
if [[ "${1:-}" == --sanitize=* ]]; then
  kind="${1#--sanitize=}"
  shift
fi
case "$kind" in address|thread) ;; *) die "--sanitize=${kind}: address or thread" ;; esac
bash hack/install-deps.sh
# Everything instrumented, the e2e test binary too (one build; it also drives kcm processes of its own).
bash hack/build.sh --sanitize="${kind}"
bin="${OUTPUT_DIR}/bin-${kind}"
reports="${OUTPUT_DIR}/${kind}-reports"
rm -rf "${reports}"
mkdir -p "${reports}"
# Leaks are not errors here: the process ends with _Exit on purpose on several paths (as upstream's os.Exit).
export ASAN_OPTIONS="log_path=${reports}/report:detect_leaks=0:abort_on_error=0"
export UBSAN_OPTIONS="log_path=${reports}/report:print_stacktrace=1:halt_on_error=1"
# TSan: every report is written and counted; suppressions (each with its reason) in hack/tsan.supp.
export TSAN_OPTIONS="log_path=${reports}/report:halt_on_error=0:second_deadlock_stack=1:suppressions=${REPO_ROOT}/hack/tsan.supp"
label="$([ "$kind" = address ] && echo "ASan+UBSan" || echo "TSan")"
rc=0
log "unit tests (${label})"
"${bin}/kcm_unit_tests" --gtest_brief=1 || rc=$?
log "control plane"
bash hack/build-control-plane.sh >/dev/null
log "e2e tests against the ${label} kube-controller-manager"
KCM_BINARY="${bin}/kube-controller-manager" KCM_E2E_TESTS="${bin}/kcm_e2e_tests" bash test/e2e/run.sh "$@" || rc=$?
if compgen -G "${reports}/report*" >/dev/null; then
  log "sanitizer reports: $(ls "${reports}" | wc -l) file(s) in ${reports}"
  cat "${reports}"/report* >&2
  rc=1
fi
log "sanitizer run (${label}): $([ $rc -eq 0 ] && echo passed || echo FAILED)"
exit $rc
