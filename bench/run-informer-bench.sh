#!/usr/bin/env bash
# Initial sync of N pods from a real local apiserver, and RSS per cached pod: our informer beside client-go's,
# same cluster, same run, each as JSON and as protobuf, with the apiserver's CPU for each initial sync.
# Usage: bench/run-informer-bench.sh [PODS=10000]
. "$(dirname "$0")/../hack/lib.sh"
pods="${1:-10000}"
bash "${REPO_ROOT}/hack/build.sh" --target informer_bench >/dev/null
(cd "${REPO_ROOT}/test/cluster/k8s" && go build -o "${OUTPUT_DIR}/bench/informerbench" ./bench/informer)
name="bench-$$"
trap 'bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
KWOK_NODES=3 bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
kubectl create namespace bench >/dev/null
kubectl -n bench create serviceaccount default >/dev/null 2>&1 || true
log "creating ${pods} pods (4 parallel kubectl)"
per=$(( pods / 4 ))
for b in 0 1 2 3; do
  python3 - "$b" "$per" <<'PY' | kubectl create -n bench -f - >/dev/null &
import sys
b, per = int(sys.argv[1]), int(sys.argv[2])
for i in range(b * per, (b + 1) * per):
    print("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p-%d\n  labels: {app: bench, batch: \"%d\"}\n"
          "spec:\n  containers: [{name: c, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 10m, memory: 16Mi}}}]" % (i, b))
PY
done
wait
echo "pods in cluster: $(kubectl get pods -n bench --no-headers | wc -l); $(nproc) cores; $(date -u +%Y-%m-%d)"
. "${REPO_ROOT}/bench/lib.sh"
apiserver_pid=$(cat "${CLUSTER_DIR}/pids/kube-apiserver.pid")
# Quiet: the scheduler (retrying 10,000 unschedulable pods) and KWOK stop; the pods stay as they are.
for c in kube-scheduler kwok; do kill "$(cat "${CLUSTER_DIR}/pids/${c}.pid")" 2>/dev/null || true; done
sleep 5
# The apiserver's own CPU while idle, per second: subtracted from each run's bill.
i0=$(proc_cpu "$apiserver_pid"); sleep 30; idle=$(echo "($(proc_cpu "$apiserver_pid") - $i0) / 30" | bc -l)
printf "apiserver idle CPU %.3f s per s\n" "$idle"
# Each informer once per wire format, five rounds in alternating order: its line, then the apiserver's CPU
# for that whole process (initial sync of every pod, 2 s idle), less the idle rate over the same time.
bill() {
  local a0 t0 out; a0=$(proc_cpu "$apiserver_pid") t0=$(date +%s.%N)
  out=$("$@")
  printf "%s\tapiserver CPU %.2f s\n" "$out" \
    "$(echo "$(proc_cpu "$apiserver_pid") - $a0 - $idle * ($(date +%s.%N) - $t0)" | bc -l)"
}
results=$(mktemp)
for round in 1 2 3 4 5; do
  for ct in application/json application/vnd.kubernetes.protobuf; do
    if [ $((round % 2)) = 1 ]; then
      bill "${OUTPUT_DIR}/build/bin/informer_bench" "$KUBECONFIG" "$ct" | tee -a "$results"
      bill "${OUTPUT_DIR}/bench/informerbench" "$KUBECONFIG" "$ct" | tee -a "$results"
    else
      bill "${OUTPUT_DIR}/bench/informerbench" "$KUBECONFIG" "$ct" | tee -a "$results"
      bill "${OUTPUT_DIR}/build/bin/informer_bench" "$KUBECONFIG" "$ct" | tee -a "$results"
    fi
  done
done
echo "median of 5 (sync s, peak RSS MiB, bytes/cached pod, apiserver CPU s):"
python3 - "$results" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    nums = [float(re.findall(r"[-\d.]+", x)[0]) for x in f[2:]]
    rows.setdefault(f[0], []).append((nums[0], nums[1], nums[3], nums[4]))
for k, v in rows.items():
    print("  %-45s sync %5.2f  peak %6.1f  %6.0f B/pod  apiserver CPU %5.2f" % ((k,) + tuple(statistics.median(c) for c in zip(*v))))
PY
