# pv-protection: PVs with the phase set by hand (no binder on either side). One left Available (gets the
# finalizer), one Bound then deleted (kept, deletionTimestamp set), one Released then deleted while another
# finalizer holds it (only ours goes), one deleted unbound (gone).
CONTROLLERS="persistentvolume-protection-controller"
DUMP_EXTRA=(default:persistentvolumes)
gone() { ! kubectl get "$1" -o name >/dev/null 2>&1; }
mkpv() {  # mkpv NAME
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"$1"},"spec":{"capacity":{"storage":"1Gi"},
 "accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","hostPath":{"path":"/tmp/$1"}}}
JSON
}
phase() { kubectl patch pv "$1" --subresource=status --type=merge -p "{\"status\":{\"phase\":\"$2\"}}" >/dev/null; }
protected() { [[ "$(kubectl get pv "$1" -o 'jsonpath={.metadata.finalizers}')" == *kubernetes.io/pv-protection* ]]; }
unprotected() { ! protected "$1"; }
steps() {
  local p
  for p in diff-available diff-bound diff-released diff-unbound; do mkpv "$p"; done
  for p in diff-available diff-bound diff-released diff-unbound; do wait_until 30 protected "$p"; done
  phase diff-bound Bound
  phase diff-released Released
  kubectl patch pv diff-released --type=json -p '[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/keep"}]' >/dev/null
  for p in diff-bound diff-released diff-unbound; do kubectl delete pv "$p" --wait=false >/dev/null; done
  wait_until 30 gone pv/diff-unbound
  wait_until 30 unprotected diff-released
  settle 3
}
