# Topology-aware hints (service.kubernetes.io/topology-mode: Auto): a 96-CPU KWOK node in zone-b next to the three
# 32-CPU zone-a nodes gives the zones equal shares. A Service over two pods per zone gets same-zone hints
# (TopologyAwareHintsEnabled) and loses them when the annotation goes (TopologyAwareHintsDisabled); a Service over
# one pod has too few endpoints for two zones. The pods are Running before the Services exist, so the first sync
# sees them all on both sides.
CONTROLLERS="endpointslice-controller,serviceaccount-controller"
hinted_are() {  # hinted_are SERVICE N: N endpoints with a zone hint over the Service's slices
  local n
  n=$(kubectl get endpointslices -n "${NS}" -l "kubernetes.io/service-name=$1" \
        -o jsonpath='{range .items[*].endpoints[*]}{.hints.forZones[0].name}{"\n"}{end}' 2>/dev/null | grep -c .)
  [ "$n" -eq "$2" ]
}
node_ready() { [ "$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
steps() {
  kubectl apply -f - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"Node","metadata":{"name":"kwok-zone-b","annotations":{"kwok.x-k8s.io/node":"fake"},
 "labels":{"type":"kwok","kubernetes.io/hostname":"kwok-zone-b","topology.kubernetes.io/zone":"zone-b"}},
 "status":{"allocatable":{"cpu":"96","memory":"256Gi","pods":"250"},"capacity":{"cpu":"96","memory":"256Gi","pods":"250"}}}
JSON
  wait_until 60 node_ready kwok-zone-b
  kwok_pod even-a0 kwok-node-0 '"app":"even"'
  kwok_pod even-a1 kwok-node-1 '"app":"even"'
  kwok_pod even-b0 kwok-zone-b '"app":"even"'
  kwok_pod even-b1 kwok-zone-b '"app":"even"'
  kwok_pod lone kwok-node-2 '"app":"lone"'
  for p in even-a0 even-a1 even-b0 even-b1 lone; do wait_until 60 pod_running "$p"; done
  kubectl apply -n "${NS}" -f - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"even","annotations":{"service.kubernetes.io/topology-mode":"Auto"}},
  "spec":{"selector":{"app":"even"},"ports":[{"port":80,"targetPort":8080}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"lone","annotations":{"service.kubernetes.io/topology-mode":"Auto"}},
  "spec":{"selector":{"app":"lone"},"ports":[{"port":80,"targetPort":8080}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"was","annotations":{"service.kubernetes.io/topology-mode":"Auto"}},
  "spec":{"selector":{"app":"even"},"ports":[{"port":80,"targetPort":8080}]}}]}
JSON
  wait_until 30 hinted_are even 4
  wait_until 30 hinted_are was 4
  wait_until 30 slice_endpoints_are lone 1
  kubectl annotate service was -n "${NS}" service.kubernetes.io/topology-mode- >/dev/null
  wait_until 30 hinted_are was 0
  settle 3
}
