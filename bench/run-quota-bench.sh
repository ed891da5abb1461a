#!/usr/bin/env bash
# Resource quota side by side: ours and upstream kube-controller-manager (same pinned release) run one after the
# other on one fresh local cluster, seed command line restricted to resourcequota and serviceaccount. Set-up (not
# timed): NS namespaces of P pods each (requests cpu 100m / memory 64Mi, bound to a node that does not exist, so
# neither the scheduler nor KWOK touches them). Each run, with its kcm started and its informers synced:
#  1. one ResourceQuota per namespace is created at once (pods, requests.cpu, requests.memory, count/configmaps);
#     we time until every quota's status.used shows the P pods;
#  2. D pods are deleted in every namespace (one kubectl delete -A -l, inside the window); we time until every quota
#     shows P-D pods (the replenishment path).
# CPU: utime+stime of the kcm process over each timed window. Between runs the quotas are deleted and the pods
# recreated. Usage: bench/run-quota-bench.sh [NS=200] [P=50] [D=10]
. "$(dirname "$0")/../hack/lib.sh"
nns="${1:-200}" np="${2:-50}" nd="${3:-10}"
bash "${REPO_ROOT}/hack/build.sh" --target kube-controller-manager >/dev/null
name="quotabench-$$"
trap 'bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
KWOK_NODES=1 bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
CONTROLLERS="resourcequota,serviceaccount"
. "${REPO_ROOT}/bench/lib.sh"
seed_flags "${CONTROLLERS}"

pods_json() {  # pods_json FIRST LAST: pods p<FIRST>..p<LAST>; the first D are labelled to go
  local i
  for ((i = $1; i <= $2; i++)); do
    echo "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p${i}\",\"labels\":{\"go\":\"$((i < nd))\"}},\"spec\":{\"nodeName\":\"nowhere\","\
"\"containers\":[{\"name\":\"c\",\"image\":\"registry.k8s.io/pause:3.10\",\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}]}}"
  done
}
# quotas_show N: every quota reports N pods used.
quotas_show() {
  local n
  n=$(kubectl get resourcequota -A -o jsonpath='{range .items[*]}{.status.used.pods}{"\n"}{end}' 2>/dev/null | grep -cx "$1")
  [ "$n" -eq "$nns" ]
}

# Set-up: namespaces and pods, with a kcm for the default ServiceAccounts (pods are admitted only then).
start_kcm setup "${OUTPUT_DIR}/bin/kube-controller-manager"
for ((n = 0; n < nns; n++)); do kubectl create namespace "q${n}" >/dev/null; done
for ((n = 0; n < nns; n++)); do
  until kubectl get serviceaccount default -n "q${n}" >/dev/null 2>&1; do sleep 0.2; done
  pods_json 0 $((np - 1)) | kubectl create -n "q${n}" -f - >/dev/null
done
kill -TERM "$KCM_PID"; wait "$KCM_PID" 2>/dev/null || true

run_one() {  # run_one LABEL BINARY
  local label="$1" bin="$2" n
  start_kcm "$label" "$bin"
  local pid=$KCM_PID
  sleep 10  # informers listed every pod
  local cpu0 t0 t1 cpu1; cpu0=$(proc_cpu "$pid"); t0=$(date +%s.%N)
  for ((n = 0; n < nns; n++)); do
    echo "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"q\",\"namespace\":\"q${n}\"},"\
"\"spec\":{\"hard\":{\"pods\":\"1000\",\"requests.cpu\":\"1000\",\"requests.memory\":\"1000Gi\",\"count/configmaps\":\"100\"}}}"
  done | kubectl create -f - >/dev/null
  until quotas_show "$np"; do sleep 0.5; done
  t1=$(date +%s.%N); cpu1=$(proc_cpu "$pid")
  printf "%-10s status of %d new quotas over %d pods:       %6.1f s  CPU %6.2f s\n" "$label" "$nns" $((nns * np)) \
    "$(echo "$t1 - $t0" | bc)" "$(echo "$cpu1 - $cpu0" | bc)"
  cpu0=$(proc_cpu "$pid"); t0=$(date +%s.%N)
  kubectl delete pods -A -l go=1 --grace-period=0 --force --wait=false >/dev/null 2>&1
  until quotas_show $((np - nd)); do sleep 0.5; done
  printf "%-10s replenishment after %d pod deletes:           %6.1f s  CPU %6.2f s  (RSS %s MiB, peak %s MiB)\n" \
    "$label" $((nns * nd)) "$(echo "$(date +%s.%N) - $t0" | bc)" "$(echo "$(proc_cpu "$pid") - $cpu0" | bc)" \
    "$(proc_rss_mib "$pid")" "$(proc_hwm_mib "$pid")"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  kubectl delete resourcequota -A --all >/dev/null
  for ((n = 0; n < nns; n++)); do pods_json 0 $((nd - 1)) | kubectl create -n "q${n}" -f - >/dev/null; done
}
echo "$(nproc) cores, $(date -u +%Y-%m-%d), controllers: ${CONTROLLERS}, ${nns} namespaces x ${np} pods, ${nd} deleted each"
run_one kcm-cpp "${OUTPUT_DIR}/bin/kube-controller-manager"
run_one upstream "${CONTROL_PLANE_BIN}/kube-controller-manager"
