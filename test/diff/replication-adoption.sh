# ReplicaSet and ReplicationController adoption: orphan pods matching a new controller's selector are adopted,
# pods that stop matching are released, scale down picks by rank. Every pod is on one node, so the ranking does not
# depend on where the scheduler put them (co-located pods go first).
CONTROLLERS="serviceaccount-controller,replicaset-controller,replicationcontroller-controller,garbage-collector-controller,node-lifecycle-controller"
pod_json() {  # pod_json NAME APP
  echo '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'"$1"'","labels":{"app":"'"$2"'"}},"spec":{"nodeSelector":{"kubernetes.io/hostname":"kwok-node-0"},"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}'
}
steps() {
  for p in orphan-a orphan-b; do pod_json "$p" rs | kubectl apply -n "${NS}" -f - >/dev/null; done
  pod_json orphan-rc rc | kubectl apply -n "${NS}" -f - >/dev/null
  for p in orphan-a orphan-b orphan-rc; do wait_until 60 jsonpath_is "pod/$p" '{.status.phase}' Running; done
  # The scale-down ranks pods by how long they have been Ready in log2 buckets, then by UID (random). Orphans Ready
  # 20 s longer than the pods the controllers create fall in another bucket, so both sides keep the same pod.
  settle 20
  kubectl apply -n "${NS}" -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: 3
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {nodeSelector: {kubernetes.io/hostname: kwok-node-0}, containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  replicas: 2
  selector: {app: rc}
  template:
    metadata: {labels: {app: rc}}
    spec: {nodeSelector: {kubernetes.io/hostname: kwok-node-0}, containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
YAML
  wait_until 120 jsonpath_is rs/rs '{.status.readyReplicas}' 3
  wait_until 120 jsonpath_is rc/rc '{.status.readyReplicas}' 2
  kubectl label pod orphan-a -n "${NS}" app=released --overwrite >/dev/null
  wait_until 120 jsonpath_is rs/rs '{.status.readyReplicas}' 3
  wait_until 60 count_is pods 3 app=rs
  kubectl scale rs/rs -n "${NS}" --replicas=1 >/dev/null
  wait_until 60 count_is pods 1 app=rs
  settle 3
}
