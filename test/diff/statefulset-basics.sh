# statefulset-basics: the statefulset-controller's end states on KWOK pods: an OrderedReady set scaled up and back
# down, one rolled to a new image with a partition (the pods below it on the old revision), one rolled back to its
# first template, and a Parallel one with a volumeClaimTemplate (claims Pending: no provisioner). Revision names
# and data are compared as written. The retention policy's owner references are left to the e2e test: with
# WhenDeleted=Delete, upstream's own claim update races its cache now and then (a FailedUpdate conflict event on
# one run and not the next), which would make this comparison flaky.
CONTROLLERS="serviceaccount-controller,statefulset-controller,node-lifecycle-controller"
mksts() {  # mksts NAME REPLICAS [SPEC_MEMBERS]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"$1"},"spec":{${3:-}"replicas":$2,"serviceName":"$1",
 "selector":{"matchLabels":{"app":"$1"}},"template":{"metadata":{"labels":{"app":"$1"}},
  "spec":{"terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
}
# sts_done NAME N [REVISION_FIELD_EQUAL]: N ready replicas, the status of the current generation.
sts_done() {
  kubectl get sts "$1" -n "${NS}" -o json | python3 -c '
import json, sys
d = json.load(sys.stdin); s = d.get("status", {}); n = int(sys.argv[1])
ok = s.get("observedGeneration") == d["metadata"]["generation"] and s.get("readyReplicas", 0) == n and s.get("replicas", 0) == n
if len(sys.argv) > 2: ok = ok and s.get("updatedReplicas", 0) == int(sys.argv[2])
sys.exit(0 if ok else 1)' "$2" ${3:+"$3"}
}
steps() {
  mksts ordered 3
  mksts canary 3 '"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}},'
  mksts back 2
  kubectl apply -n "${NS}" -f - >/dev/null <<'JSON'
{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"claims"},"spec":{"replicas":2,"serviceName":"claims",
 "podManagementPolicy":"Parallel",
 "selector":{"matchLabels":{"app":"claims"}},"template":{"metadata":{"labels":{"app":"claims"}},
  "spec":{"terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",
   "volumeMounts":[{"name":"data","mountPath":"/data"}]}]}},
 "volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}
JSON
  wait_until 120 sts_done ordered 3
  wait_until 120 sts_done canary 3
  wait_until 120 sts_done back 2
  kubectl scale sts ordered -n "${NS}" --replicas=1 >/dev/null
  kubectl set image sts/canary -n "${NS}" c=registry.k8s.io/pause:3.9 >/dev/null
  kubectl set image sts/back -n "${NS}" c=registry.k8s.io/pause:3.9 >/dev/null
  wait_until 120 sts_done ordered 1
  wait_until 120 sts_done canary 3 1
  wait_until 120 sts_done back 2 2
  kubectl set image sts/back -n "${NS}" c=registry.k8s.io/pause:3.10 >/dev/null
  wait_until 120 jsonpath_is sts/back '{.status.observedGeneration}' 3
  wait_until 120 sts_done back 2 2
  wait_until 60 count_is pvc 2
  wait_until 60 count_is pods 2 app=claims
  settle 3
}
