#!/usr/bin/env bash
# Packaging checks, each a test with a PASS/FAIL line and a closing "packaging: N passed, N failed":
#   deb            hack/release.sh --install: the .deb installs, /usr/bin/kube-controller-manager --version prints the
#                  pinned release, the unit's default flags parse, systemd-analyze verifies the unit
#   image-version  hack/image.sh --run: the OCI image (no base pulled) loads into podman and `--version` runs in it
#   image-cluster  the image as the kubeadm static pod runs it (host network, kubeconfig mounted read-only) against a
#                  real cluster: /healthz answers ok over HTTPS and a Deployment of 2 replicas rolls out
# Exits non-zero when any failed.
. "$(dirname "$0")/../../hack/lib.sh"
cd "${REPO_ROOT}"
pass=0 fail=0
result() {  # result NAME RC
  if [ "$2" -eq 0 ]; then pass=$(( pass + 1 )); echo "PASS packaging/$1"; else fail=$(( fail + 1 )); echo "FAIL packaging/$1"; fi
}
rc=0; bash hack/release.sh --install || rc=$?; result deb "${rc}"
rc=0; bash hack/image.sh --run || rc=$?; result image-version "${rc}"

image_cluster() {
  local name="pkg-$$" ctr="kcm-image-test-$$" ok=1
  bash hack/cluster.sh up "${name}" >/dev/null 2>&1 || { log "cluster ${name} did not come up"; return 1; }
  eval "$(bash hack/cluster.sh env "${name}")"
  local image="localhost/kcm-cpp/kube-controller-manager:${KUBERNETES_VERSION}"
  podman --runtime runc run -d --name "${ctr}" --network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    -v "${CLUSTER_DIR}:${CLUSTER_DIR}:ro" "${image}" --kubeconfig="${KUBECONFIG}" --secure-port="${KCM_PORT}" \
    --leader-elect=false --controllers=deployment-controller,replicaset-controller,serviceaccount-controller \
    >/dev/null || ok=0
  local i h=""
  for i in $(seq 30); do
    h="$(curl -sk "https://127.0.0.1:${KCM_PORT}/healthz" || true)"
    [ "${h}" = ok ] && break
    sleep 1
  done
  log "curl -k https://127.0.0.1:${KCM_PORT}/healthz (kcm in the container): ${h:-no answer}"
  [ "${h}" = ok ] || ok=0
  kubectl create namespace pkg >/dev/null
  kubectl apply -n pkg -f - >/dev/null <<'JSON'
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2,
 "selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{
 "terminationGracePeriodSeconds":0,"tolerations":[{"operator":"Exists"}],
 "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
  if kubectl rollout status -n pkg deployment/web --timeout=90s >/dev/null 2>&1; then
    log "deployment pkg/web rolled out by the containerised kcm: $(kubectl get -n pkg deployment web \
      -o jsonpath='{.status.readyReplicas}/{.spec.replicas} ready')"
  else
    log "deployment pkg/web did not roll out: $(kubectl get -n pkg deployment web -o jsonpath='{.status}')"
    podman logs "${ctr}" 2>&1 | grep -v "^I" | tail -20 >&2
    ok=0
  fi
  podman rm -f "${ctr}" >/dev/null 2>&1 || true
  bash hack/cluster.sh down "${name}" >/dev/null 2>&1 || true
  [ "${ok}" = 1 ]
}
rc=0
if [ -x "${CONTROL_PLANE_BIN}/kube-apiserver" ]; then image_cluster || rc=$?; else log "no control plane built"; rc=1; fi
result image-cluster "${rc}"
echo "packaging: ${pass} passed, ${fail} failed"
[ "${fail}" -eq 0 ]
