# device-taint: three pods on kwok-node-1 using one allocated device each (the real scheduler allocates from a
# ResourceSlice of four devices; user claims, each with its own NoExecute toleration: none, forever, 3 s). Then
# DeviceTaintRules over the whole driver: effect None (NoEffect: what NoExecute would do, counted while the pods
# run), NoSchedule (OtherEffect), NoExecute (the untolerating pod deleted at once, the 3 s one after its toleration,
# DisruptionTarget conditions and DeviceTaintManagerEviction events, the rule Completed with 2 pods evicted).
# Pods keep a finalizer so their end state can be compared.
CONTROLLERS="serviceaccount-controller,device-taint-eviction-controller"
DRIVER="dte.diff.kcm.example.com"
DUMP_EXTRA=(default:devicetaintrules/diff-none default:devicetaintrules/diff-noschedule default:devicetaintrules/diff-evict)
claim_and_pod() {  # claim_and_pod NAME TOLERATIONS
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"$1"},
 "spec":{"devices":{"requests":[{"name":"dev","exactly":{"deviceClassName":"diff-dte","tolerations":[$2]}}]}}}
JSON
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1","finalizers":["diff.kcm.example.com/keep"]},
 "spec":{"tolerations":[{"operator":"Exists"}],"nodeSelector":{"kubernetes.io/hostname":"kwok-node-1"},
  "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"claims":[{"name":"dev"}]}}],
  "resourceClaims":[{"name":"dev","resourceClaimName":"$1"}]}}
JSON
}
rule() {  # rule NAME EFFECT
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"$1"},
 "spec":{"deviceSelector":{"driver":"${DRIVER}"},"taint":{"effect":"$2","key":"diff.kcm.example.com/evict","value":"now"}}}
JSON
}
reason_is() {  # reason_is RULE REASON
  [ "$(kubectl get devicetaintrule "$1" -o 'jsonpath={.status.conditions[?(@.type=="EvictionInProgress")].reason}')" = "$2" ]
}
terminating() { [ -n "$(kubectl get pod "$1" -n "${NS}" -o 'jsonpath={.metadata.deletionTimestamp}')" ]; }
steps() {
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"diff-dte"},
 "spec":{"selectors":[{"cel":{"expression":"device.driver == \"${DRIVER}\""}}]}}
JSON
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"diff-dte"},
 "spec":{"driver":"${DRIVER}","nodeName":"kwok-node-1","pool":{"name":"p","generation":1,"resourceSliceCount":1},
  "devices":[{"name":"d0"},{"name":"d1"},{"name":"d2"},{"name":"d3"}]}}
JSON
  claim_and_pod evicted ''
  claim_and_pod tolerant '{"effect":"NoExecute","operator":"Exists"}'
  claim_and_pod patient '{"effect":"NoExecute","operator":"Exists","tolerationSeconds":3}'
  for p in evicted tolerant patient; do wait_until 120 jsonpath_is "pod/$p" '{.status.phase}' Running; done
  rule diff-none None
  wait_until 60 reason_is diff-none NoEffect
  rule diff-noschedule NoSchedule
  wait_until 60 reason_is diff-noschedule OtherEffect
  rule diff-evict NoExecute
  wait_until 60 terminating evicted
  wait_until 60 terminating patient
  wait_until 60 reason_is diff-evict Completed
  settle 3
}
