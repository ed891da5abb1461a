#!/usr/bin/env bash
# Garbage collection and namespace deletion side by side: ours and upstream kube-controller-manager (same pinned
# release) run one after the other on one fresh local cluster (5 KWOK nodes of 250 pods), seed command line
# restricted to garbagecollector, namespace, deployment, replicaset, serviceaccount and nodelifecycle. Each run:
#  1. D Deployments x R replicas are created and become available (not timed); then all are deleted with
#     propagationPolicy=Foreground and we time until no Deployment, ReplicaSet or pod is left;
#  2. a namespace holding N ConfigMaps is deleted and we time until it is gone.
# CPU: utime+stime of the kcm process over each timed window. Usage: bench/run-gc-bench.sh [D=100] [R=10] [N=1000]
. "$(dirname "$0")/../hack/lib.sh"
nd="${1:-100}" nr="${2:-10}" nobj="${3:-1000}"
bash "${REPO_ROOT}/hack/build.sh" --target kube-controller-manager >/dev/null
name="gcbench-$$"
trap 'bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
KWOK_NODES=5 bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
CONTROLLERS="garbagecollector,namespace,deployment,replicaset,serviceaccount,nodelifecycle"
. "${REPO_ROOT}/bench/lib.sh"
seed_flags "${CONTROLLERS}"

count() { kubectl get "$1" -n "$2" --no-headers 2>/dev/null | wc -l; }

run_one() {  # run_one LABEL BINARY
  local label="$1" bin="$2" ns="gc-$1" nsdel="nsdel-$1"
  start_kcm "$label" "$bin"
  local pid=$KCM_PID
  namespace_with_sa "$ns"
  create_deployments "$ns" "$nd" "$nr"
  until [ "$(kubectl get pods -n "$ns" --no-headers 2>/dev/null | grep -c Running)" -ge $((nd * nr)) ]; do sleep 1; done
  sleep 5
  local cpu0 t0; cpu0=$(proc_cpu "$pid"); t0=$(date +%s.%N)
  kubectl delete deployments --all -n "$ns" --cascade=foreground --wait=false >/dev/null
  until [ "$(count deployments "$ns")" -eq 0 ] && [ "$(count replicasets "$ns")" -eq 0 ] && [ "$(count pods "$ns")" -eq 0 ]; do
    sleep 0.5
  done
  printf "%-10s foreground deletion of %d Deployments (%d pods): %6.1f s  CPU %6.2f s\n" "$label" "$nd" $((nd * nr)) \
    "$(echo "$(date +%s.%N) - $t0" | bc)" "$(echo "$(proc_cpu "$pid") - $cpu0" | bc)"
  kubectl create namespace "$nsdel" >/dev/null
  for ((i = 0; i < nobj; i++)); do echo "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c${i}\"},\"data\":{\"k\":\"v\"}}"; done |
    kubectl create -n "$nsdel" -f - >/dev/null
  cpu0=$(proc_cpu "$pid"); t0=$(date +%s.%N)
  kubectl delete namespace "$nsdel" --wait=false >/dev/null
  until ! kubectl get namespace "$nsdel" >/dev/null 2>&1; do sleep 0.5; done
  printf "%-10s deletion of a namespace holding %d objects:    %6.1f s  CPU %6.2f s  (peak RSS %s MiB)\n" "$label" "$nobj" \
    "$(echo "$(date +%s.%N) - $t0" | bc)" "$(echo "$(proc_cpu "$pid") - $cpu0" | bc)" "$(proc_hwm_mib "$pid")"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}
echo "$(nproc) cores, $(date -u +%Y-%m-%d), controllers: ${CONTROLLERS}"
run_one kcm-cpp "${OUTPUT_DIR}/bin/kube-controller-manager"
run_one upstream "${CONTROL_PLANE_BIN}/kube-controller-manager"
