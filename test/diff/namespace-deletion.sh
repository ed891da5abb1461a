# Namespace deletion with content and a finalizer: the namespace controller empties the namespace (a Deployment's
# ReplicaSet and pods, ConfigMaps, the ServiceAccount), then waits on the object whose finalizer stays, reporting it
# in the namespace's conditions; once the finalizer is removed the namespace is finalized and gone.
CONTROLLERS="serviceaccount-controller,root-ca-certificate-publisher-controller,namespace-controller,deployment-controller,replicaset-controller,garbage-collector-controller,node-lifecycle-controller"
ns_condition_is() { [ "$(kubectl get namespace "${NS}" -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}")" = "$2" ]; }
only_held_left() { [ "$(kubectl get configmaps,pods,replicasets,deployments,serviceaccounts -n "${NS}" -o name | tr '\n' ' ')" = "configmap/held " ]; }
steps() {
  kubectl create deployment web -n "${NS}" --image=registry.k8s.io/pause:3.10 --replicas=2 >/dev/null
  wait_until 120 rollout_done web
  kubectl create configmap plain -n "${NS}" --from-literal=a=b >/dev/null
  kubectl apply -n "${NS}" -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  finalizers: [example.com/hold]
data: {a: b}
YAML
  kubectl delete namespace "${NS}" --wait=false >/dev/null
  wait_until 120 ns_condition_is NamespaceFinalizersRemaining True
  wait_until 120 only_held_left
  settle 20  # past the controller's requeue after the pods' grace estimate: conditions are final
}
