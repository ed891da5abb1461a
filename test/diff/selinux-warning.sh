# selinux-warning: a CSI volume whose CSIDriver says seLinuxMount: true, bound by the binder, used by pods on a KWOK
# node: two with different SELinux levels (a SELinuxLabelConflict event each), one Recursive beside a MountOption
# one of the same level (SELinuxChangePolicyConflict), one mounting the volume in two containers with two labels
# (MultipleSELinuxLabels). The controller writes nothing but these events.
CONTROLLERS="serviceaccount-controller,selinux-warning-controller,persistentvolume-binder-controller"
DUMP_EXTRA=(default:persistentvolumes)
DRIVER="diff-selinux.csi.k8s.io"
mkpod() {  # mkpod NAME SECURITY_CONTEXT CONTAINERS
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1"},"spec":{"nodeName":"kwok-node-0","securityContext":$2,
 "containers":[$3],"volumes":[{"name":"vol1","persistentVolumeClaim":{"claimName":"data"}}]}}
JSON
}
container() {  # container NAME [LEVEL]
  local sc=""
  [ -n "${2:-}" ] && sc=",\"securityContext\":{\"seLinuxOptions\":{\"level\":\"$2\"}}"
  echo "{\"name\":\"$1\",\"image\":\"registry.k8s.io/pause:3.10\",\"volumeMounts\":[{\"name\":\"vol1\",\"mountPath\":\"/mnt\"}]${sc}}"
}
reasons() { kubectl get events -n "${NS}" -o 'jsonpath={range .items[*]}{.reason}{"\n"}{end}' | sort | uniq -c; }
has_events() {  # has_events REASON N: at least N events of REASON
  [ "$(kubectl get events -n "${NS}" --field-selector "reason=$1" -o name | wc -l)" -ge "$2" ]
}
steps() {
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"storage.k8s.io/v1","kind":"CSIDriver","metadata":{"name":"${DRIVER}"},"spec":{"attachRequired":false,"seLinuxMount":true}}
JSON
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"diff-selinux"},"spec":{"capacity":{"storage":"1Gi"},
 "accessModes":["ReadWriteMany"],"persistentVolumeReclaimPolicy":"Retain","storageClassName":"diff-selinux",
 "csi":{"driver":"${DRIVER}","volumeHandle":"diff-selinux"}}}
JSON
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteMany"],
 "storageClassName":"diff-selinux","volumeName":"diff-selinux","resources":{"requests":{"storage":"1Gi"}}}}
JSON
  wait_until 30 jsonpath_is pvc/data '{.status.phase}' Bound
  mkpod low '{"seLinuxOptions":{"level":"s0:c1,c2"}}' "$(container c)"
  mkpod high '{"seLinuxOptions":{"level":"s0:c98,c99"}}' "$(container c)"
  mkpod recursive '{"seLinuxOptions":{"level":"s0:c1,c2"},"seLinuxChangePolicy":"Recursive"}' "$(container c)"
  mkpod twice '{}' "$(container a s0:c1),$(container b s0:c2)"
  wait_until 60 has_events SELinuxLabelConflict 2
  wait_until 60 has_events SELinuxChangePolicyConflict 2
  wait_until 60 has_events MultipleSELinuxLabels 1
  settle 3
}
