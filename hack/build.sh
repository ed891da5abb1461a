#!/usr/bin/env bash
# Configures and builds (RelWithDebInfo, -j2, Ninja); leaves the binary at _output/bin/kube-controller-manager.
# Extra arguments go to `cmake --build` (e.g. --target kcm_unit_tests).
. "$(dirname "$0")/lib.sh"
BUILD_DIR="${OUTPUT_DIR}/build"
if [ ! -f "${BUILD_DIR}/build.ninja" ]; then
  cmake -S "${REPO_ROOT}" -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "${BUILD_DIR}" -j "${KCM_BUILD_JOBS:-2}" "$@"
mkdir -p "${OUTPUT_DIR}/bin"
for b in kube-controller-manager kcm_unit_tests kcm_e2e_tests; do
  [ -f "${BUILD_DIR}/bin/${b}" ] && ln -sf "${BUILD_DIR}/bin/${b}" "${OUTPUT_DIR}/bin/${b}"
done
[ -x "${OUTPUT_DIR}/bin/kube-controller-manager" ] || die "build produced no kube-controller-manager"
log "built ${OUTPUT_DIR}/bin/kube-controller-manager"
