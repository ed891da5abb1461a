#!/usr/bin/env bash
# The differential harness: runs each scenario once under upstream kube-controller-manager (built from the pin)
# and once under ours, each on a fresh local cluster with the same command line (the seed's, restricted to the
# scenario's controllers), dumps the end state, normalises what legitimately differs (hack/diff/normalize.py) and
# prints the difference. Exits non-zero on any difference.
# Usage: hack/diff-upstream.sh all | --self-test | SCENARIO...   (scenarios: test/diff/<name>.sh)
#   all          every scenario under test/diff/ (except *-injected)
#   --self-test  runs the injected-difference scenario and fails unless the harness reports it
# Scenario files are sourced: they set CONTROLLERS (comma list for --controllers) and optionally EXTRA_FLAGS (array)
# and DUMP_EXTRA (array of NS:RESOURCE[/NAME] outside the scenario's namespace to compare too, e.g.
# kube-public:configmap/cluster-info), and METRICS_API=1 for a cluster serving the metrics APIs (METRICS_VALUES),
# and define steps(), run with NS (a fresh namespace whose default ServiceAccount exists), SIDE (upstream|ours),
# CLUSTER_NAME (for hack/cluster.sh stop/start), kubectl on the cluster and the helpers below. Ends in a settled state: steps() waits for what it expects.
. "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}"
. bench/lib.sh

DIFF_OUT="${OUTPUT_DIR}/diff"
mkdir -p "${DIFF_OUT}"

# ---- helpers for scenarios
# wait_until SECONDS CMD...: polls CMD every 0.5 s until it succeeds; fails the scenario after SECONDS (exits the
# side's subshell: `set -e` does not hold inside a function called from a `||` list).
wait_until() {
  local secs="$1"; shift
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "scenario (${SIDE}): timed out after ${secs}s waiting for: $*" >&2
      exit 1
    fi
    sleep 0.5
  done
}
# jsonpath_is OBJ PATH VALUE: `kubectl get OBJ -n NS -o jsonpath=PATH` prints VALUE.
jsonpath_is() { [ "$(kubectl get "$1" -n "${NS}" -o "jsonpath=$2" 2>/dev/null)" = "$3" ]; }
# count_is RESOURCE N [SELECTOR]: N objects of RESOURCE in NS.
count_is() {
  local n
  n=$(kubectl get "$1" -n "${NS}" ${3:+-l "$3"} -o name 2>/dev/null | wc -l)
  [ "$n" -eq "$2" ]
}
# rollout_done DEPLOYMENT: observedGeneration caught up and every replica updated and available.
rollout_done() {
  kubectl rollout status "deployment/$1" -n "${NS}" --timeout=1s >/dev/null 2>&1
}
# kwok_pod NAME NODE LABELS [EXTRA_SPEC] [EXTRA_META] [HTTP_PORT]: a pause pod in NS bound to NODE (no scheduler)
# with container ports http (HTTP_PORT, default 8080) and metrics (9100); LABELS, EXTRA_SPEC and EXTRA_META are JSON
# members (the latter two each ending in a comma).
kwok_pod() {
  kubectl apply -n "${NS}" -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1",${5:-}"labels":{$3}},
 "spec":{"nodeName":"$2",${4:-}"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",
 "ports":[{"name":"http","containerPort":${6:-8080}},{"name":"metrics","containerPort":9100}]}]}}
JSON
}
# slice_endpoints_are SERVICE N: N endpoints over the EndpointSlices labelled kubernetes.io/service-name=SERVICE.
slice_endpoints_are() {
  local n
  n=$(kubectl get endpointslices -n "${NS}" -l "kubernetes.io/service-name=$1" \
        -o jsonpath='{range .items[*].endpoints[*]}x{end}' 2>/dev/null | tr -cd x | wc -c)
  [ "$n" -eq "$2" ]
}
# pod_running NAME: the pod's phase is Running.
pod_running() { jsonpath_is "pod/$1" '{.status.phase}' Running; }
# settle SECONDS: lets controllers finish what the last wait does not observe (both sides wait the same).
settle() { sleep "$1"; }

# ---- one side
# run_side SCENARIO SIDE BINARY: fresh cluster, kcm, steps, dump to ${DIFF_OUT}/SCENARIO.SIDE.json.
run_side() {
  local scenario="$1" side="$2" binary="$3"
  local cluster="diff-${side}-$$"
  (
    CONTROLLERS="" EXTRA_FLAGS=() DUMP_EXTRA=() METRICS_API=0
    # shellcheck disable=SC1090
    . "test/diff/${scenario}.sh"
    METRICS_API="${METRICS_API}" bash hack/cluster.sh up "${cluster}" >/dev/null 2>"${DIFF_OUT}/${scenario}.${side}.cluster.log" ||
      { cat "${DIFF_OUT}/${scenario}.${side}.cluster.log" >&2; exit 1; }
    # The kcm's log is kept whatever happens (a failed side is read from it).
    trap 'kill "${KCM_PID:-0}" 2>/dev/null; wait 2>/dev/null
      cp "${CLUSTER_DIR:-/nonexistent}/logs/bench-'"${side}"'.log" "${DIFF_OUT}/'"${scenario}.${side}"'.kcm.log" 2>/dev/null
      bash hack/cluster.sh down "'"${cluster}"'" >/dev/null 2>&1 || true' EXIT
    eval "$(bash hack/cluster.sh env "${cluster}")"
    seed_flags "${CONTROLLERS}"
    FLAGS+=("${EXTRA_FLAGS[@]}")
    start_kcm "${side}" "${binary}"
    NS="diff"
    SIDE="${side}"
    CLUSTER_NAME="${cluster}"
    export NS SIDE CLUSTER_NAME
    kubectl create namespace "${NS}" >/dev/null
    if [[ ",${CONTROLLERS}," == *",serviceaccount-controller,"* ]]; then
      wait_until 30 kubectl get serviceaccount default -n "${NS}"
    fi
    log "diff ${scenario}: ${side} kcm running (${CONTROLLERS})"
    steps
    python3 hack/diff/normalize.py dump "${NS}" "${DUMP_EXTRA[@]}" > "${DIFF_OUT}/${scenario}.${side}.json"
  )
}

run_scenario() {
  local scenario="$1"
  [ -f "test/diff/${scenario}.sh" ] || die "no scenario test/diff/${scenario}.sh"
  rm -f "${DIFF_OUT}/${scenario}".*.json "${DIFF_OUT}/${scenario}".*.kcm.log
  local ours="${KCM_BINARY:-${OUTPUT_DIR}/bin/kube-controller-manager}"
  if [ -n "${DIFF_SERIAL:-}" ]; then
    run_side "${scenario}" upstream "${CONTROL_PLANE_BIN}/kube-controller-manager" || die "${scenario}: upstream side failed"
    run_side "${scenario}" ours "${ours}" || die "${scenario}: our side failed"
  else
    # Both sides at once, each on its own cluster (they share nothing but the machine, and load it alike): half the
    # wall time. DIFF_SERIAL=1 runs them one after the other.
    local up_pid ours_pid up_rc=0 ours_rc=0
    run_side "${scenario}" upstream "${CONTROL_PLANE_BIN}/kube-controller-manager" & up_pid=$!
    run_side "${scenario}" ours "${ours}" & ours_pid=$!
    wait "${up_pid}" || up_rc=$?
    wait "${ours_pid}" || ours_rc=$?
    [ "${up_rc}" -eq 0 ] || die "${scenario}: upstream side failed"
    [ "${ours_rc}" -eq 0 ] || die "${scenario}: our side failed"
  fi
  python3 hack/diff/normalize.py compare "${DIFF_OUT}/${scenario}.upstream.json" "${DIFF_OUT}/${scenario}.ours.json" \
    "${scenario}"
}

[ $# -ge 1 ] || die "usage: $0 all | --self-test | SCENARIO..."
[ -x "${CONTROL_PLANE_BIN}/kube-controller-manager" ] || bash hack/build-control-plane.sh >/dev/null
[ -x "${KCM_BINARY:-${OUTPUT_DIR}/bin/kube-controller-manager}" ] || bash hack/build.sh >/dev/null

if [ "$1" = "--self-test" ]; then
  out="$(run_scenario deployment-injected 2>&1)" && die "self-test: the injected difference was not reported"
  echo "${out}" | grep -q 'deployment "web"' && echo "${out}" | grep -q 'metadata.labels.injected' ||
    die "self-test: the report does not name the object and field:\n${out}"
  log "self-test: the injected difference was reported with its object and field"
  exit 0
fi

scenarios=("$@")
if [ "$1" = "all" ]; then
  scenarios=()
  for f in test/diff/*.sh; do
    n="$(basename "$f" .sh)"
    [[ "$n" == *-injected ]] || scenarios+=("$n")
  done
fi
failed=()
for s in "${scenarios[@]}"; do
  if run_scenario "$s"; then log "diff ${s}: no difference"; else failed+=("$s"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
  log "differences in: ${failed[*]} (dumps and kcm logs in ${DIFF_OUT})"
  exit 1
fi
log "no difference in ${#scenarios[@]} scenario(s)"
