#!/usr/bin/env bash
# Refreshes test/golden/upstream-help.txt from the pinned upstream kube-controller-manager and regenerates
# src/options/flag_table.cc from it, then the typed options and docs/flags.md.
. "$(dirname "$0")/lib.sh"
bin="$(bash "${REPO_ROOT}/hack/build-control-plane.sh")"
"${bin}/kube-controller-manager" --help > "${REPO_ROOT}/test/golden/upstream-help.txt" 2>&1 || true
python3 "${REPO_ROOT}/hack/gen-flags.py" "${REPO_ROOT}/test/golden/upstream-help.txt" "${REPO_ROOT}/src/options/flag_table.cc"
python3 "${REPO_ROOT}/hack/gen-feature-gates.py" "$(go env GOMODCACHE)" "${KUBERNETES_VERSION}" "${REPO_ROOT}/src/options/feature_gate_table.cc"
python3 "${REPO_ROOT}/hack/gen-typed-options.py" "${REPO_ROOT}"
