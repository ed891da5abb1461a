#!/usr/bin/env bash
# Time to converge for one kube-controller-manager binary on a fresh local cluster: N KWOK nodes, S Services and
# D Deployments of R pause pods in one namespace, every controller on (the seed's command line, --controllers=*),
# client QPS as given (burst x2). Run it once per binary, alternating ours and upstream's, several times: on the
# 2-core machine the scheduler and KWOK set much of the pace, and single runs move by a third.
# Prints, from the first Deployment create to the last Deployment reporting R available replicas:
#   converged  wall time
#   CPU        the kcm's and the apiserver's CPU seconds (/proc utime+stime)
#   RSS        VmRSS and VmHWM at convergence; threads: the most seen (sampled every 2 s)
#   retries    lines of the kcm's log for the failed syncs that matter here: the ReplicaSet controller's
#              stale-cache guard ("cache for owners" in ours, "failed with read version" in upstream's), the
#              Endpoints/EndpointSlice controllers' stale informer cache ("out of date"). Both log these at the
#              default verbosity; upstream's Deployment controller logs its conflicts at V(2) only, so they are not counted.
# BENCH_PROGRESS=1 also prints, every few seconds: pods, Ready pods, and the sums of ReplicaSet ready/available and
# Deployment available replicas (how far each stage has got).
# Usage: bench/run-converge-bench.sh LABEL BINARY [NODES=200] [DEPLOYMENTS=200] [REPLICAS=30] [SERVICES=60] [QPS=200]
. "$(dirname "$0")/../hack/lib.sh"
label="${1:?label}" bin="${2:?binary}"
nn="${3:-200}" nd="${4:-200}" nr="${5:-30}" nsvc="${6:-60}" qps="${7:-200}"
[ -x "$bin" ] || die "not an executable: $bin"
name="convergebench-$$" ns="converge-${label}"
trap 'bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
KWOK_NODES="$nn" SCHEDULER_FLAGS="--kube-api-qps=${qps} --kube-api-burst=$((qps * 2))" \
  bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1 || die "cluster did not come up"
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
. "${REPO_ROOT}/bench/lib.sh"
seed_flags "*"
FLAGS+=("--kube-api-qps=${qps}" "--kube-api-burst=$((qps * 2))")
apiserver_pid=$(cat "${CLUSTER_DIR}/pids/kube-apiserver.pid")

sum_of() {  # sum_of RESOURCE JSONPATH-FIELD
  kubectl get "$1" -n "$ns" -o jsonpath="{range .items[*]}{$2}{\"\\n\"}{end}" | awk '{s+=$1} END {print s+0}'
}

start_kcm "$label" "$bin"
pid=$KCM_PID
namespace_with_sa "$ns"
create_services "$ns" "$nsvc"
sleep 3
cpu0=$(proc_cpu "$pid") api0=$(proc_cpu "$apiserver_pid") t0=$(date +%s.%N) maxthreads=0
create_deployments "$ns" "$nd" "$nr"
until [ "$(available "$ns" "$nr")" -ge "$nd" ]; do
  t=$(proc_threads "$pid")
  [ "$t" -gt "$maxthreads" ] && maxthreads=$t
  if [ "${BENCH_PROGRESS:-0}" = 1 ]; then
    ready=$(kubectl get pods -n "$ns" -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
      grep -c True || true)
    echo "  t=$(echo "$(date +%s.%N) - $t0" | bc | cut -d. -f1)s pods=$(kubectl get pods -n "$ns" --no-headers 2>/dev/null | wc -l)" \
      "ready=${ready} rs_ready=$(sum_of rs .status.readyReplicas) rs_available=$(sum_of rs .status.availableReplicas)" \
      "deploy_available=$(sum_of deployments .status.availableReplicas)"
  fi
  sleep 2
done
t1=$(date +%s.%N)
log="${CLUSTER_DIR}/logs/bench-${label}.log"
printf '%s: converged %.1f s, kcm CPU %.1f s, apiserver CPU %.1f s, RSS %s MiB (peak %s), threads %s\n' "$label" \
  "$(echo "$t1 - $t0" | bc)" "$(echo "$(proc_cpu "$pid") - $cpu0" | bc)" "$(echo "$(proc_cpu "$apiserver_pid") - $api0" | bc)" \
  "$(proc_rss_mib "$pid")" "$(proc_hwm_mib "$pid")" "$maxthreads"
printf '  retries logged: ReplicaSet stale cache %s, Endpoints/EndpointSlice stale cache %s\n' \
  "$(grep -c -e 'cache for owners' -e 'failed with read version' "$log" || true)" "$(grep -c 'out of date' "$log" || true)"
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
