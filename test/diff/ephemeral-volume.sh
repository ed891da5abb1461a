# ephemeral-volume: pods with generic ephemeral volumes placed on a KWOK node by spec.nodeName. One pod gets its
# `<pod>-<volume>` claim (controller owner reference to the pod, template labels and annotations) and keeps it; one
# more gets one too and is then deleted, the garbage collector removing its claim; one pod finds a foreign claim of
# that name already there (FailedBinding Warning, claim left alone). The apiserver's admission puts
# kubernetes.io/pvc-protection on every claim, so the pvc-protection controller runs on both sides to let them go.
CONTROLLERS="serviceaccount-controller,ephemeral-volume-controller,garbage-collector-controller,persistentvolumeclaim-protection-controller"
gone() { ! kubectl get "$1" -n "${NS}" -o name >/dev/null 2>&1; }
mkpod() {  # mkpod NAME
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1"},"spec":{"nodeName":"kwok-node-0",
 "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],
 "volumes":[{"name":"scratch","ephemeral":{"volumeClaimTemplate":{
   "metadata":{"labels":{"app":"diff"},"annotations":{"note":"from-template"}},
   "spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"","resources":{"requests":{"storage":"1Gi"}}}}}}]}}
JSON
}
has_event() { [[ "$(kubectl get events -n "${NS}" -o 'jsonpath={.items[*].reason}')" == *"$1"* ]]; }
steps() {
  wait_until 30 kubectl get serviceaccount default -n "${NS}"
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"squatter-scratch"},"spec":{"accessModes":["ReadWriteOnce"],
 "storageClassName":"","resources":{"requests":{"storage":"1Gi"}}}}
JSON
  mkpod keeper
  mkpod owner
  mkpod squatter
  wait_until 30 kubectl get pvc owner-scratch -n "${NS}"
  wait_until 30 kubectl get pvc keeper-scratch -n "${NS}"
  wait_until 30 has_event FailedBinding
  settle 3
  kubectl delete pod owner -n "${NS}" --grace-period=0 --force --wait=false >/dev/null 2>&1
  wait_until 60 gone pvc/owner-scratch
  settle 3
}
