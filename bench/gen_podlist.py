#!/usr/bin/env python3
"""Writes a PodList of N pods shaped like the ones our clusters hold (KWOK-run pods of a Deployment, status
filled in, managedFields as the apiserver keeps them), for decode/encode benchmarks. Usage: gen_podlist.py N OUT"""
import json
import sys

n, out = int(sys.argv[1]), sys.argv[2]
tmpl = {
    "metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-29T17:00:00Z"},
                 "creationTimestamp": "2026-11-29T17:58:16Z", "generateName": "web-7d4b9c8f6d-",
                 "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6d", "tier": "frontend"},
                 "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}}, "f:ownerReferences": {".": {}, "k:{\"uid\":\"5b2d\"}": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}, "f:resources": {".": {}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}}}}}},
                                    "manager": "kube-controller-manager", "operation": "Update", "time": "2026-11-29T17:58:16Z"},
                                   {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {}, "f:phase": {}, "f:podIP": {}}},
                                    "manager": "kwok", "operation": "Update", "subresource": "status", "time": "2026-11-29T17:58:17Z"}],
                 "namespace": "bench",
                 "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True, "kind": "ReplicaSet", "name": "web-7d4b9c8f6d", "uid": "5b2d9a7e-1c3f-4e8a-9b6d-2f1e0c3d4b5a"}]},
    "spec": {"containers": [{"image": "registry.k8s.io/pause:3.10", "imagePullPolicy": "IfNotPresent", "name": "web",
                             "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                             "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}},
                             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                             "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access-x", "readOnly": True}]}],
             "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "nodeName": "kwok-node-0", "preemptionPolicy": "PreemptLowerPriority",
             "priority": 0, "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {},
             "serviceAccount": "default", "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
             "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                             {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}],
             "volumes": [{"name": "kube-api-access-x", "projected": {"defaultMode": 420, "sources": [
                 {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                 {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                 {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}}]},
    "status": {"conditions": [{"lastProbeTime": None, "lastTransitionTime": "2026-11-29T17:58:17Z", "status": "True", "type": t}
                              for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
               "containerStatuses": [{"containerID": "kwok://web", "image": "registry.k8s.io/pause:3.10", "imageID": "", "lastState": {},
                                      "name": "web", "ready": True, "restartCount": 0, "started": True,
                                      "state": {"running": {"startedAt": "2026-11-29T17:58:17Z"}}}],
               "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}], "phase": "Running", "podIP": "", "podIPs": [],
               "qosClass": "Burstable", "startTime": "2026-11-29T17:58:17Z"},
}
items = []
for i in range(n):
    p = json.loads(json.dumps(tmpl))
    p["metadata"]["name"] = "web-7d4b9c8f6d-%05d" % i
    p["metadata"]["uid"] = "6577c3ac-b3e6-4479-bca2-%012x" % i
    p["metadata"]["resourceVersion"] = str(1000 + i)
    p["spec"]["nodeName"] = "kwok-node-%d" % (i % 3)
    ip = "10.244.%d.%d" % (i // 250, i % 250 + 1)
    p["status"]["podIP"] = ip
    p["status"]["podIPs"] = [{"ip": ip}]
    items.append(p)
json.dump({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": str(1000 + n)}, "items": items},
          open(out, "w"), separators=(",", ":"))
