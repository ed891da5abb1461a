# cronjob-basics: CronJobs over one schedule time: */1 with a completing Job (active, then lastSuccessfulTime and
# SawCompletedJob), Forbid with a Job that keeps running, spec.timeZone Europe/Berlin (the scheduled-timestamp
# annotation in +01:00), and one suspended from the start. Once each has run once, all are suspended so that a second
# schedule time, which the two sides may or may not reach, changes nothing. Job names carry the scheduled minute,
# normalised as <minute> (hack/diff/normalize.py).
CONTROLLERS="serviceaccount-controller,cronjob-controller,job-controller,node-lifecycle-controller"
mkcron() {  # mkcron NAME SPEC_MEMBERS [POD_ANNOTATIONS]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"$1"},"spec":{"schedule":"*/1 * * * *",$2
 "jobTemplate":{"spec":{"template":{"metadata":{"annotations":{${3:-}}},
  "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}}}}
JSON
}
has_run() { [ -n "$(kubectl get cronjob "$1" -n "${NS}" -o jsonpath='{.status.lastScheduleTime}')" ]; }
steps() {
  # All four are created within the same minute, so they share their first schedule time: not in a minute's last
  # 15 s (under load each kubectl apply takes a while).
  while [ "$(date +%-S)" -ge 45 ]; do sleep 1; done
  mkcron every '"successfulJobsHistoryLimit":3,'
  mkcron forbid '"concurrencyPolicy":"Forbid",' '"kwok.kcm.test/behavior":"run"'
  mkcron berlin '"timeZone":"Europe/Berlin",'
  mkcron paused '"suspend":true,'
  wait_until 100 has_run every
  wait_until 30 has_run forbid
  wait_until 30 has_run berlin
  for c in every forbid berlin; do
    kubectl patch cronjob "$c" -n "${NS}" --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
  done
  wait_until 60 jsonpath_is cronjob/every '{.status.active}' ''
  wait_until 30 jsonpath_is cronjob/berlin '{.status.active}' ''
  wait_until 30 jsonpath_is cronjob/forbid '{.status.active[0].kind}' Job
  settle 3
}
