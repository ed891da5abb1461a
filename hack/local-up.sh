#!/usr/bin/env bash
# The main job for a new user: install deps, build, bring up a local cluster ("local"), and run
# _output/bin/kube-controller-manager in the foreground with the flags of deploy/kube-controller-manager.yaml
# (/etc/kubernetes mapped to the cluster's folder). Ctrl-C stops kcm and the cluster.
. "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}"
NAME="${CLUSTER_NAME:-local}"
bash hack/install-deps.sh
bash hack/build.sh
bash hack/cluster.sh up "$NAME"
cleanup() { trap - EXIT INT TERM; echo; bash hack/cluster.sh down "$NAME"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
eval "$(bash hack/cluster.sh env "$NAME")"

# The command line of the static pod manifest, with kubeadm's paths pointed at this cluster.
mapfile -t FLAGS < <(awk '/^  - command:/{on=1; next} on && /^    - /{sub(/^    - /, ""); print; next} on{exit}' \
  "${REPO_ROOT}/deploy/kube-controller-manager.yaml" | tail -n +2 | sed "s|/etc/kubernetes|${CLUSTER_DIR}|g")
cat <<MSG

The local cluster is up. In another shell:
  eval "\$(hack/cluster.sh env ${NAME})"
  kubectl get nodes
  curl -k https://127.0.0.1:10257/healthz
Component logs: ${CLUSTER_DIR}/logs/
Running: _output/bin/kube-controller-manager ${FLAGS[*]}

MSG
rc=0
"${OUTPUT_DIR}/bin/kube-controller-manager" "${FLAGS[@]}" || rc=$?
log "kube-controller-manager exited with code ${rc}"
echo "The cluster stays up until Ctrl-C."
while true; do sleep 3600; done
