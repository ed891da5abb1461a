#!/usr/bin/env bash
# Initial sync of N pods from a real local apiserver, and RSS per cached pod: our informer beside client-go's,
# same cluster, same run. Usage: bench/run-informer-bench.sh [PODS=10000]
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
"${OUTPUT_DIR}/build/bin/informer_bench" "$KUBECONFIG"
"${OUTPUT_DIR}/bench/informerbench" "$KUBECONFIG"
