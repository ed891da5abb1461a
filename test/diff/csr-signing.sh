# CSR approval and signing (kubeadm's TLS bootstrap and the signers' rules): a kubelet client CSR sent with a
# bootstrap token is auto-approved (SubjectAccessReview on nodeclient) and signed by the cluster CA; a
# kube-apiserver-client CSR approved by hand is signed for its expirationSeconds; a kubelet-serving CSR approved by
# hand is signed with its IP SAN; an approved kubelet client CSR with the wrong organization gets Failed; an
# unrecognised CSR stays pending. Certificates compare by their decoded fields (subject, issuer, extensions,
# lifetime), not their bytes.
CONTROLLERS="certificatesigningrequest-signing-controller,certificatesigningrequest-approving-controller"
EXTRA_FLAGS=(--cluster-signing-duration=720h)
DUMP_EXTRA=(default:certificatesigningrequests)
csr() {  # csr NAME SUBJECT SIGNER USAGES [EXTRA_SPEC [KUBECTL_FLAGS...]]
  local name="$1" subj="$2" signer="$3" usages="$4" extra="${5:-}"
  shift 5 2>/dev/null || shift $#
  local dir="${CLUSTER_DIR}/diff-csr-${name}"
  mkdir -p "${dir}"
  openssl ecparam -name prime256v1 -genkey -noout -out "${dir}/key.pem"
  openssl req -new -key "${dir}/key.pem" -subj "${subj}" ${SAN:+-addext "subjectAltName=${SAN}"} -out "${dir}/req.pem"
  kubectl "$@" create -f - >/dev/null <<JSON
{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"${name}"},
 "spec":{"request":"$(base64 -w0 "${dir}/req.pem")","signerName":"${signer}","usages":[${usages}]${extra}}}
JSON
}
signed() { [ -n "$(kubectl get csr "$1" -o jsonpath='{.status.certificate}')" ]; }
failed() { kubectl get csr "$1" -o jsonpath='{.status.conditions[*].type}' | grep -qw Failed; }
steps() {
  local server
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  kubectl apply -f - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Secret","metadata":{"name":"bootstrap-token-diffcs","namespace":"kube-system"},
  "type":"bootstrap.kubernetes.io/token",
  "stringData":{"token-id":"diffcs","token-secret":"0123456789abcdef","usage-bootstrap-authentication":"true"}},
 {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"diff-kubelet-bootstrap"},
  "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:node-bootstrapper"},
  "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:bootstrappers"}]},
 {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"diff-node-autoapprove"},
  "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole",
             "name":"system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
  "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:bootstrappers"}]}]}
JSON
  csr diff-node "/O=system:nodes/CN=system:node:kwok-node-0" kubernetes.io/kube-apiserver-client-kubelet \
    '"digital signature","key encipherment","client auth"' "" \
    --kubeconfig=/dev/null "--server=${server}" "--certificate-authority=${CLUSTER_DIR}/pki/ca.crt" \
    --token=diffcs.0123456789abcdef
  csr diff-client "/CN=diff-user/O=diff-group" kubernetes.io/kube-apiserver-client \
    '"digital signature","client auth"' ',"expirationSeconds":3600'
  SAN="IP:10.0.0.7,DNS:kwok-node-1" csr diff-serving "/O=system:nodes/CN=system:node:kwok-node-1" \
    kubernetes.io/kubelet-serving '"digital signature","server auth"' ""
  csr diff-bad-org "/O=not-nodes/CN=system:node:kwok-node-2" kubernetes.io/kube-apiserver-client-kubelet \
    '"digital signature","client auth"' ""
  csr diff-pending "/CN=nobody" kubernetes.io/kube-apiserver-client '"client auth"' ""
  kubectl certificate approve diff-client diff-serving diff-bad-org >/dev/null
  wait_until 30 signed diff-node
  wait_until 30 signed diff-client
  wait_until 30 signed diff-serving
  wait_until 30 failed diff-bad-org
  settle 3
}
