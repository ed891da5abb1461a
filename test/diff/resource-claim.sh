# resource-claim: DRA on a KWOK node whose devices a ResourceSlice publishes, the real scheduler allocating them.
# A pod's claim template becomes a claim owned by the pod and recorded in its status, then allocated and reserved
# and kept while the pod runs; a failed pod's generated claim is released and deleted by the controller; a user's
# claim is released and deallocated (and kept) when its pod is deleted; a deleted pod's generated claim goes with
# it (garbage collector); a pod whose template is missing gets FailedResourceClaimCreation until it appears.
CONTROLLERS="serviceaccount-controller,resourceclaim-controller,garbage-collector-controller"
DRIVER="diff.dra.kcm.example.com"
mkpod() {  # mkpod NAME CLAIM_SOURCE [BEHAVIOR]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1","annotations":{"kwok.kcm.test/behavior":"${3:-run}"}},
 "spec":{"tolerations":[{"operator":"Exists"}],
  "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"claims":[{"name":"gpu"}]}}],
  "resourceClaims":[{"name":"gpu",$2}]}}
JSON
}
mktemplate() {  # mktemplate NAME
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"$1"},
 "spec":{"metadata":{"labels":{"app":"diff"},"annotations":{"note":"from-template"}},
  "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"diff-gpu"}}]}}}}
JSON
}
recorded() { kubectl get pod "$1" -n "${NS}" -o 'jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}'; }
has_recorded() { [ -n "$(recorded "$1")" ]; }
gone() { ! kubectl get "$1" -n "${NS}" -o name >/dev/null 2>&1; }
has_event() { [[ "$(kubectl get events -n "${NS}" -o 'jsonpath={.items[*].reason}')" == *"$1"* ]]; }
steps() {
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"diff-gpu"},
 "spec":{"selectors":[{"cel":{"expression":"device.driver == \"${DRIVER}\""}}]}}
JSON
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"diff-kwok-node-0"},
 "spec":{"driver":"${DRIVER}","nodeName":"kwok-node-0","pool":{"name":"kwok-node-0","generation":1,"resourceSliceCount":1},
  "devices":[{"name":"gpu-0"},{"name":"gpu-1"},{"name":"gpu-2"},{"name":"gpu-3"}]}}
JSON
  mktemplate gpu
  # One at a time, so that each side's scheduler hands out the same device to the same claim.
  mkpod runner '"resourceClaimTemplateName":"gpu"'
  wait_until 60 jsonpath_is pod/runner '{.spec.nodeName}' kwok-node-0
  wait_until 30 jsonpath_is "resourceclaim/$(recorded runner)" '{.status.reservedFor[0].name}' runner
  mkpod failer '"resourceClaimTemplateName":"gpu"' fail
  wait_until 30 has_recorded failer
  local failed_claim; failed_claim="$(recorded failer)"
  wait_until 60 jsonpath_is pod/failer '{.status.phase}' Failed
  wait_until 60 gone "resourceclaim/${failed_claim}"
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"shared"},
 "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"diff-gpu"}}]}}}
JSON
  mkpod user '"resourceClaimName":"shared"'
  wait_until 60 jsonpath_is resourceclaim/shared '{.status.reservedFor[0].name}' user
  kubectl delete pod user -n "${NS}" --grace-period=0 --force --wait=false >/dev/null 2>&1
  wait_until 60 jsonpath_is resourceclaim/shared '{.metadata.finalizers}' ''
  mkpod leaver '"resourceClaimTemplateName":"gpu"'
  wait_until 30 has_recorded leaver
  local leaver_claim; leaver_claim="$(recorded leaver)"
  wait_until 60 jsonpath_is pod/leaver '{.spec.nodeName}' kwok-node-0
  kubectl delete pod leaver -n "${NS}" --grace-period=0 --force --wait=false >/dev/null 2>&1
  wait_until 60 gone "resourceclaim/${leaver_claim}"
  mkpod early '"resourceClaimTemplateName":"later"'
  wait_until 30 has_event FailedResourceClaimCreation
  mktemplate later
  wait_until 30 has_recorded early
  wait_until 60 jsonpath_is pod/early '{.spec.nodeName}' kwok-node-0
  settle 3
}
