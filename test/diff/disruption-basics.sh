# PodDisruptionBudget status: a percentage over a ReplicaSet's pods (expected from its scale), an integer over bare
# pods, maxUnavailable over unmanaged pods (the UnmanagedPods event), a budget selecting nothing (NoPods); one
# eviction through the Eviction API that the percentage allows, the ReplicaSet replacing the pod.
CONTROLLERS="serviceaccount-controller,disruption-controller,replicaset-controller,node-lifecycle-controller"
allowed_is() { jsonpath_is "pdb/$1" '{.status.disruptionsAllowed}' "$2"; }
generation_observed() {
  [ "$(kubectl get pdb "$1" -n "${NS}" -o jsonpath='{.status.observedGeneration}')" = \
    "$(kubectl get pdb "$1" -n "${NS}" -o jsonpath='{.metadata.generation}')" ]
}
steps() {
  kubectl apply -n "${NS}" -f - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"pct"},
  "spec":{"minAvailable":"50%","selector":{"matchLabels":{"app":"web"}}}},
 {"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"int"},
  "spec":{"minAvailable":2,"selector":{"matchLabels":{"app":"bare"}}}},
 {"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"unmanaged"},
  "spec":{"maxUnavailable":1,"selector":{"matchLabels":{"app":"loose"}}}},
 {"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"empty"},
  "spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"nobody"}}}}]}
JSON
  # Every budget synced (its NoPods event written) before any pod exists: the same Events on both sides.
  for b in pct int unmanaged empty; do wait_until 30 generation_observed "$b"; done
  kubectl apply -n "${NS}" -f - >/dev/null <<'JSON'
{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web"},"spec":{"replicas":3,
 "selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
 "spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
  kwok_pod bare-0 kwok-node-0 '"app":"bare"'
  kwok_pod bare-1 kwok-node-1 '"app":"bare"'
  kwok_pod loose-0 kwok-node-2 '"app":"loose"'
  for p in bare-0 bare-1 loose-0; do wait_until 60 pod_running "$p"; done
  wait_until 120 jsonpath_is rs/web '{.status.readyReplicas}' 3
  wait_until 30 allowed_is pct 1
  wait_until 30 jsonpath_is pdb/int '{.status.currentHealthy}' 2
  wait_until 30 jsonpath_is pdb/unmanaged '{.status.currentHealthy}' 1
  local victim
  victim=$(kubectl get pods -n "${NS}" -l app=web -o jsonpath='{.items[0].metadata.name}')
  kubectl create --raw "/api/v1/namespaces/${NS}/pods/${victim}/eviction" -f - >/dev/null <<JSON
{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"${victim}","namespace":"${NS}"}}
JSON
  wait_until 60 count_is pods 3 app=web
  wait_until 120 jsonpath_is rs/web '{.status.readyReplicas}' 3
  wait_until 30 allowed_is pct 1
  settle 3
}
