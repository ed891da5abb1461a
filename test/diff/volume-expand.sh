# volume-expand: claims Bound (by hand: no binder) to PVs of a class that allows expansion, then grown from 1Gi to
# 2Gi. A CSI volume is left to the external resizer (ExternalExpanding); an in-tree AWS EBS volume (migrated to
# CSI) gets volume.kubernetes.io/storage-resizer ebs.csi.aws.com; a claim not grown is left alone.
CONTROLLERS="persistentvolume-expander-controller"
DUMP_EXTRA=(default:persistentvolumes)
bound() {  # bound NAME SOURCE_JSON
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"$1"},"spec":{"accessModes":["ReadWriteOnce"],
 "storageClassName":"diff-expandable","volumeName":"diff-$1","resources":{"requests":{"storage":"1Gi"}}}}
JSON
  local uid
  uid="$(kubectl get pvc "$1" -n "${NS}" -o 'jsonpath={.metadata.uid}')"
  kubectl create -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"diff-$1"},"spec":{"capacity":{"storage":"1Gi"},
 "accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","storageClassName":"diff-expandable",
 "claimRef":{"kind":"PersistentVolumeClaim","apiVersion":"v1","namespace":"${NS}","name":"$1","uid":"${uid}"},$2}}
JSON
  kubectl patch pvc "$1" -n "${NS}" --subresource=status --type=merge \
    -p '{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"}}}' >/dev/null
}
grow() { kubectl patch pvc "$1" -n "${NS}" --type=merge -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}' >/dev/null 2>&1; }
has_event() { [[ "$(kubectl get events -n "${NS}" -o 'jsonpath={.items[*].reason}')" == *"$1"* ]]; }
resizer_set() { [[ -n "$(kubectl get pvc "$1" -n "${NS}" -o 'jsonpath={.metadata.annotations.volume\.kubernetes\.io/storage-resizer}')" ]]; }
steps() {
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"diff-expandable"},"provisioner":"example.csi.k8s.io",
 "allowVolumeExpansion":true}
JSON
  bound csi '"csi":{"driver":"example.csi.k8s.io","volumeHandle":"h-csi"}'
  bound ebs '"awsElasticBlockStore":{"volumeID":"vol-0123456789abcdef0","fsType":"ext4"}'
  bound steady '"csi":{"driver":"example.csi.k8s.io","volumeHandle":"h-steady"}'
  wait_until 30 grow csi
  wait_until 30 grow ebs
  wait_until 30 has_event ExternalExpanding
  wait_until 30 resizer_set ebs
  settle 3
}
