#!/usr/bin/env bash
# A real Kubernetes control plane on loopback, for e2e tests and local runs:
#   etcd, kube-apiserver (RBAC, service-account keys, front-proxy), kube-scheduler, and KWOK managing 3 fake nodes.
# Usage:
#   hack/cluster.sh up NAME     build the pinned binaries if needed, create PKI, start everything, wait until ready
#   hack/cluster.sh env NAME    print `export` lines (KUBECONFIG, CLUSTER_DIR, PATH with the pinned kubectl first, ...)
#   hack/cluster.sh down NAME   stop every process this cluster started (tracked PIDs only) and remove its folder
#   hack/cluster.sh stop|start|restart NAME COMPONENT   stop and/or start one component (e2e: apiserver outages)
# Clusters live in ${KCM_CLUSTERS_DIR:-_output/clusters}/NAME; several can run side by side (free ports each).
# METRICS_API=1 (with `up`) also starts test/cluster/k8s/metricsapi, an aggregated API server for metrics.k8s.io/v1beta1,
# custom.metrics.k8s.io/v1beta2 and external.metrics.k8s.io/v1beta1 registered through APIServices; tests set the
# metrics it serves by writing the JSON file METRICS_VALUES (printed by `env`; format in metricsapi/main.go).
# Each component logs to CLUSTER_DIR/logs/<component>.log.
# KWOK_NODES=N (with `up`): N fake nodes instead of 3. SCHEDULER_FLAGS: extra kube-scheduler flags (bench: client QPS).
# AUDIT_KCM_ALL=1: the audit log records every request of the kcm (see the audit policy below) and rotates at 8 GB.
. "$(dirname "$0")/lib.sh"

CLUSTERS_DIR="${KCM_CLUSTERS_DIR:-${OUTPUT_DIR}/clusters}"
KWOK_NODES="${KWOK_NODES:-3}"

usage() { echo "usage: $0 up|down|env NAME | stop|start|restart NAME COMPONENT" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd="$1"; name="$2"
[[ "$name" =~ ^[a-zA-Z0-9_.-]+$ ]] || die "cluster name must be [a-zA-Z0-9_.-]+: '$name'"
D="${CLUSTERS_DIR}/${name}"

# ---------------------------------------------------------------------------------------------- helpers
# free_ports N: N distinct free TCP ports on 127.0.0.1, drawn at random below the kernel's ephemeral range: a port
# the kernel handed out (bind to 0) could be taken by any outgoing connection before the component binds it.
free_ports() {
  python3 - "$1" <<'PY'
import random, socket, sys
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
lo, hi = (10000, low) if low > 12000 else (low + 1, 65535)  # an unusual range: fall back to ports above it
socks = []
while len(socks) < int(sys.argv[1]):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randrange(lo, hi)))
        socks.append(s)
    except OSError:
        s.close()
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# start NAME BINARY ARGS...: runs a component in its own session, logs to logs/NAME.log, PID in pids/NAME.pid,
# its command line in cmd/NAME (for `restart`).
start() {
  local comp="$1"; shift
  mkdir -p "${D}/cmd"
  printf '%q ' "$@" > "${D}/cmd/${comp}"
  setsid "$@" >>"${D}/logs/${comp}.log" 2>&1 < /dev/null &
  local pid=$! i
  echo "$pid" > "${D}/pids/${comp}.pid"
  # Until the fork has exec'd, /proc/PID/cmdline is this script's and `alive` would call the component dead (seen
  # as "kube-apiserver exited while starting" with an empty log): wait for the exec (at most 2 s).
  for ((i = 0; i < 40; i++)); do
    tr '\0' ' ' < "/proc/${pid}/cmdline" 2>/dev/null | grep -qF "$D" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
}

alive() {  # alive COMPONENT: its tracked process still runs (and is ours: its command line names the folder)
  local f="${D}/pids/$1.pid" pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$D"
}

running() {  # running PID: exists and is not a zombie waiting for a parent that is not ours to reap
  [ -r "/proc/$1/stat" ] || return 1
  [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != "Z" ]
}

wait_http() {  # wait_http COMPONENT URL SECONDS PATTERN [curl args...]: until URL's body matches PATTERN
  local comp="$1" url="$2" secs="$3" pattern="$4"; shift 4
  local deadline=$(( $(date +%s) + secs ))
  until curl -fsS --max-time 2 "$@" "$url" 2>/dev/null | grep -qE "$pattern"; do
    # Asked twice a second apart: a transient answer (seen three times in one session, right after big builds, never
    # reproduced in a loop) must not tear down a component that is still starting.
    if ! alive "$comp" && { sleep 1; ! alive "$comp"; }; then
      local dpid; dpid=$(cat "${D}/pids/${comp}.pid" 2>/dev/null)
      echo "${comp}: pid ${dpid}: stat '$(cut -c1-80 "/proc/${dpid}/stat" 2>&1)'" \
           "cmdline '$(tr '\0' ' ' < "/proc/${dpid}/cmdline" 2>&1 | cut -c1-160)'" >&2
      tail -n 30 "${D}/logs/${comp}.log" >&2
      die "${comp} exited while starting (log: ${D}/logs/${comp}.log)"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || { tail -n 30 "${D}/logs/${comp}.log" >&2; die "${comp} not ready at ${url} after ${secs}s"; }
    sleep 0.5
  done
}

# ---------------------------------------------------------------------------------------------- PKI
# sign NAME CN [O] EKU [SANS]: key + cert signed by CA (pki/ca or pki/front-proxy-ca via $CA)
sign() {
  local n="$1" cn="$2" o="$3" eku="$4" sans="${5:-}" subj="/CN=$2"
  [ -n "$o" ] && subj="/O=${o}/CN=${cn}"
  openssl genrsa -out "pki/${n}.key" 2048 2>/dev/null
  openssl req -new -key "pki/${n}.key" -subj "$subj" -out "pki/${n}.csr" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=${eku}"
    [ -n "$sans" ] && echo "subjectAltName=${sans}"
  } > "pki/${n}.ext"
  openssl x509 -req -in "pki/${n}.csr" -CA "pki/${CA}.crt" -CAkey "pki/${CA}.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "pki/${n}.ext" -out "pki/${n}.crt" 2>/dev/null
  rm -f "pki/${n}.csr" "pki/${n}.ext"
}

make_ca() {  # make_ca NAME CN
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "pki/$1.key" -out "pki/$1.crt" -days 3650 -sha256 \
    -subj "/CN=$2" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" 2>/dev/null
}

# kubeconfig FILE USER CERTNAME: kubeadm-style kubeconfig with embedded CA and client cert/key
kubeconfig() {
  local f="$1" user="$2" c="$3"
  cat > "$f" <<KC
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: $(base64 -w0 pki/ca.crt)
    server: https://127.0.0.1:${APISERVER_PORT}
  name: ${name}
contexts:
- context:
    cluster: ${name}
    user: ${user}
  name: ${user}@${name}
current-context: ${user}@${name}
preferences: {}
users:
- name: ${user}
  user:
    client-certificate-data: $(base64 -w0 "pki/${c}.crt")
    client-key-data: $(base64 -w0 "pki/${c}.key")
KC
  chmod 600 "$f"
}

make_pki() {
  mkdir -p pki
  CA=ca; make_ca ca kubernetes
  sign apiserver kube-apiserver "" serverAuth \
    "IP:127.0.0.1,IP:${SERVICE_IP},IP:0:0:0:0:0:0:0:1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  sign admin kubernetes-admin system:masters clientAuth
  sign controller-manager system:kube-controller-manager "" clientAuth
  sign scheduler system:kube-scheduler "" clientAuth
  # A superuser whose every write the audit log records (audited.conf; the split-brain e2e test's leader).
  sign audited kcm-audited system:masters clientAuth
  sign apiserver-kubelet-client kube-apiserver-kubelet-client system:masters clientAuth
  CA=front-proxy-ca; make_ca front-proxy-ca front-proxy-ca
  sign front-proxy-client front-proxy-client "" clientAuth
  openssl genrsa -out pki/sa.key 2048 2>/dev/null
  openssl rsa -in pki/sa.key -pubout -out pki/sa.pub 2>/dev/null
  rm -f pki/*.srl
  kubeconfig admin.conf kubernetes-admin admin
  kubeconfig controller-manager.conf system:kube-controller-manager controller-manager
  kubeconfig scheduler.conf system:kube-scheduler scheduler
  kubeconfig audited.conf kcm-audited audited
  # Audit: the writes of user kcm-audited only (Metadata level, JSON lines in audit.log), nothing else.
  # AUDIT_KCM_ALL=1 (benchmarks): every request of kcm-audited and of kube-system's service accounts (the
  # controllers' own credentials with --use-service-account-credentials), reads included.
  local rules='- level: Metadata
  users: [kcm-audited]
  verbs: [create, update, patch, delete, deletecollection]'
  [ "${AUDIT_KCM_ALL:-0}" = 1 ] && rules='- level: Metadata
  users: [kcm-audited]
- level: Metadata
  userGroups: ["system:serviceaccounts:kube-system"]'
  cat > audit-policy.yaml <<POLICY
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
${rules}
- level: None
POLICY
}

# ---------------------------------------------------------------------------------------------- up
up() {
  [ -e "$D" ] && die "cluster '${name}' exists at ${D}; run: $0 down ${name}"
  local bin; bin="$(bash "${REPO_ROOT}/hack/build-control-plane.sh")"
  mkdir -p "${D}/logs" "${D}/pids"
  cd "$D"
  UP_OK=0
  trap 'if [ "$UP_OK" != 1 ]; then echo "!!! cluster up failed; logs kept in ${D}.failed-logs; tearing down ${name}" >&2; cd /; rm -rf "${D}.failed-logs"; cp -r "${D}/logs" "${D}.failed-logs" 2>/dev/null; down; fi' EXIT

  read -r ETCD_PORT ETCD_PEER_PORT APISERVER_PORT SCHEDULER_PORT KCM_PORT < <(free_ports 5)
  SERVICE_CIDR="10.96.0.0/22"; SERVICE_IP="10.96.0.1"
  CLUSTER_CIDR="100.64.0.0/10"; KWOK_POD_CIDR="10.244.0.0/16"
  cat > cluster.env <<ENV
CLUSTER_NAME=${name}
CLUSTER_DIR=${D}
CONTROL_PLANE_BIN=${bin}
KUBERNETES_VERSION=${KUBERNETES_VERSION}
ETCD_PORT=${ETCD_PORT}
APISERVER_PORT=${APISERVER_PORT}
APISERVER_URL=https://127.0.0.1:${APISERVER_PORT}
SCHEDULER_PORT=${SCHEDULER_PORT}
KCM_PORT=${KCM_PORT}
SERVICE_CIDR=${SERVICE_CIDR}
CLUSTER_CIDR=${CLUSTER_CIDR}
ENV
  log "cluster ${name}: PKI"
  make_pki

  log "cluster ${name}: etcd on 127.0.0.1:${ETCD_PORT}"
  start etcd "${bin}/etcd" --name=e0 --data-dir="${D}/etcd" \
    --listen-client-urls="http://127.0.0.1:${ETCD_PORT}" --advertise-client-urls="http://127.0.0.1:${ETCD_PORT}" \
    --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-cluster="e0=http://127.0.0.1:${ETCD_PEER_PORT}" --unsafe-no-fsync --log-level=warn
  wait_http etcd "http://127.0.0.1:${ETCD_PORT}/health" 30 '"health":"true"'

  # internal.apiserver.k8s.io/v1alpha1 (StorageVersions, alpha) is served so that storageversion-garbage-collector-
  # controller can be shown with its gates on; nothing else changes (the apiserver's StorageVersionAPI stays off).
  # GenericWorkload (beta, off by default) with scheduling.k8s.io/v1beta1 serves PodGroups (and the PodGroupProtection
  # admission plugin's finalizer) for podgroup-protection-controller. resource.k8s.io/v1alpha3 with DRAResourcePoolStatus
  # (alpha) serves ResourcePoolStatusRequests for resourcepoolstatusrequest-controller; DRAPartitionableDevicesType
  # (alpha) keeps ResourceSlices' partitionTypeAttribute (and the requests' defaultPartitionTypeAttribute).
  log "cluster ${name}: kube-apiserver on https://127.0.0.1:${APISERVER_PORT}"
  start kube-apiserver "${bin}/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:${ETCD_PORT}" \
    --bind-address=127.0.0.1 --secure-port="${APISERVER_PORT}" --advertise-address=127.0.0.1 \
    --cert-dir="${D}/apiserver-certs" \
    --tls-cert-file="${D}/pki/apiserver.crt" --tls-private-key-file="${D}/pki/apiserver.key" \
    --client-ca-file="${D}/pki/ca.crt" \
    --kubelet-client-certificate="${D}/pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key="${D}/pki/apiserver-kubelet-client.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="${D}/pki/sa.pub" --service-account-signing-key-file="${D}/pki/sa.key" \
    --service-cluster-ip-range="${SERVICE_CIDR}" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --allow-privileged=true --endpoint-reconciler-type=none --enable-bootstrap-token-auth=true \
    --requestheader-client-ca-file="${D}/pki/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-extra-headers-prefix=X-Remote-Extra- --requestheader-group-headers=X-Remote-Group \
    --requestheader-username-headers=X-Remote-User \
    --proxy-client-cert-file="${D}/pki/front-proxy-client.crt" --proxy-client-key-file="${D}/pki/front-proxy-client.key" \
    --runtime-config=internal.apiserver.k8s.io/v1alpha1=true,scheduling.k8s.io/v1beta1=true,resource.k8s.io/v1alpha3=true \
    --feature-gates=GenericWorkload=true,DRAResourcePoolStatus=true,DRAPartitionableDevicesType=true \
    --audit-policy-file="${D}/audit-policy.yaml" --audit-log-path="${D}/audit.log" --audit-log-format=json \
    --audit-log-maxsize="$([ "${AUDIT_KCM_ALL:-0}" = 1 ] && echo 8000 || echo 100)" --audit-log-maxbackup=1 \
    --profiling=false --v=1
  wait_http kube-apiserver "https://127.0.0.1:${APISERVER_PORT}/readyz" 180 '^ok$' --cacert "${D}/pki/ca.crt"

  log "cluster ${name}: kube-scheduler on https://127.0.0.1:${SCHEDULER_PORT}"
  start kube-scheduler "${bin}/kube-scheduler" --kubeconfig="${D}/scheduler.conf" \
    --authentication-kubeconfig="${D}/scheduler.conf" --authorization-kubeconfig="${D}/scheduler.conf" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="${SCHEDULER_PORT}" --v=1 ${SCHEDULER_FLAGS:-}

  log "cluster ${name}: kwok managing ${KWOK_NODES} fake nodes"
  # KWOK's "fast" stages, except those test/cluster/kwok-stages replaces; plus its pod behaviours for tests
  # (fail with an exit code, stay Running, stay Pending: see test/cluster/kwok-stages/pod-behaviors.yaml).
  local stages=() s ours="${REPO_ROOT}/test/cluster/kwok-stages"
  for s in "${bin}/../kwok-stages"/*.yaml; do
    [ -f "${ours}/$(basename "$s")" ] || stages+=("--config=${s}")
  done
  for s in "${ours}"/*.yaml; do stages+=("--config=${s}"); done
  start kwok "${bin}/kwok" --kubeconfig="${D}/admin.conf" \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds=40 --cidr="${KWOK_POD_CIDR}" --node-ip=127.0.0.1 "${stages[@]}"
  local i nodes=""
  for ((i = 0; i < KWOK_NODES; i++)); do
    nodes+="
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-${i}
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-${i}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    topology.kubernetes.io/zone: zone-a
status:
  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"250\"}
  capacity: {cpu: \"32\", memory: 256Gi, pods: \"250\"}"
  done
  "${bin}/kubectl" --kubeconfig="${D}/admin.conf" apply -f - <<<"$nodes" >/dev/null
  # Every node Ready: one list a second (kubectl wait takes the nodes one by one, too slow for a thousand).
  local ready=0 deadline=$((SECONDS + 90 + KWOK_NODES / 10))
  until [ "$ready" -ge "$KWOK_NODES" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 30 "${D}/logs/kwok.log" >&2
      die "KWOK nodes did not become Ready: ${ready} of ${KWOK_NODES} (log: ${D}/logs/kwok.log)"
    fi
    sleep 1
    ready=$("${bin}/kubectl" --kubeconfig="${D}/admin.conf" get nodes -l type=kwok -o \
      jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Ready")]}{.status}{"\n"}{end}{end}' 2>/dev/null |
      grep -c '^True$' || true)
  done
  alive kube-scheduler || die "kube-scheduler exited (log: ${D}/logs/kube-scheduler.log)"
  [ "${METRICS_API:-0}" = 1 ] && start_metrics_api "${bin}"
  UP_OK=1
  log "cluster ${name} is up: ${D} (apiserver https://127.0.0.1:${APISERVER_PORT}); eval \"\$($0 env ${name})\""
}

# start_metrics_api BIN: the metrics APIs, reached by the aggregator through an ExternalName Service (localhost).
start_metrics_api() {
  local bin="$1" port
  port=$(free_ports 1)
  echo '{}' > "${D}/metrics-values.json"
  echo "METRICS_VALUES=${D}/metrics-values.json" >> "${D}/cluster.env"
  log "cluster ${name}: metrics APIs on https://127.0.0.1:${port}"
  start metrics-api "${bin}/metrics-api" --kubeconfig="${D}/admin.conf" --port="${port}" \
    --values="${D}/metrics-values.json"
  wait_http metrics-api "https://127.0.0.1:${port}/healthz" 30 '^ok$' -k
  local svc='{"apiVersion":"v1","kind":"Service","metadata":{"name":"e2e-metrics-api","namespace":"kube-system"},
    "spec":{"type":"ExternalName","externalName":"localhost"}}' apis="" gv
  for gv in metrics.k8s.io/v1beta1 custom.metrics.k8s.io/v1beta2 external.metrics.k8s.io/v1beta1; do
    apis+='{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"'"${gv#*/}.${gv%/*}"'"},
      "spec":{"group":"'"${gv%/*}"'","version":"'"${gv#*/}"'","insecureSkipTLSVerify":true,"groupPriorityMinimum":100,
      "versionPriority":100,"service":{"namespace":"kube-system","name":"e2e-metrics-api","port":'"${port}"'}}}
'
  done
  "${bin}/kubectl" --kubeconfig="${D}/admin.conf" apply -f - <<<"${svc}
${apis}" >/dev/null
  "${bin}/kubectl" --kubeconfig="${D}/admin.conf" wait --for=condition=Available --timeout=60s \
    apiservice/v1beta1.metrics.k8s.io apiservice/v1beta2.custom.metrics.k8s.io \
    apiservice/v1beta1.external.metrics.k8s.io >/dev/null ||
    die "metrics APIServices not Available (log: ${D}/logs/metrics-api.log)"
}

# ---------------------------------------------------------------------------------------------- down
stop_pids() {  # stop_pids PID...: TERM, wait up to STOP_GRACE (15) s, then KILL
  local pid deadline=$(( $(date +%s) + ${STOP_GRACE:-15} ))
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    while running "$pid" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

down() {
  [ -d "$D" ] || { log "cluster ${name}: nothing to stop (${D} absent)"; return 0; }
  local comp f clients=()
  # Clients first (components under test, kwok, scheduler), then the apiserver, then etcd: an apiserver whose
  # etcd is gone, or clients whose apiserver is gone, linger in retries.
  for f in "${D}"/pids/*.pid; do
    [ -e "$f" ] || continue
    comp=$(basename "$f" .pid)
    case "$comp" in etcd|kube-apiserver) continue ;; esac
    alive "$comp" && clients+=("$(cat "$f")")
  done
  [ ${#clients[@]} -gt 0 ] && stop_pids "${clients[@]}"
  alive kube-apiserver && stop_pids "$(cat "${D}/pids/kube-apiserver.pid")"
  alive etcd && stop_pids "$(cat "${D}/pids/etcd.pid")"
  rm -rf "$D"
  log "cluster ${name}: down"
}

# stop_component / restart COMPONENT: stop it (like a crash or a static pod restart: a short grace, then KILL),
# and start it again with the same command line (e2e: apiserver outages). `start` is restart of a stopped one.
stop_component() {
  local comp="$1"
  [ -f "${D}/cmd/${comp}" ] || die "cluster '${name}' has no component '${comp}'"
  alive "$comp" && STOP_GRACE=2 stop_pids "$(cat "${D}/pids/${comp}.pid")"
  log "cluster ${name}: stopped ${comp}"
}

restart() {
  local comp="$1"
  stop_component "$comp"
  # shellcheck disable=SC1091
  . "${D}/cluster.env"
  eval "start ${comp} $(cat "${D}/cmd/${comp}")"
  if [ "$comp" = kube-apiserver ]; then
    wait_http kube-apiserver "https://127.0.0.1:${APISERVER_PORT}/readyz" 180 '^ok$' --cacert "${D}/pki/ca.crt"
  fi
  log "cluster ${name}: restarted ${comp}"
}

env_() {
  [ -f "${D}/cluster.env" ] || die "cluster '${name}' is not up (${D}/cluster.env missing)"
  # shellcheck disable=SC1091
  . "${D}/cluster.env"
  echo "export CLUSTER_NAME='${name}'"
  echo "export CLUSTER_DIR='${D}'"
  echo "export KUBECONFIG='${D}/admin.conf'"
  echo "export APISERVER_URL='${APISERVER_URL}'"
  echo "export KCM_PORT='${KCM_PORT}'"
  echo "export CONTROL_PLANE_BIN='${CONTROL_PLANE_BIN}'"
  echo "export KCM_REPO_ROOT='${REPO_ROOT}'"
  [ -n "${METRICS_VALUES:-}" ] && echo "export METRICS_VALUES='${METRICS_VALUES}'"
  echo "export PATH='${CONTROL_PLANE_BIN}':\"\$PATH\""
}

case "$cmd" in
  # A component that could not start (a port taken meanwhile, ...) gets one more try with new ports.
  up) ( up ) || { log "cluster ${name}: once more, with other ports"; ( up ); } ;;
  down) down ;;
  env) env_ ;;
  restart|start) [ $# -eq 3 ] || usage; restart "$3" ;;
  stop) [ $# -eq 3 ] || usage; stop_component "$3" ;;
  *) usage ;;
esac
