#!/usr/bin/env bash
# Scale: ours and upstream kube-controller-manager (same pinned release), every controller on (the seed's command
# line, --controllers=*), one after the other on one local cluster of N KWOK nodes (leases renewed by KWOK).
# Each gets a namespace of its own with S Services (selecting the first S Deployments) and D Deployments of R pause
# pods, created at once; we measure until every Deployment reports R available replicas:
#   converge   wall time from the first create to the last Deployment available
#   CPU        the kcm's CPU seconds over that time, and the apiserver's (/proc of each)
#   RSS        peak (VmHWM) and steady (VmRSS 30 s after converging); threads: most seen (sampled every 2 s)
#   requests/s the kcm's requests per second, and its writes (create/update/patch/delete), from the apiserver's
#              audit log (AUDIT_KCM_ALL: the kcm's own user and kube-system's service accounts), then the
#              writes by verb and resource (bench/audit_breakdown.py)
# Then the kcm is restarted with all of it in place (its initial lists: the apiserver's CPU in the first 30 s,
# less the background) and deletes the namespace (its namespace and garbage collector controllers) before the next run.
# Both binaries get the same client rate limits (QPS, burst x2): the defaults (20/30) would make a 30,000-pod
# run take 25 minutes of rate limiting for either.
# Ours runs first; BENCH_ORDER=upstream-first swaps the two (the second run meets a cluster that has already
# held and deleted the first one's objects, and KWOK's pace may differ: compare both orders before reading a
# small difference as the kcm's).
# Usage: [BENCH_ORDER=upstream-first] bench/run-scale-bench.sh [NODES=1000] [DEPLOYMENTS=1000] [REPLICAS=30] [SERVICES=300] [QPS=300]
. "$(dirname "$0")/../hack/lib.sh"
nn="${1:-1000}" nd="${2:-1000}" nr="${3:-30}" nsvc="${4:-300}" qps="${5:-300}"
bash "${REPO_ROOT}/hack/build.sh" --target kube-controller-manager >/dev/null
name="scalebench-$$"
trap 'bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
AUDIT_KCM_ALL=1 KWOK_NODES="$nn" SCHEDULER_FLAGS="--kube-api-qps=${qps} --kube-api-burst=$((qps * 2))" bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1 || die "cluster did not come up"
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
. "${REPO_ROOT}/bench/lib.sh"
seed_flags "*"
FLAGS+=("--kubeconfig=${CLUSTER_DIR}/audited.conf" "--kube-api-qps=${qps}" "--kube-api-burst=$((qps * 2))")
apiserver_pid=$(cat "${CLUSTER_DIR}/pids/kube-apiserver.pid")

# The kcm's requests in the audit log (AUDIT_KCM_ALL: its own user and kube-system's service accounts, which
# --use-service-account-credentials gives the controllers): all, and writes.
requests() { cat "${CLUSTER_DIR}"/audit*.log 2>/dev/null | grep -c '"stage":"ResponseComplete"' || true; }
writes() {
  cat "${CLUSTER_DIR}"/audit*.log 2>/dev/null | grep '"stage":"ResponseComplete"' |
    grep -c -E '"verb":"(create|update|patch|delete|deletecollection)"' || true
}

run_one() {  # run_one LABEL BINARY
  local label="$1" bin="$2" ns="scale-$1" maxthreads=0 t
  start_kcm "$label" "$bin"
  local pid=$KCM_PID
  namespace_with_sa "$ns"
  sleep 5
  local cpu0 api0 w0 r0 t0
  cpu0=$(proc_cpu "$pid") api0=$(proc_cpu "$apiserver_pid") w0=$(writes) r0=$(requests) t0=$(date +%s.%N)
  create_services "$ns" "$nsvc"
  create_deployments "$ns" "$nd" "$nr"
  until [ "$(available "$ns" "$nr")" -ge "$nd" ]; do
    kill -0 "$pid" 2>/dev/null || die "${label}: kube-controller-manager exited (log: ${CLUSTER_DIR}/logs/bench-${label}.log)"
    t=$(proc_threads "$pid"); [ "$t" -gt "$maxthreads" ] && maxthreads=$t
    sleep 2
  done
  local t1 cpu api w r
  t1=$(date +%s.%N)
  cpu=$(echo "$(proc_cpu "$pid") - $cpu0" | bc) api=$(echo "$(proc_cpu "$apiserver_pid") - $api0" | bc)
  w=$(( $(writes) - w0 )) r=$(( $(requests) - r0 ))
  local secs; secs=$(echo "$t1 - $t0" | bc)
  sleep 30
  printf "%-9s %6d pods converged in %7.1f s  kcm CPU %7.1f s  apiserver CPU %7.1f s  peak RSS %7s MiB  steady RSS %7s MiB  threads %3d  requests %7d (%5.1f/s)  writes %7d (%5.1f/s)\n" \
    "$label" "$((nd * nr))" "$secs" "$cpu" "$api" "$(proc_hwm_mib "$pid")" "$(proc_rss_mib "$pid")" "$maxthreads" \
    "$r" "$(echo "$r / $secs" | bc -l)" "$w" "$(echo "$w / $secs" | bc -l)"
  echo "${label} writes by verb and resource:"
  python3 "${REPO_ROOT}/bench/audit_breakdown.py" "$ns" "$t0" "$t1" "${CLUSTER_DIR}"/audit*.log | head -25
  # Restart with everything in place: the apiserver's CPU for the kcm's initial lists (a 30 s window from the
  # start, less the cluster's own background over 15 s without any kcm, scaled to 30 s).
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  local b0 b1; b0=$(proc_cpu "$apiserver_pid"); sleep 15; b1=$(proc_cpu "$apiserver_pid")
  api0=$(proc_cpu "$apiserver_pid")
  start_kcm "$label-restart" "$bin"
  pid=$KCM_PID
  sleep 30
  api=$(echo "$(proc_cpu "$apiserver_pid") - $api0 - 2 * ($b1 - $b0)" | bc)
  printf "%-9s restart: apiserver CPU for the initial sync %6.1f s (background %.1f s per 30 s)  kcm CPU %6.1f s  RSS %7s MiB  peak %7s MiB\n" \
    "$label" "$api" "$(echo "2 * ($b1 - $b0)" | bc)" "$(proc_cpu "$pid")" "$(proc_rss_mib "$pid")" "$(proc_hwm_mib "$pid")"
  kubectl delete namespace "$ns" --wait=false >/dev/null
  until ! kubectl get namespace "$ns" >/dev/null 2>&1; do sleep 2; done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}
echo "$(nproc) cores, $(date -u +%Y-%m-%d), ${nn} KWOK nodes, ${nd} Deployments x ${nr} pods, ${nsvc} Services," \
  "--kube-api-qps=${qps} --kube-api-burst=$((qps * 2)), --controllers=*, order: ${BENCH_ORDER:-ours-first}"
case "${BENCH_ORDER:-ours-first}" in
  ours-first)
    run_one kcm-cpp "${OUTPUT_DIR}/bin/kube-controller-manager"
    run_one upstream "${CONTROL_PLANE_BIN}/kube-controller-manager" ;;
  upstream-first)
    run_one upstream "${CONTROL_PLANE_BIN}/kube-controller-manager"
    run_one kcm-cpp "${OUTPUT_DIR}/bin/kube-controller-manager" ;;
  *) die "BENCH_ORDER must be ours-first or upstream-first, not ${BENCH_ORDER}" ;;
esac
