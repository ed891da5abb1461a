# podgroup-protection: PodGroups (scheduling.k8s.io/v1beta1, GenericWorkload on in the apiserver and in both
# controller managers) and pods naming them, kept Running or failed by the test KWOK stages. One PodGroup left alone
# (keeps scheduling.k8s.io/podgroup-protection), one deleted unused (gone), one deleted while a Running pod names it
# (kept, being deleted), one deleted while a pod names it, then the pod deleted (gone), one whose only pod failed
# deleted (gone).
CONTROLLERS="podgroup-protection-controller"
EXTRA_FLAGS=(--feature-gates=GenericWorkload=true)
mkpg() {  # mkpg NAME
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup","metadata":{"name":"$1"},"spec":{"schedulingPolicy":{"basic":{}}}}
JSON
}
mkpod() {  # mkpod NAME PODGROUP BEHAVIOR
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1","annotations":{"kwok.kcm.test/behavior":"$3"}},
 "spec":{"schedulingGroup":{"podGroupName":"$2"},"restartPolicy":"Never","tolerations":[{"operator":"Exists"}],
 "nodeName":"kwok-node-0","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}
JSON
}
gone() { ! kubectl get "$@" -n "${NS}" -o name >/dev/null 2>&1; }
phase() { [[ "$(kubectl get pod "$1" -n "${NS}" -o 'jsonpath={.status.phase}')" == "$2" ]]; }
deleting() { [[ -n "$(kubectl get podgroup "$1" -n "${NS}" -o 'jsonpath={.metadata.deletionTimestamp}')" ]]; }
steps() {
  local g
  kubectl apply -n "${NS}" -f - >/dev/null <<<'{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}'
  for g in idle unused held freed failed; do mkpg "pg-$g"; done
  mkpod holder pg-held run
  mkpod leaver pg-freed run
  mkpod crasher pg-failed fail
  wait_until 60 phase holder Running
  wait_until 60 phase leaver Running
  wait_until 60 phase crasher Failed
  settle 2
  for g in unused held freed failed; do kubectl delete podgroup "pg-$g" -n "${NS}" --wait=false >/dev/null; done
  wait_until 30 gone podgroup/pg-unused
  wait_until 30 gone podgroup/pg-failed
  wait_until 30 deleting pg-held
  kubectl delete pod leaver -n "${NS}" --grace-period=0 --force >/dev/null 2>&1
  wait_until 30 gone podgroup/pg-freed
  settle 3
}
