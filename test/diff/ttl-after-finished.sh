# ttl-after-finished: Jobs finished by hand through the status subresource (no job-controller on either side): one
# with a 2 s TTL and a pod of its own (deleted with it, foreground), one with a TTL of an hour lowered to 0 after it
# finished, one finished without TTL and one unfinished with a TTL (both kept).
CONTROLLERS="serviceaccount-controller,ttl-after-finished-controller,garbage-collector-controller"
gone() { ! kubectl get "$1" -n "${NS}" -o name >/dev/null 2>&1; }
mkjob() {  # mkjob NAME [TTL]
  local ttl=""
  [ -n "${2:-}" ] && ttl="\"ttlSecondsAfterFinished\":$2,"
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"$1"},"spec":{${ttl}
 "template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
}
finish() {  # finish NAME: SuccessCriteriaMet and Complete now
  local t s
  t=$(date -u +%Y-%m-%dT%H:%M:%SZ); s=$(date -u -d '-5 seconds' +%Y-%m-%dT%H:%M:%SZ)
  kubectl patch job "$1" -n "${NS}" --subresource=status --type=merge -p "{\"status\":{\"startTime\":\"$s\",
    \"completionTime\":\"$t\",\"succeeded\":1,\"conditions\":[{\"type\":\"SuccessCriteriaMet\",\"status\":\"True\",
    \"lastTransitionTime\":\"$t\"},{\"type\":\"Complete\",\"status\":\"True\",\"lastTransitionTime\":\"$t\"}]}}" >/dev/null
}
steps() {
  mkjob done 2
  mkjob later 3600
  mkjob kept
  mkjob unfinished 0
  local uid
  uid=$(kubectl get job done -n "${NS}" -o jsonpath='{.metadata.uid}')
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"done-worker","ownerReferences":[{"apiVersion":"batch/v1",
 "kind":"Job","name":"done","uid":"${uid}","controller":true,"blockOwnerDeletion":true}]},
 "spec":{"nodeName":"kwok-node-0","restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}
JSON
  wait_until 60 jsonpath_is pod/done-worker '{.status.phase}' Succeeded  # KWOK finishes restartPolicy: Never pods
  for j in done later kept; do finish "$j"; done
  wait_until 30 gone job/done
  wait_until 30 gone pod/done-worker
  kubectl patch job later -n "${NS}" --type=merge -p '{"spec":{"ttlSecondsAfterFinished":0}}' >/dev/null
  wait_until 30 gone job/later
  settle 3
}
