#!/usr/bin/env bash
# Deployments side by side: ours and upstream kube-controller-manager (same pinned release) run one after the other
# on one fresh local cluster (5 KWOK nodes of 250 pods) with the seed's command line restricted to
# deployment, replicaset, serviceaccount and node-lifecycle. Each gets D Deployments of R pause pods created at once
# in a namespace of its own; we measure the wall time until every Deployment reports R available replicas and the
# process CPU seconds over that time. Then the Deployments are scaled to 0 (by the same kcm) before the next run.
# Usage: bench/run-deployment-bench.sh [DEPLOYMENTS=200] [REPLICAS=5]
. "$(dirname "$0")/../hack/lib.sh"
nd="${1:-200}" nr="${2:-5}"
bash "${REPO_ROOT}/hack/build.sh" --target kube-controller-manager >/dev/null
name="depbench-$$"
trap 'bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
KWOK_NODES=5 bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
CONTROLLERS="deployment,replicaset,serviceaccount,nodelifecycle"
. "${REPO_ROOT}/bench/lib.sh"
seed_flags "${CONTROLLERS}"

run_one() {  # run_one LABEL BINARY
  local label="$1" bin="$2" ns="bench-$1"
  start_kcm "$label" "$bin"
  local pid=$KCM_PID
  namespace_with_sa "$ns"
  sleep 3
  local cpu0; cpu0=$(proc_cpu "$pid")
  local t0; t0=$(date +%s.%N)
  create_deployments "$ns" "$nd" "$nr"
  until [ "$(available "$ns" "$nr")" -ge "$nd" ]; do sleep 0.5; done
  local t1; t1=$(date +%s.%N)
  printf "%-10s %4d Deployments x %d replicas available in %6.1f s  CPU %6.2f s  peak RSS %6s MiB\n" \
    "$label" "$nd" "$nr" "$(echo "$t1 - $t0" | bc)" "$(echo "$(proc_cpu "$pid") - $cpu0" | bc)" "$(proc_hwm_mib "$pid")"
  kubectl scale deployments --all -n "$ns" --replicas=0 >/dev/null
  until [ "$(kubectl get pods -n "$ns" --no-headers 2>/dev/null | wc -l)" -eq 0 ]; do sleep 1; done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}
echo "$(nproc) cores, $(date -u +%Y-%m-%d), controllers: ${CONTROLLERS}"
run_one kcm-cpp "${OUTPUT_DIR}/bin/kube-controller-manager"
run_one upstream "${CONTROL_PLANE_BIN}/kube-controller-manager"
