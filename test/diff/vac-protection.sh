# vac-protection: VolumeAttributesClasses and the claims naming them (no binder: claims stay Pending). One class
# left alone (gets kubernetes.io/vac-protection), one deleted unused (gone), one deleted while a claim names it
# (kept, being deleted), one deleted while a claim names it, then the claim deleted (gone with it).
CONTROLLERS="volumeattributesclass-protection-controller,persistentvolumeclaim-protection-controller"
DUMP_EXTRA=(default:volumeattributesclasses)
mkvac() {  # mkvac NAME
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"storage.k8s.io/v1","kind":"VolumeAttributesClass","metadata":{"name":"$1"},"driverName":"example.csi.k8s.io",
 "parameters":{"iops":"3000"}}
JSON
}
mkpvc() {  # mkpvc NAME VAC
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"$1"},"spec":{"accessModes":["ReadWriteOnce"],
 "storageClassName":"","volumeAttributesClassName":"$2","resources":{"requests":{"storage":"1Gi"}}}}
JSON
}
gone() { ! kubectl get "$@" -o name >/dev/null 2>&1; }
protected() { [[ "$(kubectl get vac "$1" -o 'jsonpath={.metadata.finalizers}')" == *kubernetes.io/vac-protection* ]]; }
deleting() { [[ -n "$(kubectl get vac "$1" -o 'jsonpath={.metadata.deletionTimestamp}')" ]]; }
steps() {
  local v
  for v in diff-idle diff-unused diff-held diff-freed; do mkvac "$v"; done
  for v in diff-idle diff-unused diff-held diff-freed; do wait_until 30 protected "$v"; done
  mkpvc holder diff-held
  mkpvc leaver diff-freed
  settle 2
  for v in diff-unused diff-held diff-freed; do kubectl delete vac "$v" --wait=false >/dev/null; done
  wait_until 30 gone vac/diff-unused
  wait_until 30 deleting diff-held
  kubectl delete pvc leaver -n "${NS}" --wait=false >/dev/null
  wait_until 30 gone vac/diff-freed
  settle 3
}
