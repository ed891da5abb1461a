# Bootstrap tokens (kubeadm's join): bootstrap-signer signs kube-public/cluster-info with every token that may sign,
# token-cleaner deletes a token at its expiration and the signer drops its signature; a token without the signing
# usage signs nothing.
CONTROLLERS="bootstrap-signer-controller,token-cleaner-controller"
DUMP_EXTRA=(kube-public:configmap/cluster-info kube-system:secret/bootstrap-token-diffaa
            kube-system:secret/bootstrap-token-diffbb kube-system:secret/bootstrap-token-diffcc)
token() {  # token ID SECRET SIGNING [EXPIRATION]
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bootstrap-token-$1","namespace":"kube-system"},
 "type":"bootstrap.kubernetes.io/token",
 "stringData":{"token-id":"$1","token-secret":"$2","usage-bootstrap-signing":"$3"${4:+,\"expiration\":\"$4\"}}}
JSON
}
has_key() { kubectl get configmap cluster-info -n kube-public -o json | python3 -c "import json,sys; sys.exit(0 if '$1' in json.load(sys.stdin)['data'] else 1)"; }
gone() { ! kubectl get secret "$1" -n kube-system >/dev/null 2>&1; }
steps() {
  kubectl create configmap cluster-info -n kube-public \
    --from-literal=kubeconfig="$(printf 'apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: ""\n')" >/dev/null
  token diffaa 0123456789abcdef true
  token diffbb fedcba9876543210 true "$(date -u -d '+12 seconds' +%Y-%m-%dT%H:%M:%SZ)"
  token diffcc aaaaaaaaaaaaaaaa false
  wait_until 30 has_key jws-kubeconfig-diffaa
  wait_until 60 gone bootstrap-token-diffbb
  settle 3
}
