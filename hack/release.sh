#!/usr/bin/env bash
# Release artefacts from the RelWithDebInfo build (-O2; the same objects the tests ran):
#   _output/release/kube-controller-manager        stripped
#   _output/release/kube-controller-manager.debug  its debug info (objcopy --only-keep-debug; .gnu_debuglink)
#   _output/release/kube-controller-manager-cpp_<k8s version>-<n>_amd64.deb   (CPack: binary, systemd unit, flags)
# Prints the sizes next to upstream's binary at the pin when the control plane tooling has built it.
# --install: also installs the .deb with dpkg, runs the installed binary's --version and, where systemd runs,
# starts the unit with systemctl and shows its state.
. "$(dirname "$0")/lib.sh"
install=0
[ "${1:-}" = "--install" ] && install=1
BUILD_DIR="${OUTPUT_DIR}/build"
REL="${OUTPUT_DIR}/release"
"${REPO_ROOT}/hack/build.sh" --target kube-controller-manager >/dev/null
# The binary's build identity (git describe) versions the package: <k8s version>-<commits since root>.g<hash>.
commits="$(git -C "${REPO_ROOT}" rev-list --count HEAD 2>/dev/null || echo 0)"
hash="$(git -C "${REPO_ROOT}" rev-parse --short HEAD 2>/dev/null || echo unknown)"
cmake --build "${BUILD_DIR}" --target release-binary >/dev/null
mkdir -p "${REL}"
rm -f "${REL}"/*.deb "${BUILD_DIR}"/release/*.deb
(cd "${BUILD_DIR}" && cpack -G DEB -D CPACK_DEBIAN_PACKAGE_RELEASE="${commits}.g${hash}" >/dev/null) ||
  die "cpack failed (run: cd ${BUILD_DIR} && cpack -G DEB --verbose)"
ln -sfn "${BUILD_DIR}/release/kube-controller-manager" "${REL}/kube-controller-manager"
ln -sfn "${BUILD_DIR}/release/kube-controller-manager.debug" "${REL}/kube-controller-manager.debug"
deb="$(ls "${BUILD_DIR}"/release/*.deb)"
ln -sfn "${deb}" "${REL}/$(basename "${deb}")"
size() { stat -L -c %s "$1"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
log "stripped binary: ${REL}/kube-controller-manager $(mib "$(size "${REL}/kube-controller-manager")")"
log "debug info:      ${REL}/kube-controller-manager.debug $(mib "$(size "${REL}/kube-controller-manager.debug")")"
log "package:         ${REL}/$(basename "${deb}") $(mib "$(size "${deb}")")"
upstream="${CONTROL_PLANE_BIN}/kube-controller-manager"
[ -x "${upstream}" ] || upstream=""
if [ -n "${upstream}" ]; then
  tmp="$(mktemp)"
  objcopy --strip-all "${upstream}" "${tmp}"
  log "upstream binary: ${upstream} $(mib "$(size "${upstream}")") ($(mib "$(size "${tmp}")") stripped)"
  rm -f "${tmp}"
fi
"${REL}/kube-controller-manager" --version >/dev/null || die "the stripped binary does not run"
if [ "${install}" = 1 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO dpkg -i "${deb}" >/dev/null
  log "installed: $(dpkg-query -W -f='${Package} ${Version}' kube-controller-manager-cpp)"
  log "/usr/bin/kube-controller-manager --version: $(/usr/bin/kube-controller-manager --version)"
  # The unit's command line as systemd would run it: the default flags parse (--version quits after parsing).
  out="$(env -i sh -c '. /etc/default/kube-controller-manager && exec /usr/bin/kube-controller-manager \
         $KUBE_CONTROLLER_MANAGER_ARGS --version')" || die "the unit's default flags do not parse"
  log "unit command line with its default flags: ${out}"
  if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify /lib/systemd/system/kube-controller-manager.service || die "systemd-analyze verify failed"
    log "systemd-analyze verify kube-controller-manager.service: ok"
  fi
  if [ -d /run/systemd/system ]; then
    $SUDO systemctl start kube-controller-manager
    log "systemctl: $(systemctl is-active kube-controller-manager)"
  else
    log "systemd is not running here: the unit is installed (/lib/systemd/system/kube-controller-manager.service), not started"
  fi
fi
