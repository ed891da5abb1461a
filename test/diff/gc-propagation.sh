# Garbage collection of ReplicationControllers' pods: foreground, background and orphan deletion.
CONTROLLERS="serviceaccount-controller,replicationcontroller-controller,garbage-collector-controller,node-lifecycle-controller"
steps() {
  for rc in fg bg orphan; do
    kubectl apply -n "${NS}" -f - >/dev/null <<YAML
apiVersion: v1
kind: ReplicationController
metadata: {name: ${rc}}
spec:
  replicas: 2
  selector: {app: ${rc}}
  template:
    metadata: {labels: {app: ${rc}}}
    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
YAML
  done
  for rc in fg bg orphan; do wait_until 120 jsonpath_is "rc/${rc}" '{.status.readyReplicas}' 2; done
  kubectl delete rc fg -n "${NS}" --cascade=foreground --wait=false >/dev/null
  kubectl delete rc bg -n "${NS}" --cascade=background --wait=false >/dev/null
  kubectl delete rc orphan -n "${NS}" --cascade=orphan --wait=false >/dev/null
  wait_until 120 count_is rc 0
  wait_until 120 count_is pods 0 app=fg
  wait_until 120 count_is pods 0 app=bg
  settle 3
}
