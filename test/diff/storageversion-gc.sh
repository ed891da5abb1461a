# storageversion-gc: storageversion-garbage-collector-controller with its gate on (--feature-gates=StorageVersionAPI=true
# on both sides; the cluster serves internal.apiserver.k8s.io/v1alpha1, and the test grants the collector the role
# the apiserver's bootstrap policy would). Two fake kube-apiserver identity Leases: deleting one takes its entries
# out of a StorageVersion (common encoding version and AllEncodingVersionsEqual recomputed); a StorageVersion naming
# only an apiserver without a Lease is deleted; one naming a Lease of another component loses that entry.
CONTROLLERS="storageversion-garbage-collector-controller"
EXTRA_FLAGS=(--feature-gates=StorageVersionAPI=true)
DUMP_EXTRA=(default:storageversions kube-system:leases/diff-apiserver-a kube-system:leases/diff-scheduler)
lease() {  # lease NAME COMPONENT
  kubectl apply -n kube-system -f - >/dev/null <<JSON
{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"$1","namespace":"kube-system",
 "labels":{"apiserver.kubernetes.io/identity":"$2"}},"spec":{"holderIdentity":"$1","leaseDurationSeconds":3600}}
JSON
}
entry() { echo "{\"apiServerID\":\"$1\",\"encodingVersion\":\"$2\",\"decodableVersions\":[\"$2\"],\"servedVersions\":[\"$2\"]}"; }
sv() {  # sv NAME STATUS_JSON
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"internal.apiserver.k8s.io/v1alpha1","kind":"StorageVersion","metadata":{"name":"$1"},"spec":{}}
JSON
  kubectl patch storageversion "$1" --subresource=status --type=merge -p "{\"status\":$2}" >/dev/null
}
ids_are() { [ "$(kubectl get storageversion "$1" -o 'jsonpath={.status.storageVersions[*].apiServerID}')" = "$2" ]; }
gone() { ! kubectl get storageversion "$1" -o name >/dev/null 2>&1; }
steps() {
  kubectl apply -f - >/dev/null <<'JSON'
{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"system:controller:storage-version-garbage-collector"},
 "rules":[{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get","list","watch"]},
  {"apiGroups":["internal.apiserver.k8s.io"],"resources":["storageversions"],"verbs":["get","list","watch","patch","update","delete"]},
  {"apiGroups":["internal.apiserver.k8s.io"],"resources":["storageversions/status"],"verbs":["get","patch","update"]}]}
JSON
  kubectl apply -f - >/dev/null <<'JSON'
{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"system:controller:storage-version-garbage-collector"},
 "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:controller:storage-version-garbage-collector"},
 "subjects":[{"kind":"ServiceAccount","name":"storage-version-garbage-collector","namespace":"kube-system"}]}
JSON
  lease diff-apiserver-a kube-apiserver
  lease diff-apiserver-b kube-apiserver
  lease diff-scheduler kube-scheduler
  sv diff.kcm.example.com.widgets "{\"storageVersions\":[$(entry diff-apiserver-a diff.kcm.example.com/v1),$(entry diff-apiserver-b diff.kcm.example.com/v2)]}"
  sv diff.kcm.example.com.gadgets "{\"storageVersions\":[$(entry diff-apiserver-never diff.kcm.example.com/v1)],\"commonEncodingVersion\":\"diff.kcm.example.com/v1\"}"
  sv diff.kcm.example.com.gizmos "{\"storageVersions\":[$(entry diff-apiserver-a diff.kcm.example.com/v1),$(entry diff-scheduler diff.kcm.example.com/v1)],\"commonEncodingVersion\":\"diff.kcm.example.com/v1\"}"
  wait_until 30 gone diff.kcm.example.com.gadgets
  wait_until 30 ids_are diff.kcm.example.com.gizmos diff-apiserver-a
  kubectl delete lease diff-apiserver-b -n kube-system >/dev/null
  wait_until 30 ids_are diff.kcm.example.com.widgets diff-apiserver-a
  settle 2
}
