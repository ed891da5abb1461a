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
