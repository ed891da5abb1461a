#include "controllers/nodeipam/range_allocator.h"

#include "api/gen/core_v1_codec.h"
#include "base/log.h"
#include "client/typed_client.h"

namespace kcm::controllers {

using api::core::v1::Node;

Result<std::unique_ptr<RangeAllocator>> RangeAllocator::create(std::shared_ptr<client::RestClient> client,
                                                                std::shared_ptr<client::EventRecorder> recorder,
                                                                informers::SharedInformer<Node>& nodes,
                                                                const std::string& clusterCIDR, int nodeMaskSize,
                                                                const std::string& serviceCIDR) {
  if (clusterCIDR.find(':') != std::string::npos || clusterCIDR.find(',') != std::string::npos)
    return Status(StatusCode::kInvalidArgument, "IPv6 and dual-stack --cluster-cidr are not implemented yet: " + clusterCIDR);
  auto cidr = Ipv4Cidr::parse(clusterCIDR);
  if (!cidr.ok()) return cidr.status().withContext("--cluster-cidr");
  auto set = CidrSet::create(*cidr, nodeMaskSize);
  if (!set.ok()) return set.status();
  if (!serviceCIDR.empty() && serviceCIDR.find(':') == std::string::npos) {
    // The service range is never given to nodes (filterOutServiceRange); it only matters when it overlaps.
    for (size_t start = 0; start < serviceCIDR.size();) {
      size_t c = serviceCIDR.find(',', start);
      auto svc = Ipv4Cidr::parse(serviceCIDR.substr(start, c == std::string::npos ? std::string::npos : c - start));
      if (svc.ok()) (void)set->occupy(*svc);
      if (c == std::string::npos) break;
      start = c + 1;
    }
  }
  return std::unique_ptr<RangeAllocator>(
      new RangeAllocator(std::move(client), std::move(recorder), nodes, std::move(set).value()));
}

RangeAllocator::RangeAllocator(std::shared_ptr<client::RestClient> client,
                               std::shared_ptr<client::EventRecorder> recorder, informers::SharedInformer<Node>& nodes,
                               CidrSet set)
    : client_(std::move(client)), recorder_(std::move(recorder)), nodes_(nodes), set_(std::move(set)),
      base_("cidrallocator_node", [this](const std::string& key) { return syncNode(key); }) {
  informers::EventHandler<Node> h;
  h.onAdd = [this](const auto& n) { base_.enqueue(n->metadata.name); };
  h.onUpdate = [this](const auto&, const auto& n) { base_.enqueue(n->metadata.name); };
  h.onDelete = [this](const auto& n, bool) { releaseCIDRs(*n); };
  nodes_.addEventHandler(h);
}

Status RangeAllocator::occupyCIDRs(const Node& node) {
  std::lock_guard l(mu_);
  for (const auto& c : node.spec.podCIDRs) {
    auto cidr = Ipv4Cidr::parse(c);
    if (!cidr.ok()) return Status(StatusCode::kInvalidArgument, "failed to parse node " + node.metadata.name + ", CIDR " + c);
    if (Status s = set_.occupy(*cidr); !s.ok()) return s.withContext("node " + node.metadata.name);
  }
  return Status::Ok();
}

void RangeAllocator::releaseCIDRs(const Node& node) {
  std::lock_guard l(mu_);
  for (const auto& c : node.spec.podCIDRs)
    if (auto cidr = Ipv4Cidr::parse(c); cidr.ok()) (void)set_.release(*cidr);
}

void RangeAllocator::run(int workers, std::stop_token stop) {
  thread_ = std::jthread([this, workers, stop] {
    // Occupy what existing nodes already hold before allocating anything (restart safety).
    while (!nodes_.hasSynced()) {
      if (!RealClock::get().sleepFor(std::chrono::milliseconds(100), stop)) return;
    }
    for (const auto& n : nodes_.store().list())
      if (Status s = occupyCIDRs(*n); !s.ok()) KLOG_ERROR("\"Failed to occupy node CIDR\" err=\"" + s.message() + "\"");
    base_.run(workers, stop);
  });
}

runtime::SyncResult RangeAllocator::syncNode(const std::string& name) {
  auto node = nodes_.store().get(name);
  if (!node || node->metadata.deletionTimestamp) return runtime::SyncResult::ok();
  if (!node->spec.podCIDRs.empty()) {
    if (Status s = occupyCIDRs(*node); !s.ok()) return runtime::SyncResult::errorNoRetry(s);
    return runtime::SyncResult::ok();
  }
  Ipv4Cidr allocated;
  {
    std::lock_guard l(mu_);
    auto next = set_.allocateNext();
    if (!next.ok()) {
      recorder_->event({"Node", "", "", name, name, "", ""}, client::kEventTypeNormal, "CIDRNotAvailable",
                       "Node " + name + " status is now: CIDRNotAvailable");
      return runtime::SyncResult::error(next.status().withContext("failed to allocate cidr from cluster cidr at idx:0"));
    }
    allocated = *next;
  }
  const std::string cidr = allocated.toString();
  std::string patch = R"({"spec":{"podCIDR":")" + cidr + R"(","podCIDRs":[")" + cidr + R"("]}})";
  for (int attempt = 0; attempt < 3; ++attempt) {  // cidrUpdateRetries
    auto r = client::patch<Node>(*client_, "", name, client::PatchType::kStrategicMerge, patch);
    if (r.ok()) {
      if (r->spec.podCIDRs.size() == 1 && r->spec.podCIDRs[0] == cidr) {
        KLOG_INFO("\"Set node PodCIDR\" node=\"" + name + "\" podCIDRs=[" + cidr + "]");
      } else {  // the node already had another CIDR: give ours back
        std::lock_guard l(mu_);
        (void)set_.release(allocated);
      }
      return runtime::SyncResult::ok();
    }
    if (r.status().code() == StatusCode::kNotFound) break;
  }
  recorder_->event({"Node", "", "", name, name, "", ""}, client::kEventTypeNormal, "CIDRAssignmentFailed",
                   "Node " + name + " status is now: CIDRAssignmentFailed");
  std::lock_guard l(mu_);
  (void)set_.release(allocated);
  return runtime::SyncResult::error(Status(StatusCode::kUnavailable, "failed to update node " + name + " PodCIDR"));
}

}  // namespace kcm::controllers
