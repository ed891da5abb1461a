#pragma once
// storageversion-garbage-collector-controller (alias storage-version-gc; upstream pkg/controller/storageversiongc
// at the pin; gates APIServerIdentity and StorageVersionAPI): StorageVersions (internal.apiserver.k8s.io/v1alpha1)
// keep one entry per kube-apiserver, named by its identity Lease in kube-system (label
// apiserver.kubernetes.io/identity=kube-apiserver). When such a Lease is deleted, that apiserver's entries are
// removed from every StorageVersion; a StorageVersion added or updated with an entry whose Lease is missing (or is
// not a kube-apiserver's) loses it. A StorageVersion left without entries is deleted; otherwise its status is
// updated with commonEncodingVersion and the AllEncodingVersionsEqual condition recomputed. Queues
// storage_version_garbage_collector_leases and ..._storageversions, one worker each; client
// storage-version-garbage-collector.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/apiserverinternal_v1alpha1.h"
#include "api/gen/coordination_v1.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::storageversiongc {

using api::apiserverinternal::v1alpha1::ServerStorageVersion;
using api::apiserverinternal::v1alpha1::StorageVersion;
using api::coordination::v1::Lease;

// storageversion.SetCommonEncodingVersion: commonEncodingVersion when every entry agrees, and the
// AllEncodingVersionsEqual condition (its transition time moves when the status or the common version changes).
void SetCommonEncodingVersion(StorageVersion& sv, const api::Time& now);

class Controller {
 public:
  Controller(std::shared_ptr<client::RestClient> client, informers::SharedInformer<Lease>& leases,
             informers::SharedInformer<StorageVersion>& storageVersions, Clock& clock = RealClock::get());
  void run(std::stop_token stop);
  runtime::SyncResult processDeletedLease(const std::string& name);
  runtime::SyncResult syncStorageVersion(const std::string& name);
  // Handlers (public for tests).
  void onDeleteLease(const Lease& lease);
  void enqueueStorageVersion(const StorageVersion& sv);
  runtime::WorkQueue& leaseQueue() { return leaseQueue_.queue(); }
  runtime::WorkQueue& storageVersionQueue() { return storageVersionQueue_.queue(); }

 private:
  Status updateOrDeleteStorageVersion(StorageVersion sv, std::vector<ServerStorageVersion> keep);

  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<Lease>& leases_;
  informers::SharedInformer<StorageVersion>& storageVersions_;
  Clock& clock_;
  runtime::ControllerBase leaseQueue_;
  runtime::ControllerBase storageVersionQueue_;
  std::vector<informers::Registration> registrations_;
};

}  // namespace kcm::controllers::storageversiongc
