# EndpointSlices for Services with selectors: a two-port Service as pods match, leave by relabelling and are
# deleted; pods exposing different ports (two slices, one per port set); a headless Service with hostnames; a
# Service matching no pod (the placeholder slice); publishNotReadyAddresses with a terminating pod (conditions);
# trafficDistribution PreferClose (zone hints from the KWOK nodes' topology.kubernetes.io/zone). Pods run on fixed
# KWOK nodes.
CONTROLLERS="endpointslice-controller,serviceaccount-controller"
slices_are() {  # slices_are SERVICE N
  [ "$(kubectl get endpointslices -n "${NS}" -l "kubernetes.io/service-name=$1" -o name | wc -l)" -eq "$2" ]
}
steps() {
  kubectl apply -n "${NS}" -f - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":{"tier":"front"}},
  "spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":"http"},
                                           {"name":"metrics","port":9100,"targetPort":9100}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"mixed"},
  "spec":{"selector":{"app":"mixed"},"ports":[{"name":"http","port":80,"targetPort":"http"}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"db"},"spec":{"clusterIP":"None","selector":{"app":"db"}}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"nobody"},"spec":{"selector":{"app":"nobody"},"ports":[{"port":80}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"sticky"},
  "spec":{"publishNotReadyAddresses":true,"selector":{"app":"sticky"},"ports":[{"port":80,"targetPort":8080}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"close"},
  "spec":{"trafficDistribution":"PreferClose","selector":{"app":"close"},"ports":[{"port":80,"targetPort":8080}]}}]}
JSON
  kwok_pod web-a kwok-node-0 '"app":"web"'
  kwok_pod web-b kwok-node-1 '"app":"web"'
  kwok_pod web-c kwok-node-2 '"app":"web"'
  kwok_pod other kwok-node-0 '"app":"other"'
  kwok_pod mixed-a kwok-node-0 '"app":"mixed"' '' '' 8080
  kwok_pod mixed-b kwok-node-1 '"app":"mixed"' '' '' 8081
  kwok_pod db-0 kwok-node-1 '"app":"db"' '"hostname":"db-0","subdomain":"db",'
  kwok_pod db-1 kwok-node-2 '"app":"db"' '"hostname":"db-1","subdomain":"elsewhere",'
  kwok_pod sticky kwok-node-0 '"app":"sticky"' '' '"finalizers":["diff.kcm/hold"],'
  kwok_pod close-a kwok-node-2 '"app":"close"'
  for p in web-a web-b web-c other mixed-a mixed-b db-0 db-1 sticky close-a; do wait_until 60 pod_running "$p"; done
  wait_until 30 slice_endpoints_are web 3
  wait_until 30 slices_are mixed 2
  wait_until 30 slice_endpoints_are db 2
  wait_until 30 slice_endpoints_are sticky 1
  wait_until 30 slice_endpoints_are close 1
  wait_until 30 slices_are nobody 1
  kubectl label pod web-b -n "${NS}" --overwrite app=gone >/dev/null
  kubectl delete pod web-c -n "${NS}" --grace-period=0 --force >/dev/null 2>&1
  kubectl delete pod sticky -n "${NS}" --wait=false >/dev/null
  wait_until 30 slice_endpoints_are web 1
  settle 3
}
