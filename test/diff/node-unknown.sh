# Nodes going Unknown with pods and tolerations: KWOK stops, so its nodes stop renewing their Leases, while a node
# of the scenario's own in zone-b keeps heartbeating (with every zone fully disrupted the controller would enter
# "master disruption mode" and taint nothing). zone-a's nodes become Unknown, get the unreachable taints, their pods
# are marked not Ready, and the taint-eviction controller evicts what does not tolerate the taint long enough.
CONTROLLERS="serviceaccount-controller,node-lifecycle-controller,taint-eviction-controller"
HEALTHY=diff-healthy-zone-b

heartbeat() {  # Ready condition and Lease of the healthy node, as a kubelet would post them
  local now
  now="$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)"
  kubectl patch node "${HEALTHY}" --subresource=status --type=merge -p \
    '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"diff",'\
'"lastHeartbeatTime":"'"${now%.*}Z"'","lastTransitionTime":"'"${now%.*}Z"'"}]}}' >/dev/null 2>&1 || true
  kubectl apply -f - >/dev/null 2>&1 <<JSON || true
{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"${HEALTHY}","namespace":"kube-node-lease"},
 "spec":{"holderIdentity":"${HEALTHY}","leaseDurationSeconds":40,"renewTime":"${now}"}}
JSON
}

pod_with_tolerations() {  # pod_with_tolerations NAME TOLERATIONS-JSON
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1"},
 "spec":{"nodeSelector":{"type":"kwok"},"tolerations":$2,
         "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}
JSON
}

all_kwok_nodes_tainted() {
  [ "$(kubectl get nodes -l type=kwok -o jsonpath='{range .items[*]}{.spec.taints[*].key}{":"}{.spec.taints[*].effect}{"\n"}{end}' |
    grep -c 'node.kubernetes.io/unreachable.*NoExecute')" -eq 3 ]
}
terminating() { [ -n "$(kubectl get pod "$1" -n "${NS}" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null)" ]; }

steps() {
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Node","metadata":{"name":"${HEALTHY}","labels":{"topology.kubernetes.io/zone":"zone-b"}}}
JSON
  heartbeat
  ( while sleep 5; do heartbeat; done ) &
  local beater=$!
  pod_with_tolerations tolerates-5s \
    '[{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":5}]'
  pod_with_tolerations tolerates-forever '[{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute"}]'
  pod_with_tolerations default-tolerations '[]'
  for p in tolerates-5s tolerates-forever default-tolerations; do
    wait_until 60 jsonpath_is "pod/$p" '{.status.phase}' Running
  done
  bash hack/cluster.sh stop "${CLUSTER_NAME}" kwok >/dev/null 2>&1
  wait_until 150 all_kwok_nodes_tainted
  wait_until 60 terminating tolerates-5s
  settle 8
  kill "${beater}" 2>/dev/null || true
  wait "${beater}" 2>/dev/null || true
}
