#!/usr/bin/env bash
# Configures and builds (RelWithDebInfo, -j2, Ninja); leaves the binary at _output/bin/kube-controller-manager.
# Extra arguments go to `cmake --build` (e.g. --target kcm_unit_tests); a first --sanitize=KIND selects a
# sanitizer build.
. "$(dirname "$0")/lib.sh"
# --sanitize=address (ASan+UBSan) or --sanitize=thread (TSan): built in _output/build-<kind>, binaries linked
# into _output/bin-<kind>.
sanitize=""
if [[ "${1:-}" == --sanitize=* ]]; then
  sanitize="${1#--sanitize=}"
  shift
fi
BUILD_DIR="${OUTPUT_DIR}/build${sanitize:+-${sanitize}}"
BIN_DIR="${OUTPUT_DIR}/bin${sanitize:+-${sanitize}}"
if [ ! -f "${BUILD_DIR}/build.ninja" ]; then
  cmake -S "${REPO_ROOT}" -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCM_SANITIZE="${sanitize}" \
    >/dev/null
fi
cmake --build "${BUILD_DIR}" -j "${KCM_BUILD_JOBS:-2}" "$@"
mkdir -p "${BIN_DIR}"
for b in kube-controller-manager kcm_unit_tests kcm_e2e_tests; do
  [ -f "${BUILD_DIR}/bin/${b}" ] && ln -sf "${BUILD_DIR}/bin/${b}" "${BIN_DIR}/${b}"
done
[ -x "${BIN_DIR}/kube-controller-manager" ] || die "build produced no kube-controller-manager"
log "built ${BIN_DIR}/kube-controller-manager"
