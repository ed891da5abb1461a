# daemonset-basics: the daemonset-controller's end states on the KWOK nodes: a DaemonSet on every node, one whose
# node selector matches a labelled node, an OnDelete one whose template changed (two revisions, pods untouched), a
# RollingUpdate one updated to a new image (every pod replaced, revision 2), and one rolled back to its first
# template (that revision renumbered 3, its pods kept). Revision names and data are compared as written: they must
# be upstream's bytes.
CONTROLLERS="serviceaccount-controller,daemonset-controller,node-lifecycle-controller"
mkds() {  # mkds NAME STRATEGY [POD_SPEC_MEMBERS] [IMAGE]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"$1"},"spec":{"updateStrategy":{"type":"$2"},
 "selector":{"matchLabels":{"app":"$1"}},"template":{"metadata":{"labels":{"app":"$1"}},
  "spec":{${3:-}"terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"${4:-registry.k8s.io/pause:3.10}"}]}}}}
JSON
}
set_image() { kubectl set image "ds/$1" -n "${NS}" "c=$2" >/dev/null; }
# ds_done NAME N: N pods desired, all updated, ready and available, the status of the current generation.
ds_done() {
  kubectl get ds "$1" -n "${NS}" -o json | python3 -c '
import json, sys
d = json.load(sys.stdin); s = d.get("status", {}); n = int(sys.argv[1])
ok = s.get("observedGeneration") == d["metadata"]["generation"] and s.get("desiredNumberScheduled", 0) == n
ok = ok and all(s.get(k, 0) == n for k in ("currentNumberScheduled", "numberReady", "numberAvailable", "updatedNumberScheduled"))
sys.exit(0 if ok else 1)' "$2"
}
steps() {
  kubectl label node kwok-node-1 --overwrite "diff.kcm.test/pick=${NS}" >/dev/null
  mkds everywhere RollingUpdate
  mkds picked RollingUpdate '"nodeSelector":{"diff.kcm.test/pick":"'"${NS}"'"},'
  mkds lazy OnDelete
  mkds rolled RollingUpdate
  mkds back RollingUpdate
  for ds in everywhere lazy rolled back; do wait_until 90 ds_done "$ds" 3; done
  wait_until 90 ds_done picked 1
  set_image lazy registry.k8s.io/pause:3.9
  set_image rolled registry.k8s.io/pause:3.9
  set_image back registry.k8s.io/pause:3.9
  wait_until 90 ds_done rolled 3
  wait_until 90 ds_done back 3
  set_image back registry.k8s.io/pause:3.10
  wait_until 90 ds_done back 3
  wait_until 30 jsonpath_is ds/lazy '{.status.observedGeneration}' 2
  wait_until 30 count_is controllerrevisions 2 app=lazy
  settle 3
}
