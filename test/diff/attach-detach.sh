# attach-detach: CSI volumes of pods on a KWOK node annotated as a kubelet would
# (volumes.kubernetes.io/controller-managed-attach-detach), this script playing the external attacher. One volume
# is attached (its VolumeAttachment marked attached: SuccessfulAttachVolume), one fails (attachError:
# FailedAttachVolume), one of a driver with attachRequired: false gets no VolumeAttachment, one is attached and
# then its pod deleted (the VolumeAttachment goes). The binder binds the claims.
CONTROLLERS="serviceaccount-controller,persistentvolume-binder-controller,persistentvolume-attach-detach-controller"
DUMP_EXTRA=(default:volumeattachments default:persistentvolumes)
mkdriver() {  # mkdriver NAME ATTACH_REQUIRED
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"storage.k8s.io/v1","kind":"CSIDriver","metadata":{"name":"$1"},"spec":{"attachRequired":$2}}
JSON
}
mkvolume() {  # mkvolume NAME DRIVER: a PV, a claim bound to it and a pod on kwok-node-0 using it
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"diff-$1"},"spec":{"capacity":{"storage":"1Gi"},
 "accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","storageClassName":"diff-attach",
 "csi":{"driver":"$2","volumeHandle":"handle-$1"}}}
JSON
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"$1"},"spec":{"accessModes":["ReadWriteOnce"],
 "storageClassName":"diff-attach","volumeName":"diff-$1","resources":{"requests":{"storage":"1Gi"}}}}
JSON
  wait_until 30 jsonpath_is "pvc/$1" '{.status.phase}' Bound
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1"},"spec":{"nodeName":"kwok-node-0",
 "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],
 "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"$1"}}]}}
JSON
}
va_of() { kubectl get volumeattachments -o jsonpath="{.items[?(@.spec.source.persistentVolumeName==\"diff-$1\")].metadata.name}"; }
has_va() { [[ -n "$(va_of "$1")" ]]; }
no_va() { [[ -z "$(va_of "$1")" ]]; }
set_va_status() { kubectl patch volumeattachment "$(va_of "$1")" --subresource=status --type=merge -p "$2" >/dev/null; }
has_event() { [[ "$(kubectl get events -n "${NS}" -o 'jsonpath={.items[*].reason}')" == *"$1"* ]]; }
steps() {
  wait_until 30 kubectl get serviceaccount default -n "${NS}"
  kubectl annotate node kwok-node-0 --overwrite volumes.kubernetes.io/controller-managed-attach-detach=true >/dev/null
  mkdriver attach.diff.csi.k8s.io true
  mkdriver no-attach.diff.csi.k8s.io false
  mkvolume attached attach.diff.csi.k8s.io
  mkvolume failing attach.diff.csi.k8s.io
  mkvolume plain no-attach.diff.csi.k8s.io
  mkvolume leaving attach.diff.csi.k8s.io
  for v in attached failing leaving; do wait_until 30 has_va "$v"; done
  set_va_status attached '{"status":{"attached":true}}'
  set_va_status leaving '{"status":{"attached":true}}'
  set_va_status failing '{"status":{"attached":false,"attachError":{"message":"rpc error: code = Internal desc = disk busy"}}}'
  wait_until 30 has_event SuccessfulAttachVolume
  wait_until 30 has_event FailedAttachVolume
  kubectl delete pod leaving -n "${NS}" --grace-period=0 --force --wait=false >/dev/null 2>&1
  wait_until 60 no_va leaving
  settle 3
}
