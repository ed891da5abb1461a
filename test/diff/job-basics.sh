# job-basics: the job-controller's end states on KWOK pods (test/cluster/kwok-stages): a Job run to completion, an
# Indexed one (indexes, hostnames, completedIndexes), backoffLimit 0 with a failing pod, podFailurePolicy FailJob on
# exit code 42, a suspended Job, backoffLimitPerIndex with the odd indexes failing, activeDeadlineSeconds over a
# running pod, and a Job managed by another controller. Each ends in a state that does not depend on timing.
CONTROLLERS="serviceaccount-controller,job-controller,node-lifecycle-controller"
mkjob() {  # mkjob NAME SPEC_MEMBERS [TEMPLATE_ANNOTATIONS]
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"$1"},"spec":{$2
 "template":{"metadata":{"annotations":{${3:-}}},
  "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
}
has_condition() {  # has_condition JOB TYPE REASON
  kubectl get job "$1" -n "${NS}" -o json | python3 -c '
import json, sys
j = json.load(sys.stdin)
sys.exit(0 if any(c.get("type") == sys.argv[1] and c.get("status") == "True" and c.get("reason") == sys.argv[2]
                  for c in j.get("status", {}).get("conditions", [])) else 1)' "$2" "$3"
}
steps() {
  mkjob done '"completions":3,"parallelism":2,'
  mkjob idx '"completions":3,"parallelism":3,"completionMode":"Indexed",'
  mkjob doomed '"backoffLimit":0,' '"kwok.kcm.test/behavior":"fail","kwok.kcm.test/exit-code":"3"'
  mkjob policy '"podFailurePolicy":{"rules":[{"action":"FailJob","onExitCodes":{"operator":"In","values":[42]}}]},' \
    '"kwok.kcm.test/behavior":"fail","kwok.kcm.test/exit-code":"42"'
  mkjob susp '"suspend":true,"completions":2,"parallelism":2,'
  mkjob perindex '"completions":4,"parallelism":4,"completionMode":"Indexed","backoffLimitPerIndex":0,' \
    '"kwok.kcm.test/behavior":"fail-odd-index"'
  mkjob deadline '"activeDeadlineSeconds":3,' '"kwok.kcm.test/behavior":"run"'
  mkjob foreign '"managedBy":"example.com/other",'
  wait_until 90 has_condition done Complete CompletionsReached
  wait_until 90 has_condition idx Complete CompletionsReached
  wait_until 90 has_condition doomed Failed BackoffLimitExceeded
  wait_until 90 has_condition policy Failed PodFailurePolicy
  wait_until 90 has_condition susp Suspended JobSuspended
  wait_until 90 has_condition perindex Failed FailedIndexes
  wait_until 90 has_condition deadline Failed DeadlineExceeded
  wait_until 60 count_is pods 0 job-name=deadline
  settle 3
}
