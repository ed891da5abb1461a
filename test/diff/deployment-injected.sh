# The harness's self-test (hack/diff-upstream.sh --self-test): one side gets an extra label, which must be reported
# with the object and the field.
CONTROLLERS="serviceaccount-controller,deployment-controller,replicaset-controller,node-lifecycle-controller"
steps() {
  kubectl create deployment web -n "${NS}" --image=registry.k8s.io/pause:3.10 --replicas=1 >/dev/null
  wait_until 120 rollout_done web
  if [ "${SIDE}" = ours ]; then kubectl label deployment web -n "${NS}" injected=yes >/dev/null; fi
  settle 2
}
