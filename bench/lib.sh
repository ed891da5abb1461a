# Shared by the kcm-vs-upstream benchmark scripts (source after hack/lib.sh and `hack/cluster.sh env`).

# seed_flags CONTROLLERS: fills FLAGS with deploy/kube-controller-manager.yaml's command line for this cluster,
# without the removed flags upstream rejects, restricted to CONTROLLERS, serving off.
seed_flags() {
  FLAGS=()
  while IFS= read -r f; do FLAGS+=("$f"); done < <(awk '/^  - command:/{on=1; next} on && /^    - /{sub(/^    - /, ""); print; next} on{exit}' \
    "${REPO_ROOT}/deploy/kube-controller-manager.yaml" | tail -n +2 | sed "s|/etc/kubernetes|${CLUSTER_DIR}|g" |
    grep -v -e '^--controllers=' -e '^--port=' -e '^--experimental-cluster-signing-duration' -e '^--feature-gates=')
  FLAGS+=("--controllers=$1" "--secure-port=0" "--cluster-signing-duration=876000h")
}

proc_cpu() { awk '{print ($14+$15)/100}' "/proc/$1/stat"; }
proc_rss_mib() { awk '/VmRSS/{printf "%.1f", $2/1024}' "/proc/$1/status"; }
proc_hwm_mib() { awk '/VmHWM/{printf "%.1f", $2/1024}' "/proc/$1/status"; }
proc_threads() { awk '/^Threads:/{print $2}' "/proc/$1/status"; }

# start_kcm LABEL BINARY: runs BINARY with FLAGS (log in the cluster's logs/bench-LABEL.log), waits until it holds
# the lease; sets KCM_PID.
start_kcm() {
  kubectl delete lease -n kube-system kube-controller-manager --ignore-not-found >/dev/null
  "$2" "${FLAGS[@]}" >"${CLUSTER_DIR}/logs/bench-$1.log" 2>&1 &
  KCM_PID=$!
  until kubectl get lease -n kube-system kube-controller-manager >/dev/null 2>&1; do sleep 0.2; done
}

# namespace_with_sa NS: creates NS and waits for its default ServiceAccount (pods are admitted only then).
namespace_with_sa() {
  kubectl create namespace "$1" >/dev/null
  until kubectl get serviceaccount default -n "$1" >/dev/null 2>&1; do sleep 0.2; done
}

# create_deployments NS D R: D Deployments d0..d(D-1) of R pause pods, in one kubectl create.
create_deployments() {
  local i
  for ((i = 0; i < $2; i++)); do
    echo "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d${i}\"},\"spec\":{\"replicas\":$3,"\
"\"selector\":{\"matchLabels\":{\"app\":\"d${i}\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"d${i}\"}},"\
"\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"registry.k8s.io/pause:3.10\"}]}}}}"
  done | kubectl create -n "$1" -f - >/dev/null
}

# available NS R: how many Deployments of NS report R available replicas.
available() {
  kubectl get deployments -n "$1" -o jsonpath='{range .items[*]}{.status.availableReplicas}{"\n"}{end}' 2>/dev/null |
    grep -c "^$2\$" || true
}

# create_services NS S: Services s0..s(S-1), each selecting the pods of Deployment d<i>, in one kubectl create.
create_services() {
  local i
  for ((i = 0; i < $2; i++)); do
    echo "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s${i}\"},\"spec\":{\"selector\":"\
"{\"app\":\"d${i}\"},\"ports\":[{\"port\":80,\"targetPort\":8080}]}}"
  done | kubectl create -n "$1" -f - >/dev/null
}
