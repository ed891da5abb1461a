#!/usr/bin/env bash
# EndpointSlices side by side (issue 16): ours and upstream kube-controller-manager (same pinned release) run one after
# the other on one fresh local cluster of 20 KWOK nodes, with the seed's command line restricted to the
# endpointslice controller. S Services each select P running pause pods (S x P pods, created and Ready before either
# kcm starts). From the moment a kcm holds the lease we measure the wall time until every Service's slices hold its P
# ready endpoints, and the process's CPU seconds over that time; its slices are then deleted before the next run.
# Usage: bench/run-endpointslice-bench.sh [SERVICES=50] [PODS_PER_SERVICE=100]
. "$(dirname "$0")/../hack/lib.sh"
ns_count="${1:-50}" per="${2:-100}"
bash "${REPO_ROOT}/hack/build.sh" --target kube-controller-manager >/dev/null
name="esbench-$$"
trap 'bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
KWOK_NODES=20 bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
. "${REPO_ROOT}/bench/lib.sh"
seed_flags "endpointslice-controller"
ns="esbench"
kubectl create namespace "$ns" >/dev/null
kubectl create serviceaccount default -n "$ns" >/dev/null 2>&1 || true
python3 - "$ns_count" "$per" <<'PY' | kubectl apply -n "$ns" -f - >/dev/null
import json, sys
services, per = int(sys.argv[1]), int(sys.argv[2])
items = []
for s in range(services):
    items.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc-%d" % s},
                  "spec": {"selector": {"app": "svc-%d" % s}, "ports": [{"port": 80, "targetPort": 8080}]}})
    for p in range(per):
        i = s * per + p
        items.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod-%d" % i, "labels": {"app": "svc-%d" % s}},
                      "spec": {"nodeName": "kwok-node-%d" % (i % 20), "automountServiceAccountToken": False,
                               "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                               "ports": [{"containerPort": 8080}]}]}})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
total=$(( ns_count * per ))
until [ "$(kubectl get pods -n "$ns" --field-selector=status.phase=Running --no-headers 2>/dev/null | wc -l)" -ge "$total" ]; do
  sleep 2
done
complete() {  # every Service's slices hold its $per ready endpoints
  kubectl get endpointslices -n "$ns" -o json 2>/dev/null | python3 -c '
import json, sys, collections
per, services = int(sys.argv[1]), int(sys.argv[2])
n = collections.Counter()
for s in json.load(sys.stdin)["items"]:
    svc = s["metadata"]["labels"].get("kubernetes.io/service-name")
    n[svc] += sum(1 for e in s.get("endpoints") or [] if e["conditions"].get("ready"))
sys.exit(0 if len(n) == services and all(v == per for v in n.values()) else 1)' "$per" "$ns_count"
}
run_one() {  # run_one LABEL BINARY
  local label="$1" bin="$2"
  start_kcm "$label" "$bin"
  local pid=$KCM_PID t0 cpu0
  t0=$(date +%s.%N)
  cpu0=$(proc_cpu "$pid")
  until complete; do sleep 0.5; done
  printf "%-10s %d Services x %d pods: slices complete in %6.1f s  CPU %6.2f s  peak RSS %6s MiB\n" "$label" \
    "$ns_count" "$per" "$(echo "$(date +%s.%N) - $t0" | bc)" "$(echo "$(proc_cpu "$pid") - $cpu0" | bc)" \
    "$(proc_hwm_mib "$pid")"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  kubectl delete endpointslices -n "$ns" --all >/dev/null
}
echo "$(nproc) cores, $(date -u +%Y-%m-%d), ${total} Running pods behind ${ns_count} Services, controllers: endpointslice"
run_one kcm-cpp "${OUTPUT_DIR}/bin/kube-controller-manager"
run_one upstream "${CONTROL_PLANE_BIN}/kube-controller-manager"
