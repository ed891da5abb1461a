# A new namespace gets its default ServiceAccount and the kube-root-ca.crt ConfigMap; both come back when deleted.
CONTROLLERS="serviceaccount-controller,root-ca-certificate-publisher-controller"
steps() {
  wait_until 30 kubectl get configmap kube-root-ca.crt -n "${NS}"
  kubectl delete serviceaccount default -n "${NS}" >/dev/null
  kubectl delete configmap kube-root-ca.crt -n "${NS}" >/dev/null
  wait_until 30 kubectl get serviceaccount default -n "${NS}"
  wait_until 30 kubectl get configmap kube-root-ca.crt -n "${NS}"
  settle 2
}
