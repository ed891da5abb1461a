#!/usr/bin/env bash
# kube-controller-manager side by side: ours and upstream's (built from the same pinned release) run, one after the
# other, on one fresh local cluster with the seed's command line restricted to the controllers we implement.
# Each creates the `default` ServiceAccount and `kube-root-ca.crt` in N new namespaces; we measure the wall time
# until all exist, the process CPU seconds, and its RSS. Usage: bench/run-daemon-bench.sh [NAMESPACES=300]
. "$(dirname "$0")/../hack/lib.sh"
n="${1:-300}"
bash "${REPO_ROOT}/hack/build.sh" --target kube-controller-manager >/dev/null
name="dbench-$$"
trap 'bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
CONTROLLERS="serviceaccount,root-ca-cert-publisher,ttl,nodeipam,podgc"
. "${REPO_ROOT}/bench/lib.sh"
seed_flags "${CONTROLLERS}"


run_one() {  # run_one LABEL BINARY
  local label="$1" bin="$2" prefix="b-${1}-"
  kubectl delete lease -n kube-system kube-controller-manager --ignore-not-found >/dev/null
  "$bin" "${FLAGS[@]}" >"${CLUSTER_DIR}/logs/bench-${label}.log" 2>&1 &
  local pid=$!
  until kubectl get lease -n kube-system kube-controller-manager >/dev/null 2>&1; do sleep 0.2; done
  sleep 5  # informers synced, existing namespaces handled
  local idle_rss; idle_rss=$(proc_rss_mib "$pid")
  local cpu0; cpu0=$(proc_cpu "$pid")
  local t0; t0=$(date +%s.%N)
  for ((i = 0; i < n; i++)); do echo "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"${prefix}${i}\"}}"; done |
    kubectl create -f - >/dev/null
  until [ "$(kubectl get serviceaccounts -A --no-headers 2>/dev/null | grep -c "^${prefix}.* default ")" -ge "$n" ] &&
        [ "$(kubectl get configmaps -A --no-headers 2>/dev/null | grep -c "^${prefix}.* kube-root-ca.crt ")" -ge "$n" ]; do
    sleep 0.2
  done
  local t1; t1=$(date +%s.%N)
  printf "%-10s %4d namespaces ready in %5.1f s  CPU %5.2f s  RSS idle %6s MiB, after %6s MiB, peak %6s MiB\n" \
    "$label" "$n" "$(echo "$t1 - $t0" | bc)" "$(echo "$(proc_cpu "$pid") - $cpu0" | bc)" "$idle_rss" \
    "$(proc_rss_mib "$pid")" "$(proc_hwm_mib "$pid")"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}
echo "$(nproc) cores, $(date -u +%Y-%m-%d), controllers: ${CONTROLLERS}"
run_one kcm-cpp "${OUTPUT_DIR}/bin/kube-controller-manager"
run_one upstream "${CONTROL_PLANE_BIN}/kube-controller-manager"
