#!/usr/bin/env bash
# Builds the pinned test control plane from Go modules into a git-ignored cache:
#   etcd, kube-apiserver, kube-scheduler, kubectl, kwok, and upstream kube-controller-manager
#   (the reference for golden comparisons and benchmarks; never a stand-in for ours in our tests).
# Rebuilds only when test/cluster/versions.env or a test/cluster/*/go.{mod,sum} changes.
# Prints the bin folder on stdout.
. "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}/test/cluster"

grep -qE "k8s.io/kubernetes ${KUBERNETES_VERSION}( |\$)" k8s/go.mod \
  || die "test/cluster/k8s/go.mod does not pin ${KUBERNETES_VERSION}; run hack/pin-control-plane.sh"
grep -qE "go.etcd.io/etcd/server/v3 ${ETCD_VERSION}( |\$)" etcd/go.mod \
  || die "test/cluster/etcd/go.mod does not pin ${ETCD_VERSION}; run hack/pin-control-plane.sh"
grep -qE "sigs.k8s.io/kwok ${KWOK_VERSION}( |\$)" kwok/go.mod \
  || die "test/cluster/kwok/go.mod does not pin ${KWOK_VERSION}; run hack/pin-control-plane.sh"

stamp_want=$(cat versions.env */go.mod */go.sum k8s/metricsapi/*.go "${REPO_ROOT}/hack/build-control-plane.sh" |
  sha256sum | cut -d' ' -f1)
stamp_file="${CONTROL_PLANE_DIR}/.stamp"
if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp_want" ]; then
  echo "${CONTROL_PLANE_BIN}"
  exit 0
fi

mkdir -p "${CONTROL_PLANE_BIN}"
start=$(date +%s)
export CGO_ENABLED=0
build_date=$(python3 -c "import json,subprocess;print(json.loads(subprocess.check_output(['go','mod','download','-json','k8s.io/kubernetes@${KUBERNETES_VERSION}'],cwd='k8s'))['Time'])" 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
LD="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD+=" -X ${pkg}.gitVersion=${KUBERNETES_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${K8S_MINOR}"
  LD+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
done

log "building etcd ${ETCD_VERSION}"
(cd etcd && go build -trimpath -ldflags "-s -w" -o "${CONTROL_PLANE_BIN}/etcd" go.etcd.io/etcd/server/v3)
log "building kwok ${KWOK_VERSION}"
(cd kwok && go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" \
   -o "${CONTROL_PLANE_BIN}/kwok" sigs.k8s.io/kwok/cmd/kwok)
# KWOK v0.8.0 embeds no stages: ship the "fast" ones from the pinned module with the binaries.
kwok_src=$(cd kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
mkdir -p "${CONTROL_PLANE_DIR}/kwok-stages"
for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
         pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
  cp -f "${kwok_src}/kustomize/stage/${f}.yaml" "${CONTROL_PLANE_DIR}/kwok-stages/"
done
chmod -R u+w "${CONTROL_PLANE_DIR}/kwok-stages"
for c in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
  log "building ${c} ${KUBERNETES_VERSION}"
  (cd k8s && go build -trimpath -ldflags "${LD}" -o "${CONTROL_PLANE_BIN}/${c}" "k8s.io/kubernetes/cmd/${c}")
done
log "building metrics-api (test/cluster/k8s/metricsapi)"
(cd k8s && go build -trimpath -ldflags "-s -w" -o "${CONTROL_PLANE_BIN}/metrics-api" ./metricsapi)
echo "$stamp_want" > "$stamp_file"
log "control plane built in $(( $(date +%s) - start )) s into ${CONTROL_PLANE_BIN}"
echo "${CONTROL_PLANE_BIN}"
