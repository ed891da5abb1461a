# hpa-basics: the horizontal-pod-autoscaler-controller beside upstream's on clusters serving the metrics APIs
# (METRICS_API=1): a Deployment scaled from 1 to 3 pods by CPU utilization (150m over the pods against a 50% target
# of 100m requests) and back to 1 (30m) once the downscale stabilization window has passed; an HPA whose target
# does not exist (FailedGetScale); one on a Pods metric nobody serves (FailedGetPodsMetric); one on an External
# metric picked by labels (20 over an average target of 10: 2 pods; the selector is in the event's text). The HPAs'
# status (current and desired replicas, current metrics, conditions), the Deployments, ReplicaSets, pods and Events
# compare.
CONTROLLERS="serviceaccount-controller,deployment-controller,replicaset-controller,horizontal-pod-autoscaler-controller,node-lifecycle-controller"
EXTRA_FLAGS=(--horizontal-pod-autoscaler-sync-period=1s --horizontal-pod-autoscaler-downscale-stabilization=5s
  --horizontal-pod-autoscaler-cpu-initialization-period=1s)
METRICS_API=1
mkdeploy() {  # mkdeploy NAME REPLICAS
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$1"},"spec":{"replicas":$2,
 "selector":{"matchLabels":{"app":"$1"}},"template":{"metadata":{"labels":{"app":"$1"}},"spec":{
 "terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",
 "resources":{"requests":{"cpu":"100m"}}}]}}}}
JSON
}
mkhpa() {  # mkhpa NAME TARGET MAX METRICS_JSON
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"$1"},"spec":{
 "scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"$2"},"minReplicas":1,"maxReplicas":$3,
 "metrics":$4}}
JSON
}
CPU50='[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}]'
# feed TOTAL_MILLICPU: the live pods of app=web share the total evenly (upstream's resource consumer).
feed() {
  kubectl get pods -n "${NS}" -l app=web -o json 2>/dev/null | python3 -c '
import json, os, sys
total, ns = int(sys.argv[1]), sys.argv[2]
live = [p["metadata"]["name"] for p in json.load(sys.stdin)["items"] if "deletionTimestamp" not in p["metadata"]]
v = {"pods": {ns + "/" + n: {"c": {"cpu": "%dm" % (total // max(len(live), 1))}} for n in live},
     "external": {ns + "/queue_messages": [{"labels": {"queue": "jobs", "env": "a"}, "value": "20"},
                                           {"labels": {"queue": "other"}, "value": "1000"}]}}
tmp = os.environ["METRICS_VALUES"] + ".feed"
json.dump(v, open(tmp, "w"))
os.rename(tmp, os.environ["METRICS_VALUES"])' "$1" "${NS}" || true
}
feeding() { while [ -f "${METRICS_VALUES}.total" ]; do feed "$(cat "${METRICS_VALUES}.total")"; sleep 0.5; done; }
available_is() { jsonpath_is "deployment/$1" '{.spec.replicas}/{.status.availableReplicas}' "$2/$2"; }
hpa_at() { jsonpath_is "hpa/$1" '{.status.currentReplicas}/{.status.desiredReplicas}' "$2/$2"; }
steps() {
  mkdeploy web 1
  mkdeploy quiet 1
  mkdeploy worker 1
  wait_until 60 available_is web 1
  wait_until 60 available_is quiet 1
  wait_until 60 available_is worker 1
  # Past the 1 s CPU initialization period (a sample within it counts only if taken a window after readiness),
  # and the values served before the first HPA sync, on both sides.
  settle 2
  echo 150 > "${METRICS_VALUES}.total"
  feed 150
  feeding & local feeder=$!
  mkhpa web web 5 "${CPU50}"
  mkhpa ghost missing 5 "${CPU50}"
  mkhpa quiet quiet 5 '[{"type":"Pods","pods":{"metric":{"name":"rps"},"target":{"type":"AverageValue","averageValue":"10"}}}]'
  mkhpa worker worker 5 '[{"type":"External","external":{"metric":{"name":"queue_messages","selector":{"matchLabels":{"queue":"jobs"},"matchExpressions":[{"key":"env","operator":"In","values":["b","a"]}]}},"target":{"type":"AverageValue","averageValue":"10"}}}]'
  wait_until 90 available_is web 3
  wait_until 90 available_is worker 2
  wait_until 30 jsonpath_is hpa/worker '{.status.currentMetrics[0].external.current.averageValue}' 10
  wait_until 30 hpa_at web 3
  echo 30 > "${METRICS_VALUES}.total"
  wait_until 90 available_is web 1
  wait_until 30 hpa_at web 1
  wait_until 30 jsonpath_is hpa/web '{.status.currentMetrics[0].resource.current.averageValue}' 30m
  wait_until 30 jsonpath_is hpa/ghost '{.status.conditions[0].reason}' FailedGetScale
  wait_until 30 jsonpath_is hpa/quiet '{.status.conditions[1].reason}' FailedGetPodsMetric
  settle 3
  kill "${feeder}" 2>/dev/null; wait "${feeder}" 2>/dev/null || true
}
