# resource-pool-status: ResourcePoolStatusRequests (resource.k8s.io/v1alpha3; DRAResourcePoolStatus on in the
# apiserver and in both controller managers) over the slices of two drivers: a node-local pool with a NoSchedule
# device taint, a DeviceTaintRule and a device the real scheduler allocated to a running pod's claim; a pool at a
# new generation beside its old slice; a partitionable pool (counter slice and device slice with
# partitionTypeAttribute); the same without the attribute, asked with the request's default; a
# shareable pool; an incomplete pool (never written: retried, then left); a pool that does not exist; limit 1 of
# the second driver's three pools.
CONTROLLERS="serviceaccount-controller,resourcepoolstatusrequest-controller"
EXTRA_FLAGS=(--feature-gates=DRAResourcePoolStatus=true)
D1="rpsr.diff.kcm.example.com"
D2="rpsr2.diff.kcm.example.com"
REQUESTS=(all node rolled partitioned default shareable incomplete missing limited)
DUMP_EXTRA=()
for r in "${REQUESTS[@]}"; do DUMP_EXTRA+=("default:resourcepoolstatusrequests/diff-rpsr-${r}"); done
mkslice() {  # mkslice NAME DRIVER SPEC-MEMBERS
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"diff-rpsr-$1"},"spec":{"driver":"$2",$3}}
JSON
}
mkrequest() {  # mkrequest NAME DRIVER EXTRA-SPEC-MEMBERS
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1alpha3","kind":"ResourcePoolStatusRequest","metadata":{"name":"diff-rpsr-$1"},
 "spec":{"driver":"$2"$3}}
JSON
}
has_status() { [ -n "$(kubectl get resourcepoolstatusrequest "diff-rpsr-$1" -o 'jsonpath={.status.poolCount}')" ]; }
pdev() {  # pdev NAME PROFILE MEMORY
  echo "{\"name\":\"$1\",\"attributes\":{\"diff.kcm.example.com/profile\":{\"string\":\"$2\"}},\"consumesCounters\":[{\"counterSet\":\"gpu-0\",\"counters\":{\"memory\":{\"value\":\"$3\"}}}]}"
}
steps() {
  local sel='"nodeSelector":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["kwok-node-1"]}]}]}'
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"diff-rpsr"},
 "spec":{"selectors":[{"cel":{"expression":"device.driver == \"${D1}\""}}]}}
JSON
  mkslice node "${D1}" '"nodeName":"kwok-node-1","pool":{"name":"node","generation":1,"resourceSliceCount":1},"devices":[
    {"name":"d0"},{"name":"d1"},
    {"name":"d2","taints":[{"key":"diff.kcm.example.com/t","value":"x","effect":"NoSchedule"}]},{"name":"d3"},{"name":"d4"}]'
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"DeviceTaintRule","metadata":{"name":"diff-rpsr"},
 "spec":{"deviceSelector":{"driver":"${D1}","pool":"node","device":"d3"},"taint":{"effect":"NoSchedule","key":"diff.kcm.example.com/rule"}}}
JSON
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c"},
 "spec":{"devices":{"requests":[{"name":"dev","exactly":{"deviceClassName":"diff-rpsr"}}]}}}
JSON
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
 "spec":{"tolerations":[{"operator":"Exists"}],"nodeSelector":{"kubernetes.io/hostname":"kwok-node-1"},
  "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"claims":[{"name":"dev"}]}}],
  "resourceClaims":[{"name":"dev","resourceClaimName":"c"}]}}
JSON
  wait_until 120 jsonpath_is pod/p '{.status.phase}' Running
  mkslice rolled-old "${D1}" "\"nodeName\":\"kwok-node-2\",\"pool\":{\"name\":\"rolled\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"old-0\"},{\"name\":\"old-1\"},{\"name\":\"old-2\"}]"
  mkslice rolled-new "${D1}" "\"nodeName\":\"kwok-node-2\",\"pool\":{\"name\":\"rolled\",\"generation\":2,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"new-0\"}]"
  local devs; devs="$(pdev full Full 8),$(pdev half-a Half 4),$(pdev half-b Half 4),$(pdev quarter Quarter 2)"
  for pool in partitioned plain; do
    mkslice "${pool}-counters" "${D1}" "${sel},\"pool\":{\"name\":\"${pool}\",\"generation\":1,\"resourceSliceCount\":2},\"sharedCounters\":[{\"name\":\"gpu-0\",\"counters\":{\"memory\":{\"value\":\"8\"}}}]"
  done
  mkslice partitioned-devices "${D1}" "${sel},\"pool\":{\"name\":\"partitioned\",\"generation\":1,\"resourceSliceCount\":2},\"partitionTypeAttribute\":\"diff.kcm.example.com/profile\",\"devices\":[${devs}]"
  mkslice plain-devices "${D1}" "${sel},\"pool\":{\"name\":\"plain\",\"generation\":1,\"resourceSliceCount\":2},\"devices\":[${devs}]"
  mkslice shareable "${D1}" "${sel}"',"pool":{"name":"shareable","generation":1,"resourceSliceCount":1},"devices":[
    {"name":"s0","allowMultipleAllocations":true,"capacity":{"memory":{"value":"16Gi"},"bandwidth":{"value":"100"}}},
    {"name":"s1","allowMultipleAllocations":true,"capacity":{"memory":{"value":"16Gi"}}},{"name":"s2"}]'
  mkslice incomplete "${D1}" '"nodeName":"kwok-node-3","pool":{"name":"incomplete","generation":1,"resourceSliceCount":2},"devices":[{"name":"i0"}]'
  for p in x y z; do
    mkslice "d2-${p}" "${D2}" "\"nodeName\":\"kwok-node-1\",\"pool\":{\"name\":\"pool-${p}\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"d\"}]"
  done
  settle 2
  mkrequest all "${D1}" ''
  mkrequest node "${D1}" ',"poolName":"node"'
  mkrequest rolled "${D1}" ',"poolName":"rolled"'
  mkrequest partitioned "${D1}" ',"poolName":"partitioned"'
  mkrequest default "${D1}" ',"poolName":"plain","defaultPartitionTypeAttribute":"diff.kcm.example.com/profile"'
  mkrequest shareable "${D1}" ',"poolName":"shareable"'
  mkrequest incomplete "${D1}" ',"poolName":"incomplete"'
  mkrequest missing "${D1}" ',"poolName":"nope"'
  mkrequest limited "${D2}" ',"limit":1'
  for r in node rolled partitioned default shareable missing limited; do wait_until 60 has_status "$r"; done
  settle 3
}
