# pv-binder: static binding, provisioning hand-off and release, with the protection controllers (admission puts
# their finalizers on). Three volumes of one class and a claim that fits only two (the smaller is taken); a claim
# naming its volume; a volume pre-bound to a claim; a claim naming a volume too small (VolumeMismatch); a claim
# with no volume and no class (FailedBinding); a claim of an external provisioner's class (annotations,
# ExternalProvisioning); a WaitForFirstConsumer claim that binds once the scheduler places its pod (pinned to
# kwok-node-0 by the volume's node affinity); a Retain volume released when its claim is deleted; a bound claim
# whose volume is force-deleted (Lost).
CONTROLLERS="serviceaccount-controller,persistentvolume-binder-controller,persistentvolume-protection-controller,persistentvolumeclaim-protection-controller"
DUMP_EXTRA=(default:persistentvolumes)
mkpv() {  # mkpv NAME SIZE CLASS [extra spec JSON]
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"$1"},"spec":{"capacity":{"storage":"$2"},
 "accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","storageClassName":"$3",
 "csi":{"driver":"example.csi.k8s.io","volumeHandle":"$1"}${4:-}}}
JSON
}
mkpvc() {  # mkpvc NAME SIZE CLASS [volumeName]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"$1"},"spec":{"accessModes":["ReadWriteOnce"],
 "storageClassName":"$3","volumeName":"${4:-}","resources":{"requests":{"storage":"$2"}}}}
JSON
}
mkclass() {  # mkclass NAME PROVISIONER MODE
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"$1"},"provisioner":"$2","volumeBindingMode":"$3"}
JSON
}
phase_is() { jsonpath_is "$1" '{.status.phase}' "$2"; }
pv_phase_is() { [[ "$(kubectl get pv "$1" -o 'jsonpath={.status.phase}')" == "$2" ]]; }
has_event() { [[ "$(kubectl get events -n "${NS}" -o 'jsonpath={.items[*].reason}')" == *"$1"* ]]; }
steps() {
  wait_until 30 kubectl get serviceaccount default -n "${NS}"
  mkclass diff-ext example.com/fake-provisioner Immediate
  mkclass diff-late kubernetes.io/no-provisioner WaitForFirstConsumer
  mkpv diff-small 1Gi diff-static
  mkpv diff-medium 5Gi diff-static
  mkpv diff-large 10Gi diff-static
  mkpv diff-named 1Gi diff-named
  mkpv diff-reserved 1Gi diff-reserved ",\"claimRef\":{\"namespace\":\"${NS}\",\"name\":\"reserved\"}"
  mkpv diff-tiny 1Mi diff-tiny
  mkpv diff-retained 1Gi diff-retained
  mkpv diff-doomed 1Gi diff-doomed
  mkpv diff-local 1Gi diff-late ',"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["kwok-node-0"]}]}]}}'
  mkpvc fit 3Gi diff-static
  mkpvc named 1Gi diff-named diff-named
  mkpvc reserved 1Gi diff-reserved
  mkpvc wants-tiny 1Gi diff-tiny diff-tiny
  mkpvc nomatch 100Gi ""
  mkpvc dynamic 1Gi diff-ext
  mkpvc retained 1Gi diff-retained
  mkpvc doomed 1Gi diff-doomed
  mkpvc late 1Gi diff-late
  for c in fit named reserved retained doomed; do wait_until 30 phase_is "pvc/$c" Bound; done
  wait_until 30 has_event VolumeMismatch
  wait_until 30 has_event ExternalProvisioning
  wait_until 30 has_event WaitForFirstConsumer
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"consumer"},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}],
 "tolerations":[{"operator":"Exists"}],"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"late"}}]}}
JSON
  wait_until 60 phase_is pvc/late Bound
  kubectl delete pvc retained -n "${NS}" --wait=false >/dev/null
  wait_until 30 pv_phase_is diff-retained Released
  kubectl delete pv diff-doomed --wait=false >/dev/null
  kubectl patch pv diff-doomed --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  wait_until 30 phase_is pvc/doomed Lost
  settle 3
}
