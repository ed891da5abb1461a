# Endpoints for Services with selectors: two ports (named and numeric target ports), a pod not matching, a
# relabelled pod leaving, a deleted pod, a headless Service with hostnames and no ports, publishNotReadyAddresses
# with a terminating pod, and a selector-less Service whose hand-written Endpoints must stay as written.
# Pods run on fixed KWOK nodes (kwok_pod: no scheduler involved).
CONTROLLERS="endpoints-controller,serviceaccount-controller"
addresses_are() {  # addresses_are ENDPOINTS N: N ready addresses in all
  local n
  n=$(kubectl get endpoints "$1" -n "${NS}" -o jsonpath='{range .subsets[*].addresses[*]}x{end}' 2>/dev/null | tr -cd x | wc -c)
  [ "$n" -eq "$2" ]
}
steps() {
  kubectl apply -n "${NS}" -f - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":{"tier":"front"}},
  "spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":"http"},
                                           {"name":"metrics","port":9100,"targetPort":9100}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"db"},"spec":{"clusterIP":"None","selector":{"app":"db"}}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"sticky"},
  "spec":{"publishNotReadyAddresses":true,"selector":{"app":"sticky"},"ports":[{"port":80,"targetPort":8080}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"external"},"spec":{"ports":[{"port":443}]}},
 {"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"external"},
  "subsets":[{"addresses":[{"ip":"192.0.2.10"}],"ports":[{"port":443}]}]}]}
JSON
  kwok_pod web-a kwok-node-0 '"app":"web"'
  kwok_pod web-b kwok-node-1 '"app":"web"'
  kwok_pod web-c kwok-node-2 '"app":"web"'
  kwok_pod other kwok-node-0 '"app":"other"'
  kwok_pod db-0 kwok-node-1 '"app":"db"' '"hostname":"db-0","subdomain":"db",'
  kwok_pod db-1 kwok-node-2 '"app":"db"' '"hostname":"db-1","subdomain":"elsewhere",'
  kwok_pod sticky kwok-node-0 '"app":"sticky"' '' '"finalizers":["diff.kcm/hold"],'
  for p in web-a web-b web-c other db-0 db-1 sticky; do wait_until 60 pod_running "$p"; done
  wait_until 30 addresses_are web 3
  wait_until 30 addresses_are db 2
  wait_until 30 addresses_are sticky 1
  kubectl label pod web-b -n "${NS}" --overwrite app=gone >/dev/null
  kubectl delete pod web-c -n "${NS}" --grace-period=0 --force >/dev/null 2>&1
  kubectl delete pod sticky -n "${NS}" --wait=false >/dev/null
  wait_until 30 addresses_are web 1
  settle 3
  kubectl patch pod sticky -n "${NS}" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  wait_until 30 addresses_are sticky 0
  settle 2
}
