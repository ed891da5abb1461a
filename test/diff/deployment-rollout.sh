# A Deployment rolled out, updated, scaled, rolled back and paused mid-change (kubectl rollout as an operator would).
CONTROLLERS="serviceaccount-controller,root-ca-certificate-publisher-controller,deployment-controller,replicaset-controller,garbage-collector-controller,node-lifecycle-controller"
steps() {
  kubectl apply -n "${NS}" -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  revisionHistoryLimit: 5
  selector:
    matchLabels: {app: web}
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: registry.k8s.io/pause:3.10
YAML
  wait_until 120 rollout_done web
  kubectl set image -n "${NS}" deployment/web c=registry.k8s.io/pause:3.9 >/dev/null
  wait_until 120 rollout_done web
  kubectl scale -n "${NS}" deployment/web --replicas=5 >/dev/null
  wait_until 120 rollout_done web
  kubectl rollout undo -n "${NS}" deployment/web >/dev/null
  wait_until 120 rollout_done web
  kubectl rollout pause -n "${NS}" deployment/web >/dev/null
  kubectl set image -n "${NS}" deployment/web c=registry.k8s.io/pause:3.8 >/dev/null
  settle 5
}
