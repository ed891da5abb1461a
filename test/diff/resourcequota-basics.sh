# resourcequota-basics: the resourcequota-controller's status for quotas on compute resources (requests, limits,
# ephemeral storage, an extended resource), object counts (legacy names, count/<resource>[.<group>]), services,
# PVCs per storage class, and scopes (BestEffort, Terminating, a PriorityClass scope selector), after pods,
# configmaps, secrets, services, a PVC and a Deployment were created and some of them deleted again (the
# replenishment path). status.hard and status.used are compared as written.
CONTROLLERS="serviceaccount-controller,resourcequota-controller"
mkquota() {  # mkquota NAME HARD_JSON [EXTRA_SPEC_MEMBERS]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"$1"},"spec":{"hard":$2${3:+,$3}}}
JSON
}
mkpod() {  # mkpod NAME REQUESTS LIMITS [EXTRA_SPEC_MEMBERS]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1"},"spec":{${4:-}"terminationGracePeriodSeconds":0,
 "containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"requests":$2,"limits":$3}}]}}
JSON
}
used_is() { jsonpath_is "resourcequota/$1" "{.status.used.$2}" "$3"; }
steps() {
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"diff-quota-high"},"value":1000}
JSON
  # Each quota is created once the previous one has a status (admission counts the next one into it then).
  mkquota compute '{"cpu":"4","memory":"4Gi","requests.cpu":"4","limits.cpu":"8","limits.memory":"8Gi","pods":"10"}' \
    '"scopes":["NotBestEffort"]'
  wait_until 30 used_is compute pods 0
  mkquota extras '{"ephemeral-storage":"10Gi","requests.ephemeral-storage":"10Gi","requests.example.com/dongle":"4","count/pods":"10"}'
  wait_until 30 used_is extras count/pods 0
  mkquota objects '{"configmaps":"10","secrets":"10","services":"5","count/configmaps":"10","count/deployments.apps":"3","count/replicasets.apps":"3","persistentvolumeclaims":"5","requests.storage":"20Gi","gold.storageclass.storage.k8s.io/persistentvolumeclaims":"2","gold.storageclass.storage.k8s.io/requests.storage":"10Gi","services.loadbalancers":"1","resourcequotas":"10"}'
  wait_until 30 used_is objects resourcequotas 3
  mkquota besteffort '{"pods":"5"}' '"scopes":["BestEffort"]'
  wait_until 30 used_is besteffort pods 0
  mkquota terminating '{"pods":"5","requests.cpu":"2"}' '"scopes":["Terminating"]'
  wait_until 30 used_is terminating pods 0
  mkquota priority '{"pods":"5","requests.memory":"2Gi"}' \
    '"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["diff-quota-high"]}]}'
  wait_until 30 used_is priority pods 0
  wait_until 30 used_is objects resourcequotas 6
  mkpod small '{"cpu":"100m","memory":"128Mi","ephemeral-storage":"1Gi"}' '{"cpu":"200m","memory":"256Mi"}'
  mkpod big '{"cpu":"1500m","memory":"1536Mi","example.com/dongle":"2"}' '{"cpu":"2","memory":"2Gi","example.com/dongle":"2"}'
  mkpod deadline '{"cpu":"250m","memory":"64Mi"}' '{"cpu":"250m","memory":"64Mi"}' '"activeDeadlineSeconds":3600,'
  mkpod high '{"cpu":"50m","memory":"512Mi"}' '{"cpu":"50m","memory":"512Mi"}' '"priorityClassName":"diff-quota-high",'
  mkpod idle '{}' '{}'
  for cm in one two three; do kubectl create configmap "$cm" -n "${NS}" --from-literal=k=v >/dev/null; done
  kubectl create secret generic s1 -n "${NS}" --from-literal=k=v >/dev/null
  kubectl create service clusterip web -n "${NS}" --tcp=80:8080 >/dev/null
  kubectl create service clusterip api -n "${NS}" --tcp=443:8443 >/dev/null
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],
 "storageClassName":"gold","resources":{"requests":{"storage":"3Gi"}}}}
JSON
  kubectl create deployment dep -n "${NS}" --image=registry.k8s.io/pause:3.10 --replicas=0 >/dev/null
  wait_until 30 used_is compute pods 4
  wait_until 30 used_is objects configmaps 3
  # Deletes replenish at once.
  kubectl delete pod big idle -n "${NS}" --grace-period=0 --force >/dev/null 2>&1
  kubectl delete configmap two -n "${NS}" >/dev/null
  kubectl delete service api -n "${NS}" >/dev/null
  wait_until 30 used_is compute pods 3
  wait_until 30 used_is extras requests\\.example\\.com/dongle 0
  wait_until 30 used_is besteffort pods 0
  wait_until 30 used_is objects configmaps 2
  wait_until 30 used_is objects services 1
  settle 3
  kubectl delete priorityclass diff-quota-high >/dev/null
}
