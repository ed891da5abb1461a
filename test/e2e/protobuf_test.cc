// Protobuf on the real apiserver (--kube-api-content-type, kcm's default application/vnd.kubernetes.protobuf):
// every object of many built-in kinds, listed once as JSON and once as protobuf, must decode to the same struct
// (compared through its JSON encoding), and watches in protobuf (length-delimited frames) must deliver the same.
#include <set>

#include "api/gen/apps_v1_json.h"
#include "api/gen/autoscaling_v2_json.h"
#include "api/gen/batch_v1_json.h"
#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/gen/discovery_v1_json.h"
#include "api/gen/networking_v1_json.h"
#include "api/gen/policy_v1_json.h"
#include "api/gen/rbac_v1_json.h"
#include "api/gen/scheduling_v1_json.h"
#include "api/gen/storage_v1_json.h"
#include "api/support/proto.h"
#include "framework/framework.h"
#include "framework/kcm_process.h"
#include "client/typed_client.h"

namespace kcm::e2e {
namespace {

constexpr const char* kProtobuf = "application/vnd.kubernetes.protobuf";

// Objects with many kinds of fields: embedded structs (VolumeSource, Probe handlers), maps of quantities, bytes,
// int-or-string both ways, optional pointers, times, packed and unpacked repeated scalars.
constexpr const char* kManifest = R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, labels: {a: b}, annotations: {note: "x"}}
data: {k: v}
binaryData: {bin: AAECAwQ=}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
type: Opaque
data: {token: aGVsbG8gd29ybGQ=, raw: AP8A}
---
apiVersion: v1
kind: Pod
metadata:
  name: rich
  labels: {app: rich, tier: web}
  annotations: {a: "1"}
  finalizers: [example.com/hold]
spec:
  terminationGracePeriodSeconds: 0
  activeDeadlineSeconds: 3600
  priorityClassName: ""
  nodeSelector: {type: kwok}
  tolerations:
  - {key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
  - {key: node.kubernetes.io/not-ready, operator: Exists}
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector: {matchExpressions: [{key: app, operator: In, values: [rich, other]}]}
  securityContext: {runAsUser: 1000, runAsNonRoot: true, supplementalGroups: [1, 2, 3], fsGroup: 2000}
  volumes:
  - {name: cfg, configMap: {name: cm, defaultMode: 420, items: [{key: k, path: k.txt}]}}
  - {name: s, secret: {secretName: sec, optional: true}}
  - {name: tmp, emptyDir: {sizeLimit: 64Mi}}
  - name: proj
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3600, audience: api}
      - downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    command: [/pause]
    args: [-v, "2"]
    ports: [{name: http, containerPort: 8080, protocol: TCP}, {containerPort: 9090, hostPort: 0}]
    env:
    - {name: A, value: "1"}
    - name: B
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    - name: C
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: "1.5", memory: 128Mi}
    readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 5}
    livenessProbe: {tcpSocket: {port: 8080}, initialDelaySeconds: 3}
    startupProbe: {exec: {command: ["true"]}, failureThreshold: 30}
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}
    volumeMounts: [{name: cfg, mountPath: /cfg, readOnly: true}, {name: tmp, mountPath: /tmp}]
---
apiVersion: v1
kind: Service
metadata: {name: svc}
spec:
  selector: {app: rich}
  ports: [{name: http, port: 80, targetPort: http}, {name: m, port: 90, targetPort: 9090, protocol: UDP}]
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 600}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: dep}
spec:
  replicas: 2
  revisionHistoryLimit: 3
  progressDeadlineSeconds: 120
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}}
  selector: {matchLabels: {app: dep}}
  template:
    metadata: {labels: {app: dep}}
    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  suspend: true
  backoffLimit: 2
  completions: 3
  parallelism: 1
  completionMode: Indexed
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {operator: In, values: [1, 2, 42]}
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: registry.k8s.io/pause:3.10}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj}
spec:
  schedule: "*/5 * * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: registry.k8s.io/pause:3.10}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb}
spec: {minAvailable: 50%, selector: {matchLabels: {app: dep}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: dep}
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 100Mi}}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 60
      policies: [{type: Percent, value: 10, periodSeconds: 60}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lease}
spec: {holderIdentity: me, leaseDurationSeconds: 15, acquireTime: "2026-01-02T03:04:05.123456Z", renewTime: "2026-01-02T03:04:06.654321Z"}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: rq}
spec: {hard: {pods: "50", configmaps: "20", services.loadbalancers: "0"}}
)";

class Protobuf : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    apply(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})");  // no kcm here
    apply(kManifest);
    auto cfg = client::loadKubeconfig(Cluster::get().kubeconfig);
    ASSERT_TRUE(cfg.ok());
    cfg->qps = -1;
    auto j = client::RestClient::create(*cfg);
    cfg->contentType = kProtobuf;
    auto p = client::RestClient::create(*cfg);
    ASSERT_TRUE(j.ok() && p.ok());
    json_ = *j;
    proto_ = *p;
  }

  // Every object of T in the cluster, listed as JSON and as protobuf: the same names, the same decoded content.
  template <class T>
  void expectSameObjects(const char* what, size_t atLeast) {
    SCOPED_TRACE(what);
    std::map<std::string, std::string> viaJson, viaProto;
    auto collect = [](client::RestClient& c, std::map<std::string, std::string>& out) {
      client::ListOptions o;
      o.resourceVersion = "0";  // from the watch cache, as informers list
      auto r = client::listPageStreaming<T>(c, "", o, [&](T&& obj) {
        out[std::string(obj.metadata.namespace_.view()) + "/" + std::string(obj.metadata.name.view())] = toJson(obj);
      });
      return r.ok() ? Status::Ok() : r.status();
    };
    // Objects of the running cluster change between the two lists (leases, events): retry until they agree.
    bool same = false;
    for (int attempt = 0; attempt < 10 && !same; ++attempt) {
      viaJson.clear();
      viaProto.clear();
      ASSERT_TRUE(collect(*json_, viaJson).ok());
      ASSERT_TRUE(collect(*proto_, viaProto).ok());
      same = viaJson == viaProto;
    }
    EXPECT_GE(viaProto.size(), atLeast);
    EXPECT_EQ(viaJson.size(), viaProto.size());
    for (const auto& [k, v] : viaJson) {
      auto it = viaProto.find(k);
      if (it == viaProto.end()) {
        ADD_FAILURE() << k << " missing from the protobuf list";
        continue;
      }
      EXPECT_EQ(v, it->second) << k;
    }
    total_ += viaProto.size();
  }

  std::shared_ptr<client::RestClient> json_, proto_;
  size_t total_ = 0;
};

TEST_F(Protobuf, ListsDecodeAsTheirJson) {
  // The apiserver really answers protobuf to the typed Accept header (and JSON without it).
  client::Request req;
  req.path = client::pathFor<api::core::v1::Pod>(ns());
  req.accept = client::typedAccept(*proto_);
  auto r = proto_->send(req);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->contentType, kProtobuf);
  EXPECT_TRUE(api::proto::isEnvelope(r->body));
  EXPECT_EQ(client::typedAccept(*json_), "application/json");

  // Our kcm (protobuf by default, as upstream) fills in what controllers write: ReplicaSets and their pods,
  // EndpointSlices, statuses of the Deployment, PDB, HPA and quota, the nodes' not-ready taints lifted. Then the
  // scheduler and KWOK run the pods.
  std::unique_ptr<KcmProcess> kcm(startSoloKcm(
      "deployment,replicaset,endpointslice,disruption,horizontalpodautoscaling,resourcequota,job,cronjob,nodelifecycle",
      {},
      "kcm-protobuf"));
  EXPECT_TRUE(waitFor([&] {
    auto p = client::get<api::core::v1::Pod>(*json_, ns(), "rich");
    return p.ok() && p->status.phase == "Running";
  }, 60s)) << kubectl({"-n", ns(), "get", "pod", "rich", "-o", "yaml"}).out;
  EXPECT_TRUE(waitFor([&] {
    auto d = client::get<api::apps::v1::Deployment>(*proto_, ns(), "dep");
    return d.ok() && d->status.availableReplicas == 2;
  }, 60s)) << kubectl({"-n", ns(), "get", "deploy,rs,pods", "-o", "wide"}).out;
  EXPECT_TRUE(waitFor([&] {
    auto q = client::get<api::core::v1::ResourceQuota>(*proto_, ns(), "rq");
    return q.ok() && !q->status.used.empty();
  }, 60s)) << kubectl({"-n", ns(), "get", "resourcequota", "rq", "-o", "yaml"}).out;
  kcm.reset();

  expectSameObjects<api::core::v1::Pod>("pods", 3);
  expectSameObjects<api::core::v1::Node>("nodes", 1);
  expectSameObjects<api::core::v1::Namespace>("namespaces", 4);
  expectSameObjects<api::core::v1::Service>("services", 2);
  expectSameObjects<api::core::v1::Endpoints>("endpoints", 0);
  expectSameObjects<api::core::v1::ConfigMap>("configmaps", 1);
  expectSameObjects<api::core::v1::Secret>("secrets", 1);
  expectSameObjects<api::core::v1::ServiceAccount>("serviceaccounts", 1);
  expectSameObjects<api::core::v1::ResourceQuota>("resourcequotas", 1);
  expectSameObjects<api::core::v1::Event>("events", 1);
  expectSameObjects<api::discovery::v1::EndpointSlice>("endpointslices", 1);
  expectSameObjects<api::apps::v1::Deployment>("deployments", 1);
  expectSameObjects<api::apps::v1::ReplicaSet>("replicasets", 1);
  expectSameObjects<api::batch::v1::Job>("jobs", 1);
  expectSameObjects<api::batch::v1::CronJob>("cronjobs", 1);
  expectSameObjects<api::policy::v1::PodDisruptionBudget>("poddisruptionbudgets", 1);
  expectSameObjects<api::autoscaling::v2::HorizontalPodAutoscaler>("horizontalpodautoscalers", 1);
  expectSameObjects<api::coordination::v1::Lease>("leases", 2);
  expectSameObjects<api::rbac::v1::ClusterRole>("clusterroles", 10);
  expectSameObjects<api::rbac::v1::ClusterRoleBinding>("clusterrolebindings", 10);
  expectSameObjects<api::scheduling::v1::PriorityClass>("priorityclasses", 2);
  expectSameObjects<api::storage::v1::StorageClass>("storageclasses", 0);
  std::printf("protobuf: %zu objects of 22 kinds decoded from protobuf equal their JSON decode\n", total_);
}

TEST_F(Protobuf, WatchFramesDecodeAsTheirJson) {
  using api::core::v1::Pod;
  client::ListOptions o;
  auto start = client::listPage<Pod>(*proto_, ns(), o);
  ASSERT_TRUE(start.ok()) << start.status().toString();
  o.resourceVersion = start->metadata.resourceVersion;
  o.allowWatchBookmarks = true;
  std::vector<std::pair<std::string, std::string>> events;  // type, JSON of the object
  std::jthread creator([&] {
    std::this_thread::sleep_for(500ms);
    apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"w","labels":{"x":"y"}},
              "spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
    kubectl({"-n", ns(), "delete", "pod", "w", "--wait=false"});
  });
  std::stop_source stop;
  Status s = client::watch<Pod>(*proto_, ns(), o, [&](client::WatchEvent<Pod>& ev) {
    if (ev.type == "BOOKMARK") return true;
    if (ev.object.metadata.name == "w") events.emplace_back(ev.type, toJson(ev.object));
    return !(ev.type == "DELETED" && ev.object.metadata.name == "w");
  }, stop.get_token());
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.front().first, "ADDED");
  EXPECT_EQ(events.back().first, "DELETED");
  // The ADDED object, fetched as JSON at the same resourceVersion, decodes the same.
  Pod added;
  ASSERT_TRUE(fromJson(events.front().second, added).ok());
  EXPECT_EQ(added.kind, "Pod");
  EXPECT_EQ(added.apiVersion, "v1");
  EXPECT_EQ(added.metadata.labels.at("x"), "y");
  std::printf("protobuf watch: %zu events for pod w, first %s, last %s\n", events.size(), events.front().first.c_str(),
              events.back().first.c_str());
}

TEST_F(Protobuf, ErrorsDecodeFromProtobufStatus) {
  auto r = client::get<api::core::v1::Pod>(*proto_, ns(), "does-not-exist");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("pods \"does-not-exist\" not found"), std::string::npos) << r.status().toString();
}

}  // namespace
}  // namespace kcm::e2e
