#!/usr/bin/env bash
# Idle footprint side by side: ours and upstream kube-controller-manager (built from the same pinned release), one
# after the other on one fresh local cluster (3 KWOK nodes), with the seed's command line and
# --controllers=*,bootstrapsigner,tokencleaner. After WARMUP seconds (default 30) we read /proc/PID/status (Threads,
# VmRSS, VmHWM) and the CPU seconds, then again after WINDOW seconds (default 60) of idling.
# Usage: bench/run-idle-bench.sh [WARMUP=30] [WINDOW=60]   (IDLE_CONTROLLERS=... for another --controllers, e.g.
# with the controllers upstream leaves off by default; IDLE_EXTRA_FLAGS=... adds flags to both, e.g. feature gates)
. "$(dirname "$0")/../hack/lib.sh"
warmup="${1:-30}" window="${2:-60}"
bash "${REPO_ROOT}/hack/build.sh" --target kube-controller-manager >/dev/null
name="ibench-$$"
trap 'bash "${REPO_ROOT}/hack/cluster.sh" down "$name" >/dev/null 2>&1 || true' EXIT
bash "${REPO_ROOT}/hack/cluster.sh" up "$name" >/dev/null 2>&1
eval "$(bash "${REPO_ROOT}/hack/cluster.sh" env "$name")"
. "${REPO_ROOT}/bench/lib.sh"
controllers="${IDLE_CONTROLLERS:-*,bootstrapsigner,tokencleaner}"
seed_flags "${controllers}"
read -r -a extra_flags <<<"${IDLE_EXTRA_FLAGS:-}"
FLAGS+=("${extra_flags[@]}")


run_one() {  # run_one LABEL BINARY
  start_kcm "$1" "$2"
  sleep "$warmup"
  local cpu0; cpu0=$(proc_cpu "$KCM_PID")
  sleep "$window"
  local cpu1; cpu1=$(proc_cpu "$KCM_PID")
  printf "%-10s threads %4d  RSS %6s MiB  HWM %6s MiB  CPU %5.2f s over %d s idle (%.2f CPU-s/min)\n" "$1" \
    "$(proc_threads "$KCM_PID")" "$(proc_rss_mib "$KCM_PID")" "$(proc_hwm_mib "$KCM_PID")" \
    "$(echo "$cpu1 - $cpu0" | bc)" "$window" "$(echo "($cpu1 - $cpu0) * 60 / $window" | bc -l)"
  echo "$(proc_threads "$KCM_PID") $(proc_rss_mib "$KCM_PID") $(echo "($cpu1 - $cpu0) * 60 / $window" | bc -l)" >"${CLUSTER_DIR}/idle-$1"
  kill -TERM "$KCM_PID"; wait "$KCM_PID" 2>/dev/null || true
}
echo "$(nproc) cores, $(date -u +%Y-%m-%d), seed flags, --controllers=${controllers} ${IDLE_EXTRA_FLAGS:-}, warm-up ${warmup} s"
run_one kcm-cpp "${OUTPUT_DIR}/bin/kube-controller-manager"
run_one upstream "${CONTROL_PLANE_BIN}/kube-controller-manager"
read -r t1 r1 c1 <"${CLUSTER_DIR}/idle-kcm-cpp"
read -r t2 r2 c2 <"${CLUSTER_DIR}/idle-upstream"
printf "ratio ours/upstream: threads %d vs %d, RSS %.2fx, idle CPU %.2fx\n" "$t1" "$t2" "$(echo "$r1 / $r2" | bc -l)" \
  "$(echo "$c1 / ($c2 + 0.0001)" | bc -l)"
