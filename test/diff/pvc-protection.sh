# pvc-protection: claims with the phase set by hand (no binder on either side), pods placed on a KWOK node by
# spec.nodeName. One claim left alone (gets the finalizer), one deleted unused (gone), one used by a running pod
# then deleted (kept, deletionTimestamp set), one deleted while used, then its pod deleted (gone with it), one
# Bound with a pod coming and going (Unused condition True, False, True), one Bound and used only by a Succeeded
# pod, then deleted (Unused True, as a terminated pod does not count there, but the pod still holds the claim).
CONTROLLERS="serviceaccount-controller,persistentvolumeclaim-protection-controller"
gone() { ! kubectl get "$1" -n "${NS}" -o name >/dev/null 2>&1; }
mkpvc() {  # mkpvc NAME
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"$1"},"spec":{"accessModes":["ReadWriteOnce"],
 "storageClassName":"","resources":{"requests":{"storage":"1Gi"}}}}
JSON
}
mkpod() {  # mkpod NAME CLAIM [restartPolicy]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1"},"spec":{"nodeName":"kwok-node-0","restartPolicy":"${3:-Always}",
 "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],
 "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"$2"}}]}}
JSON
}
protected() { [[ "$(kubectl get pvc "$1" -n "${NS}" -o 'jsonpath={.metadata.finalizers}')" == *kubernetes.io/pvc-protection* ]]; }
unused_is() { jsonpath_is "pvc/$1" '{.status.conditions[?(@.type=="Unused")].reason}' "$2"; }
running() { jsonpath_is "pod/$1" '{.status.phase}' Running; }
steps() {
  local c
  for c in diff-idle diff-unused diff-held diff-released diff-bound diff-done; do mkpvc "$c"; done
  for c in diff-idle diff-unused diff-held diff-released diff-bound diff-done; do wait_until 30 protected "$c"; done
  wait_until 30 kubectl get serviceaccount default -n "${NS}"
  mkpod holder diff-held
  mkpod quitter diff-done
  mkpod leaver diff-released Never
  wait_until 60 running holder
  wait_until 60 running quitter
  wait_until 60 running leaver
  kubectl patch pod leaver -n "${NS}" --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null
  for c in diff-unused diff-held diff-done; do kubectl delete pvc "$c" -n "${NS}" --wait=false >/dev/null; done
  wait_until 30 gone pvc/diff-unused
  kubectl delete pod quitter -n "${NS}" --grace-period=0 --force --wait=false >/dev/null 2>&1
  wait_until 60 gone pvc/diff-done
  kubectl patch pvc diff-bound -n "${NS}" --subresource=status --type=merge -p '{"status":{"phase":"Bound"}}' >/dev/null
  wait_until 30 unused_is diff-bound NoPodsUsingPVC
  mkpod reader diff-bound
  wait_until 30 unused_is diff-bound PodUsingPVC
  kubectl delete pod reader -n "${NS}" --grace-period=0 --force --wait=false >/dev/null 2>&1
  wait_until 60 unused_is diff-bound NoPodsUsingPVC
  kubectl patch pvc diff-released -n "${NS}" --subresource=status --type=merge -p '{"status":{"phase":"Bound"}}' >/dev/null
  wait_until 30 unused_is diff-released NoPodsUsingPVC
  kubectl delete pvc diff-released -n "${NS}" --wait=false >/dev/null
  settle 3
}
