# storage-version-migration: a StorageVersionMigration of the Secrets (Running, a resourceVersion recorded,
# Succeeded, then Running=False MigrationCompleted), and of a CRD's custom resources after its storage version
# moved from v1 to v2 (every object written again, the CRD's StorageMigrating condition, storedVersions ["v2"]).
# The garbage collector runs on both sides: the migrator reads its monitors.
CONTROLLERS="storage-version-migrator-controller,garbage-collector-controller"
GROUP="diff.svm.kcm.example.com"
DUMP_EXTRA=(default:storageversionmigrations "default:customresourcedefinitions/widgets.${GROUP}")
crd() {  # crd STORAGE_VERSION
  local v1=true v2=false
  [ "$1" = v2 ] && v1=false v2=true
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.${GROUP}"},
 "spec":{"group":"${GROUP}","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
  "versions":[{"name":"v1","served":true,"storage":${v1},"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
              {"name":"v2","served":true,"storage":${v2},"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}
JSON
}
svm() {  # svm NAME GROUP RESOURCE
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration","metadata":{"name":"$1"},
 "spec":{"resource":{"group":"$2","resource":"$3"}}}
JSON
}
cond_is() {  # cond_is SVM TYPE STATUS
  [ "$(kubectl get storageversionmigration "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].status}")" = "$3" ]
}
stored_v2() { [ "$(kubectl get crd "widgets.${GROUP}" -o 'jsonpath={.status.storedVersions}')" = '["v2"]' ]; }
steps() {
  for i in 0 1 2; do kubectl create secret generic "s$i" -n "${NS}" --from-literal=k=v >/dev/null; done
  svm diff-secrets "" secrets
  wait_until 180 cond_is diff-secrets Succeeded True
  wait_until 30 cond_is diff-secrets Running False
  crd v1
  wait_until 60 kubectl get widgets -n "${NS}"
  for i in 0 1 2; do
    kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"${GROUP}/v1","kind":"Widget","metadata":{"name":"w$i"},"size":$i}
JSON
  done
  crd v2
  svm diff-widgets "${GROUP}" widgets
  wait_until 240 cond_is diff-widgets Succeeded True
  wait_until 30 cond_is diff-widgets Running False
  wait_until 30 stored_v2
  settle 2
}
