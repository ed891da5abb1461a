#!/usr/bin/env bash
# Builds the container image without pulling a base: a root filesystem made of the stripped binary
# (hack/release.sh), exactly the shared libraries it loads (ldd) and the dynamic loader, the CA bundle, the time
# zone database (CronJob .spec.timeZone; upstream embeds Go's), /etc/passwd|group|nsswitch.conf and /tmp. Written as
# an OCI layout and archive by hack/oci-image.py:
#   _output/image/oci/                          OCI image layout
#   _output/image/kube-controller-manager.oci.tar   the same as an oci-archive (podman load -i, ctr images import)
# The image is named kcm-cpp/kube-controller-manager:<pinned Kubernetes version>, as deploy/kube-controller-manager.yaml
# references it (KCM_IMAGE overrides).
# --run: also loads it into podman (installing podman and runc from Debian when missing) and runs
#   podman run --rm IMAGE --version
# This sandbox forbids raising rlimits and runs hybrid cgroups: podman runs with runc and low ulimits here.
. "$(dirname "$0")/lib.sh"
run=0
[ "${1:-}" = "--run" ] && run=1
IMAGE="${KCM_IMAGE:-kcm-cpp/kube-controller-manager:${KUBERNETES_VERSION}}"
OUT="${OUTPUT_DIR}/image"
ROOTFS="${OUT}/rootfs"
"${REPO_ROOT}/hack/release.sh" 2>/dev/null
BIN="${OUTPUT_DIR}/release/kube-controller-manager"
[ -f /etc/ssl/certs/ca-certificates.crt ] || die "no /etc/ssl/certs/ca-certificates.crt (apt-get install ca-certificates)"
[ -d /usr/share/zoneinfo ] || die "no /usr/share/zoneinfo (apt-get install tzdata)"

rm -rf "${ROOTFS}"
mkdir -p "${ROOTFS}"/{usr/local/bin,usr/lib/x86_64-linux-gnu,usr/lib64,usr/lib/ssl,usr/share,etc/ssl/certs,tmp}
chmod 1777 "${ROOTFS}/tmp"
ln -s usr/lib "${ROOTFS}/lib"
ln -s usr/lib64 "${ROOTFS}/lib64"
install -m 0755 "${BIN}" "${ROOTFS}/usr/local/bin/kube-controller-manager"
# Every library the loader resolves, under the name it asks for, then the loader itself.
while read -r soname path; do
  [ -n "${path}" ] || die "ldd could not resolve ${soname}"
  install -m 0644 "$(readlink -f "${path}")" "${ROOTFS}/usr/lib/x86_64-linux-gnu/${soname}"
done < <(ldd "${BIN}" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $2 == "=>" && $3 == "not" { print $1 }')
interp="$(readelf -l "${BIN}" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')"
[ "${interp}" = "/lib64/ld-linux-x86-64.so.2" ] || die "unexpected program interpreter ${interp}"
install -m 0755 "$(readlink -f "${interp}")" "${ROOTFS}/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "${ROOTFS}/usr/lib64/ld-linux-x86-64.so.2"
install -m 0644 /etc/ssl/certs/ca-certificates.crt "${ROOTFS}/etc/ssl/certs/ca-certificates.crt"
ln -s /etc/ssl/certs "${ROOTFS}/usr/lib/ssl/certs"
ln -s /etc/ssl/certs/ca-certificates.crt "${ROOTFS}/usr/lib/ssl/cert.pem"
cp -a /usr/share/zoneinfo "${ROOTFS}/usr/share/zoneinfo"
rm -rf "${ROOTFS}/usr/share/zoneinfo/right"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' \
  > "${ROOTFS}/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "${ROOTFS}/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "${ROOTFS}/etc/nsswitch.conf"
# The root filesystem runs the binary by itself (chroot needs no runtime): a missing library fails here.
chroot "${ROOTFS}" /usr/local/bin/kube-controller-manager --version >/dev/null ||
  die "the root filesystem does not run the binary (chroot ${ROOTFS} /usr/local/bin/kube-controller-manager)"

epoch="$(git -C "${REPO_ROOT}" log -1 --format=%ct 2>/dev/null || echo 0)"
ARCHIVE="${OUT}/kube-controller-manager.oci.tar"
info="$(python3 "${REPO_ROOT}/hack/oci-image.py" "${ROOTFS}" "${OUT}/oci" "${ARCHIVE}" --ref "${IMAGE}" \
          --entrypoint /usr/local/bin/kube-controller-manager --epoch "${epoch}")"
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
compressed="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["layer_compressed_bytes"])' "${info}")"
uncompressed="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["layer_bytes"])' "${info}")"
log "image ${IMAGE}: ${ARCHIVE} (OCI layout ${OUT}/oci)"
log "image size: $(mib "${compressed}") compressed, $(mib "${uncompressed}") uncompressed; $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["manifest"])' "${info}")"

[ "${run}" = 1 ] || exit 0
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  log "installing podman and runc (Debian)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends podman runc >/dev/null
fi
podman rmi -f "${IMAGE}" >/dev/null 2>&1 || true
podman load -q -i "${ARCHIVE}" >/dev/null || die "podman load -i ${ARCHIVE} failed"
loaded="$(podman images --format '{{.Repository}}:{{.Tag}}' | grep -F "${IMAGE}" | head -1)"
[ -n "${loaded}" ] || die "podman does not list ${IMAGE} after loading it"
log "podman images: ${loaded} $(podman images --format '{{.Size}}' "${loaded}")"
out="$(podman --runtime runc run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "${loaded}" --version)" ||
  die "podman run ${loaded} --version failed"
log "podman run --rm ${loaded} --version: ${out}"
[ "${out}" = "Kubernetes ${KUBERNETES_VERSION}" ] || die "unexpected --version output: ${out}"
