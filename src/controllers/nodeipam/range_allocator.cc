#include "controllers/nodeipam/range_allocator.h"

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Node;

Result<std::unique_ptr<RangeAllocator>> RangeAllocator::create(std::shared_ptr<client::RestClient> client,
                                                                std::shared_ptr<client::EventRecorder> recorder,
                                                                informers::SharedInformer<Node>& nodes,
                                                                const std::vector<IpCidr>& clusterCIDRs,
                                                                const std::vector<int>& nodeMaskSizes,
                                                                const std::vector<IpCidr>& serviceCIDRs) {
  std::vector<CidrSet> sets;
  for (size_t i = 0; i < clusterCIDRs.size(); ++i) {
    auto set = CidrSet::create(clusterCIDRs[i], nodeMaskSizes.at(i));
    if (!set.ok()) return set.status();
    // The service range is never given to nodes (filterOutServiceRange); it only matters where it overlaps.
    for (const auto& svc : serviceCIDRs)
      if (set->overlaps(svc)) (void)set->occupy(svc);
    sets.push_back(std::move(set).value());
  }
  return std::unique_ptr<RangeAllocator>(
      new RangeAllocator(std::move(client), std::move(recorder), nodes, std::move(sets)));
}

RangeAllocator::RangeAllocator(std::shared_ptr<client::RestClient> client,
                               std::shared_ptr<client::EventRecorder> recorder, informers::SharedInformer<Node>& nodes,
                               std::vector<CidrSet> sets)
    : client_(std::move(client)), recorder_(std::move(recorder)), nodes_(nodes), sets_(std::move(sets)),
      base_("cidrallocator_node", [this](const std::string& key) { return syncNode(key); }) {
  informers::EventHandler<Node> h;
  h.onAdd = [this](const auto& n) { base_.enqueue(n->metadata.name); };
  h.onUpdate = [this](const auto&, const auto& n) { base_.enqueue(n->metadata.name); };
  h.onDelete = [this](const auto& n, bool) { releaseCIDRs(*n); };
  registrations_.push_back(nodes_.addEventHandler(h));
}

Status RangeAllocator::occupyCIDRs(const Node& node) {
  std::lock_guard l(mu_);
  const auto& cidrs = node.spec.podCIDRs;
  for (size_t i = 0; i < cidrs.size() && i < sets_.size(); ++i) {
    auto cidr = IpCidr::parse(cidrs[i]);
    if (!cidr.ok())
      return Status(StatusCode::kInvalidArgument, "failed to parse node " + node.metadata.name + ", CIDR " + cidrs[i]);
    if (Status s = sets_[i].occupy(*cidr); !s.ok()) return s.withContext("node " + node.metadata.name);
  }
  return Status::Ok();
}

void RangeAllocator::releaseCIDRs(const Node& node) {
  std::lock_guard l(mu_);
  const auto& cidrs = node.spec.podCIDRs;
  for (size_t i = 0; i < cidrs.size() && i < sets_.size(); ++i)
    if (auto cidr = IpCidr::parse(cidrs[i]); cidr.ok()) (void)sets_[i].release(*cidr);
}

void RangeAllocator::run(int workers, std::stop_token stop) {
  // Occupy what existing nodes already hold before allocating anything (restart safety): done once, as the
  // last step of "synced", before the first sync runs.
  base_.start(workers, stop, {[this, occupied = false]() mutable {
                if (!nodes_.hasSynced()) return false;
                if (!occupied) {
                  for (const auto& n : nodes_.store().list())
                    if (Status s = occupyCIDRs(*n); !s.ok())
                      KLOG_ERROR("\"Failed to occupy node CIDR\" err=\"" + s.message() + "\"");
                  occupied = true;
                }
                return true;
              }});
}

runtime::SyncResult RangeAllocator::syncNode(const std::string& name) {
  auto node = nodes_.store().get(name);
  if (!node || node->metadata.deletionTimestamp) return runtime::SyncResult::ok();
  if (!node->spec.podCIDRs.empty()) {
    if (Status s = occupyCIDRs(*node); !s.ok()) return runtime::SyncResult::errorNoRetry(s);
    return runtime::SyncResult::ok();
  }
  std::vector<IpCidr> allocated;
  auto releaseAll = [&] {
    std::lock_guard l(mu_);
    for (size_t i = 0; i < allocated.size(); ++i) (void)sets_[i].release(allocated[i]);
  };
  {
    std::lock_guard l(mu_);
    for (size_t i = 0; i < sets_.size(); ++i) {
      auto next = sets_[i].allocateNext();
      if (!next.ok()) {
        for (size_t j = 0; j < allocated.size(); ++j) (void)sets_[j].release(allocated[j]);
        recorder_->event({"Node", "", "", name, name, "", ""}, client::kEventTypeNormal, "CIDRNotAvailable",
                         "Node " + name + " status is now: CIDRNotAvailable");
        return runtime::SyncResult::error(
            next.status().withContext("failed to allocate cidr from cluster cidr at idx:" + std::to_string(i)));
      }
      allocated.push_back(*next);
    }
  }
  std::vector<std::string> cidrs;
  std::string list;
  for (const auto& a : allocated) {
    cidrs.push_back(a.toString());
    list += (list.empty() ? "\"" : ",\"") + cidrs.back() + "\"";
  }
  const std::string patch = R"({"spec":{"podCIDR":")" + cidrs.front() + R"(","podCIDRs":[)" + list + "]}}";
  for (int attempt = 0; attempt < 3; ++attempt) {  // cidrUpdateRetries
    auto r = client::patch<Node>(*client_, "", name, client::PatchType::kStrategicMerge, patch);
    if (r.ok()) {
      if (r->spec.podCIDRs == cidrs) {
        std::string shown;
        for (const auto& c : cidrs) shown += (shown.empty() ? "" : " ") + c;
        KLOG_INFO("\"Set node PodCIDR\" node=\"" + name + "\" podCIDRs=[" + shown + "]");
      } else {  // the node already had other CIDRs: give ours back
        releaseAll();
      }
      return runtime::SyncResult::ok();
    }
    if (r.status().code() == StatusCode::kNotFound) break;
  }
  recorder_->event({"Node", "", "", name, name, "", ""}, client::kEventTypeNormal, "CIDRAssignmentFailed",
                   "Node " + name + " status is now: CIDRAssignmentFailed");
  releaseAll();
  return runtime::SyncResult::error(Status(StatusCode::kUnavailable, "failed to update node " + name + " PodCIDR"));
}

}  // namespace kcm::controllers
