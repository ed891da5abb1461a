#!/usr/bin/env bash
# The sanitizer run: builds with ASan+UBSan (hack/build.sh --sanitize=address), runs the unit tests and the e2e
# suite against that kube-controller-manager, and fails on any sanitizer report (written to _output/asan/).
# Usage: hack/test-asan.sh [gtest args for the e2e suite...]
. "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}"
bash hack/install-deps.sh
# Everything instrumented, the e2e test binary too (one build; it also drives kcm processes of its own).
bash hack/build.sh --sanitize=address
reports="${OUTPUT_DIR}/asan"
rm -rf "${reports}"
mkdir -p "${reports}"
# Leaks are not errors here: the process ends with _Exit on purpose on several paths (as upstream's os.Exit).
export ASAN_OPTIONS="log_path=${reports}/report:detect_leaks=0:abort_on_error=0"
export UBSAN_OPTIONS="log_path=${reports}/report:print_stacktrace=1:halt_on_error=1"
rc=0
log "unit tests (ASan+UBSan)"
"${OUTPUT_DIR}/bin-address/kcm_unit_tests" || rc=$?
log "control plane"
bash hack/build-control-plane.sh >/dev/null
log "e2e tests against the ASan+UBSan kube-controller-manager"
KCM_BINARY="${OUTPUT_DIR}/bin-address/kube-controller-manager" KCM_E2E_TESTS="${OUTPUT_DIR}/bin-address/kcm_e2e_tests" \
  bash test/e2e/run.sh "$@" || rc=$?
if compgen -G "${reports}/report*" >/dev/null; then
  log "sanitizer reports:"
  cat "${reports}"/report* >&2
  rc=1
fi
log "sanitizer run: $([ $rc -eq 0 ] && echo passed || echo FAILED)"
exit $rc
