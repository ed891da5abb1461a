# endpointslice-mirroring and service-cidr: custom Endpoints of selector-less Services mirrored into EndpointSlices
# (two subsets, both address families, one Endpoints labelled skip-mirror,
# one updated after mirroring); a new ServiceCIDR gets the protection finalizer and Ready=True, the cluster's
# default one too.
CONTROLLERS="endpointslice-mirroring-controller,service-cidr-controller,serviceaccount-controller"
DUMP_EXTRA=(default:servicecidrs/diff-extra default:servicecidrs/kubernetes)
ready() { [ "$(kubectl get servicecidr "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
steps() {
  kubectl apply -n "${NS}" -f - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"ext"},"spec":{"ports":[{"name":"https","port":443},{"name":"dns","port":53,"protocol":"UDP"}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"skipped"},"spec":{"ports":[{"port":80}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"changing"},"spec":{"ports":[{"port":80}]}},
 {"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"ext","labels":{"team":"a"},"annotations":{"note":"x"}},
  "subsets":[{"addresses":[{"ip":"192.0.2.10","hostname":"one","nodeName":"kwok-node-0"},{"ip":"2001:db8::10"}],
              "notReadyAddresses":[{"ip":"192.0.2.11"}],
              "ports":[{"name":"https","port":443,"protocol":"TCP"}]},
             {"addresses":[{"ip":"192.0.2.20"}],"ports":[{"name":"dns","port":53,"protocol":"UDP"}]}]},
 {"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"skipped","labels":{"endpointslice.kubernetes.io/skip-mirror":"true"}},
  "subsets":[{"addresses":[{"ip":"192.0.2.30"}],"ports":[{"port":80,"protocol":"TCP"}]}]},
 {"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"changing"},
  "subsets":[{"addresses":[{"ip":"192.0.2.40"}],"ports":[{"port":80,"protocol":"TCP"}]}]}]}
JSON
  kubectl apply -f - >/dev/null <<'JSON'
{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"diff-extra"},"spec":{"cidrs":["10.100.0.0/24"]}}
JSON
  wait_until 30 slice_endpoints_are ext 4
  wait_until 30 slice_endpoints_are changing 1
  kubectl apply -n "${NS}" -f - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"changing"},
 "subsets":[{"addresses":[{"ip":"192.0.2.41"},{"ip":"192.0.2.42"}],"ports":[{"port":80,"protocol":"TCP"}]}]}
JSON
  wait_until 30 slice_endpoints_are changing 2
  wait_until 30 ready diff-extra
  wait_until 30 ready kubernetes
  settle 3
}
