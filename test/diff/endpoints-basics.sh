# Endpoints for Services with selectors: two ports (named and numeric target ports), a pod not matching, a
# relabelled pod leaving, a deleted pod, a headless Service with hostnames and no ports, publishNotReadyAddresses
# with a terminating pod, and a selector-less Service whose hand-written Endpoints must stay as written.
# Pods run on fixed KWOK nodes (no scheduler involved).
CONTROLLERS="endpoints-controller,serviceaccount-controller"
pod() {  # pod NAME NODE LABELS [EXTRA_SPEC] [EXTRA_META]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1",${5:-}"labels":{$3}},
 "spec":{"nodeName":"$2",${4:-}"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",
 "ports":[{"name":"http","containerPort":8080},{"name":"metrics","containerPort":9100}]}]}}
JSON
}
running() { jsonpath_is "pod/$1" '{.status.phase}' Running; }
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
  pod web-a kwok-node-0 '"app":"web"'
  pod web-b kwok-node-1 '"app":"web"'
  pod web-c kwok-node-2 '"app":"web"'
  pod other kwok-node-0 '"app":"other"'
  pod db-0 kwok-node-1 '"app":"db"' '"hostname":"db-0","subdomain":"db",'
  pod db-1 kwok-node-2 '"app":"db"' '"hostname":"db-1","subdomain":"elsewhere",'
  pod sticky kwok-node-0 '"app":"sticky"' '' '"finalizers":["diff.kcm/hold"],'
  for p in web-a web-b web-c other db-0 db-1 sticky; do wait_until 60 running "$p"; done
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
