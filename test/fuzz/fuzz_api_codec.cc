// The generated JSON and protobuf decoders on every top-level kind our informers decode (and the metadata-only
// and Status forms): objects, list bodies and watch event frames; a payload starting "k8s\0" (a watch frame:
// 0x0a) takes the protobuf path.
//
// Input: "<kind> <mode>\n<payload>", kind one of kKinds' names, mode o (object), l (list body) or w (watch
// frame). Properties: nothing crashes or trips a sanitizer; an object that decodes re-encodes to JSON that
// decodes again, and that second encoding is byte-identical to the first (so what we write back is what we read).
#include <functional>
#include <string>
#include <string_view>

#include "api/gen/admissionregistration_v1_json.h"
#include "api/gen/apiserverinternal_v1alpha1_json.h"
#include "api/gen/apps_v1_json.h"
#include "api/gen/autoscaling_v2_json.h"
#include "api/gen/batch_v1_json.h"
#include "api/gen/certificates_v1_json.h"
#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_json.h"
#include "api/gen/discovery_v1_json.h"
#include "api/gen/meta_v1_json.h"
#include "api/gen/networking_v1_json.h"
#include "api/gen/policy_v1_json.h"
#include "api/gen/rbac_v1_json.h"
#include "api/gen/resource_v1_json.h"
#include "api/gen/resource_v1alpha3_json.h"
#include "api/gen/scheduling_v1beta1_json.h"
#include "api/gen/storage_v1_json.h"
#include "api/gen/storagemigration_v1_json.h"
#include "fuzz_common.h"

namespace {

using namespace kcm::api;

template <class T>
void object(std::string_view in) {
  T a;
  if (!fromJson(in, a).ok()) return;
  const std::string first = toJson(a);
  T b;
  if (auto s = fromJson(first, b); !s.ok()) kcm::fuzz::fail("re-decoding our own encoding: " + s.message(), first);
  const std::string second = toJson(b);
  if (first != second) kcm::fuzz::fail("encoding is not stable across a round trip", first, second);
}

template <class T>
void list(std::string_view in) {
  ListInfo info;
  // Spelled as std::function so that argument-dependent lookup finds T's decodeListItems.
  const std::function<void(T&&)> onItem = [](T&& item) { (void)toJson(item); };
  (void)decodeListItems(std::string(in), onItem, info);
}

template <class T>
void watch(std::string_view in) {
  std::string type;
  T obj;
  meta::v1::Status status;
  if (decodeWatchEvent(in, type, obj, status).ok()) (void)toJson(obj), (void)toJson(status);
}

struct Kind {
  std::string_view name;
  void (*object)(std::string_view);
  void (*list)(std::string_view);
  void (*watch)(std::string_view);
};

template <class T>
constexpr Kind kind(std::string_view name) {
  return Kind{name, &object<T>, &list<T>, &watch<T>};
}

// What the informers of src/ decode (grep forType< and forMetadata), with Status and PartialObjectMetadata.
constexpr Kind kKinds[] = {
    kind<core::v1::Pod>("Pod"),
    kind<core::v1::Node>("Node"),
    kind<core::v1::Namespace>("Namespace"),
    kind<core::v1::Service>("Service"),
    kind<core::v1::Endpoints>("Endpoints"),
    kind<core::v1::Secret>("Secret"),
    kind<core::v1::ServiceAccount>("ServiceAccount"),
    kind<core::v1::ConfigMap>("ConfigMap"),
    kind<core::v1::PersistentVolume>("PersistentVolume"),
    kind<core::v1::PersistentVolumeClaim>("PersistentVolumeClaim"),
    kind<core::v1::ReplicationController>("ReplicationController"),
    kind<core::v1::ResourceQuota>("ResourceQuota"),
    kind<core::v1::Event>("Event"),
    kind<apps::v1::Deployment>("Deployment"),
    kind<apps::v1::ReplicaSet>("ReplicaSet"),
    kind<apps::v1::StatefulSet>("StatefulSet"),
    kind<apps::v1::DaemonSet>("DaemonSet"),
    kind<apps::v1::ControllerRevision>("ControllerRevision"),
    kind<batch::v1::Job>("Job"),
    kind<batch::v1::CronJob>("CronJob"),
    kind<autoscaling::v2::HorizontalPodAutoscaler>("HorizontalPodAutoscaler"),
    kind<certificates::v1::CertificateSigningRequest>("CertificateSigningRequest"),
    kind<certificates::v1::PodCertificateRequest>("PodCertificateRequest"),
    kind<coordination::v1::Lease>("Lease"),
    kind<discovery::v1::EndpointSlice>("EndpointSlice"),
    kind<networking::v1::ServiceCIDR>("ServiceCIDR"),
    kind<networking::v1::IPAddress>("IPAddress"),
    kind<policy::v1::PodDisruptionBudget>("PodDisruptionBudget"),
    kind<rbac::v1::ClusterRole>("ClusterRole"),
    kind<resource::v1::ResourceClaim>("ResourceClaim"),
    kind<resource::v1::ResourceClaimTemplate>("ResourceClaimTemplate"),
    kind<resource::v1::ResourceSlice>("ResourceSlice"),
    kind<resource::v1::DeviceClass>("DeviceClass"),
    kind<resource::v1::DeviceTaintRule>("DeviceTaintRule"),
    kind<resource::v1alpha3::ResourcePoolStatusRequest>("ResourcePoolStatusRequest"),
    kind<scheduling::v1beta1::PodGroup>("PodGroup"),
    kind<storage::v1::CSIDriver>("CSIDriver"),
    kind<storage::v1::StorageClass>("StorageClass"),
    kind<storage::v1::VolumeAttachment>("VolumeAttachment"),
    kind<storage::v1::VolumeAttributesClass>("VolumeAttributesClass"),
    kind<storagemigration::v1::StorageVersionMigration>("StorageVersionMigration"),
    kind<apiserverinternal::v1alpha1::StorageVersion>("StorageVersion"),
    kind<admissionregistration::v1::ValidatingAdmissionPolicy>("ValidatingAdmissionPolicy"),
    kind<meta::v1::PartialObjectMetadata>("PartialObjectMetadata"),
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kcm::fuzz::quietLogs();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n'), sp = in.find(' ');
  if (nl == std::string_view::npos || sp == std::string_view::npos || sp + 2 != nl) return 0;
  const std::string_view name = in.substr(0, sp), payload = in.substr(nl + 1);
  const char mode = in[sp + 1];
  if (name == "Status") {  // a bare Status (an error body), both ways
    object<meta::v1::Status>(payload);
    return 0;
  }
  for (const Kind& k : kKinds) {
    if (k.name != name) continue;
    if (mode == 'o') k.object(payload);
    else if (mode == 'l') k.list(payload);
    else if (mode == 'w') k.watch(payload);
    break;
  }
  return 0;
}
