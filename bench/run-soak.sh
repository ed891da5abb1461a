#!/usr/bin/env bash
# Soak: our kube-controller-manager with every controller of the seed's command line on (--controllers=*, the
# seed's flags, serving off) on a fresh local cluster of 5 KWOK nodes, under steady churn for MINUTES: every 15 s a
# Deployment of the 20 in namespace soak is scaled to 1..5 replicas, 3 of its pods are deleted, a namespace with a
# Deployment, a Job and a ConfigMap is created and the one made a minute earlier deleted. RSS and threads are sampled
# each minute; at the end the churn stops and every object must converge within 180 s (each Deployment's available
# replicas equal its spec and exactly that many pods, the churn namespaces and all they held gone). Prints the RSS slope after a 5-minute warm-up (least
# squares, MiB per 10 min, over everything after the warm-up and over the second half) and whether everything
# converged. After the last sample, when gdb is there, it asks glibc to hand free memory back (malloc_trim) and prints
# the RSS before and after: what is left is memory in use, not free space the allocator kept.
# SOAK_KCM: another kube-controller-manager binary (upstream's, for a side-by-side run; no malloc_trim probe).
# Usage: bench/run-soak.sh [MINUTES=30]
. "$(dirname "$0")/../hack/lib.sh"
minutes="${1:-30}"
bash "${REPO_ROOT}/hack/build.sh" --target kube-controller-manager >/dev/null
name="soak-$$"
trap 'kill "${KCM_PID:-0}" 2>/dev/null; bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
KWOK_NODES=5 bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
. "${REPO_ROOT}/bench/lib.sh"
seed_flags "*"
binary="${SOAK_KCM:-${OUTPUT_DIR}/bin/kube-controller-manager}"
start_kcm soak "${binary}"
pid=$KCM_PID
namespace_with_sa soak
create_deployments soak 20 3
echo "$(nproc) cores, $(date -u +%Y-%m-%d), ${minutes} min of churn, controllers: * (seed flags), ${binary}"

churn_ns() {  # churn_ns N: a namespace with a Deployment of 2, a Job and a ConfigMap
  local ns="churn-$1"
  namespace_with_sa "$ns"
  create_deployments "$ns" 1 2
  kubectl create job -n "$ns" j --image=registry.k8s.io/pause:3.10 >/dev/null
  kubectl create configmap -n "$ns" c --from-literal=k=v >/dev/null
}

samples=()  # "minute rss"
start=$(date +%s)
i=0
next_sample=0
while [ $(( $(date +%s) - start )) -lt $(( minutes * 60 )) ]; do
  elapsed=$(( $(date +%s) - start ))
  if [ "$elapsed" -ge "$next_sample" ]; then
    m=$(( elapsed / 60 ))
    rss=$(proc_rss_mib "$pid")
    threads=$(awk '/^Threads/{print $2}' "/proc/${pid}/status")
    samples+=("${m} ${rss}")
    printf "minute %3d: RSS %6s MiB, %s threads, %s pods\n" "$m" "$rss" "$threads" \
      "$(kubectl get pods -A --no-headers 2>/dev/null | wc -l)"
    next_sample=$(( (m + 1) * 60 ))
  fi
  # A failed kubectl call (the apiserver busy) is churn not done, not a reason to stop.
  d=$(( RANDOM % 20 ))
  kubectl scale deployment "d${d}" -n soak --replicas=$(( 1 + RANDOM % 5 )) >/dev/null || true
  { kubectl get pods -n soak -l "app=d$(( RANDOM % 20 ))" -o name 2>/dev/null || true; } | head -3 |
    xargs -r kubectl delete -n soak --wait=false >/dev/null 2>&1 || true
  churn_ns "$i" || true
  if [ "$i" -ge 4 ]; then kubectl delete namespace "churn-$(( i - 4 ))" --wait=false >/dev/null || true; fi
  i=$(( i + 1 ))
  sleep 15
done
kill -0 "$pid" 2>/dev/null || { echo "kube-controller-manager exited during the soak"; exit 1; }
if [ -z "${SOAK_KCM:-}" ] && command -v gdb >/dev/null; then
  before=$(proc_rss_mib "$pid")
  timeout 60 gdb -p "$pid" -batch -ex 'call (int)malloc_trim(0)' >/dev/null 2>&1 || true
  echo "malloc_trim: RSS ${before} MiB before, $(proc_rss_mib "$pid") MiB after"
fi

# Convergence after the churn stops: within 180 s.
for ((k = i - 4; k < i; k++)); do kubectl delete namespace "churn-${k}" --wait=false >/dev/null 2>&1 || true; done
converged() {
  kubectl get deployments -n soak -o jsonpath='{range .items[*]}{.spec.replicas} {.status.availableReplicas}{"\n"}{end}' |
    awk '$1 != $2 {bad=1} END {exit bad}' || return 1
  [ "$(kubectl get pods -n soak --no-headers 2>/dev/null | wc -l)" -eq \
    "$(kubectl get deployments -n soak -o jsonpath='{range .items[*]}{.spec.replicas}{"\n"}{end}' | awk '{s+=$1} END {print s}')" ] || return 1
  [ -z "$(kubectl get namespaces -o name | grep '^namespace/churn-')" ] || return 1
}
t0=$(date +%s)
ok=no
while [ $(( $(date +%s) - t0 )) -lt 180 ]; do
  if converged; then ok=yes; break; fi
  sleep 2
done
echo "converged after the churn: ${ok} ($(( $(date +%s) - t0 )) s); ${i} churn namespaces created and deleted"
slope() {  # slope FROM_MINUTE LABEL: least-squares RSS slope over the samples from that minute on
  printf '%s\n' "${samples[@]}" | awk -v from="$1" -v label="$2" '$1 >= from {n++; sx+=$1; sy+=$2; sxx+=$1*$1; sxy+=$1*$2}
    END {if (n < 2) {printf "RSS slope %s: too few samples\n", label; exit}
         b=(n*sxy-sx*sy)/(n*sxx-sx*sx); printf "RSS slope %s: %.2f MiB per 10 min over %d samples\n", label, b*10, n}'
}
slope 5 "after warm-up"
slope $(( minutes / 2 )) "over the second half"
echo "peak RSS $(proc_hwm_mib "$pid") MiB"
[ "$ok" = yes ]
