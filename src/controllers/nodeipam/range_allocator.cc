#include "controllers/nodeipam/range_allocator.h"

#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "controllers/util/node_util.h"

namespace kcm::controllers {

using api::core::v1::Node;

namespace {
// upstream cidr_allocator.go: how often and how long the node list is retried before the allocator gives up.
constexpr std::chrono::seconds kNodePollInterval{10};
constexpr std::chrono::minutes kAPIServerStartupGracePeriod{10};
constexpr int kCIDRUpdateRetries = 3;

// upstream listNodes: the apiserver may not be up yet; failing for the whole grace period fails the start.
Result<std::vector<Node>> listNodes(client::RestClient& c, Clock& clock, std::stop_token stop) {
  const auto deadline = clock.now() + kAPIServerStartupGracePeriod;
  while (true) {
    auto list = client::list<Node>(c, "");
    if (list.ok()) return std::move(list->items);
    KLOG_ERROR("\"Failed to list all nodes\" err=\"" + list.status().message() + "\"");
    if (clock.now() + kNodePollInterval > deadline || !clock.sleepFor(kNodePollInterval, stop))
      return Status(StatusCode::kUnavailable,
                    "failed to list all nodes in 10m0s, cannot proceed without updating CIDR map");
  }
}
}  // namespace

Result<std::unique_ptr<RangeAllocator>> RangeAllocator::create(std::shared_ptr<client::RestClient> client,
                                                                std::shared_ptr<client::EventRecorder> recorder,
                                                                informers::SharedInformer<Node>& nodes,
                                                                const std::vector<IpCidr>& clusterCIDRs,
                                                                const std::vector<int>& nodeMaskSizes,
                                                                const std::vector<IpCidr>& serviceCIDRs,
                                                                Clock& clock, std::stop_token stop) {
  std::vector<CidrSet> sets;
  for (size_t i = 0; i < clusterCIDRs.size(); ++i) {
    auto set = CidrSet::create(clusterCIDRs[i], nodeMaskSizes.at(i));
    if (!set.ok()) return set.status();
    // The service range is never given to nodes (filterOutServiceRange); it only matters where it overlaps.
    for (const auto& svc : serviceCIDRs)
      if (set->overlaps(svc)) (void)set->occupy(svc);
    sets.push_back(std::move(set).value());
  }
  auto existing = listNodes(*client, clock, stop);
  if (!existing.ok()) return existing.status();
  std::unique_ptr<RangeAllocator> ra(new RangeAllocator(std::move(client), std::move(recorder), nodes, std::move(sets)));
  // Restart safety: what nodes already hold is taken before anything is handed out. A CIDR that cannot be taken
  // (garbage, a changed cluster CIDR) would keep failing, so the start fails instead of allocating around it.
  for (const auto& n : *existing) {
    // The allocator's start-up lines carry the controller's logger name, as upstream's.
    if (n.spec.podCIDRs.empty()) {
      KLOG_V(4, "\"Node has no CIDR, ignoring\" logger=\"node-ipam-controller\" node=" + log::quote(n.metadata.name));
      continue;
    }
    KLOG_V(4, "\"Node has CIDR, occupying it in CIDR map\" logger=\"node-ipam-controller\" node=" +
                  log::quote(n.metadata.name) + " podCIDR=" + log::quote(n.spec.podCIDR));
    if (Status s = ra->occupyCIDRs(n); !s.ok()) return s;
  }
  return ra;
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
  const std::string& name = node.metadata.name;
  for (size_t i = 0; i < cidrs.size(); ++i) {
    auto cidr = IpCidr::parse(cidrs[i]);
    if (!cidr.ok())  // upstream names spec.podCIDR here, whichever entry failed
      return Status(StatusCode::kInvalidArgument, "failed to parse node " + name + ", CIDR " + node.spec.podCIDR);
    // A CIDR at an index with no cluster CIDR: the cluster went from dual-stack to single-stack.
    if (i >= sets_.size())
      return Status(StatusCode::kInvalidArgument, "node:" + name + " has an allocated cidr: " + cidrs[i] +
                                                      " at index:" + std::to_string(i) +
                                                      " that does not exist in cluster cidrs configuration");
    if (Status s = sets_[i].occupy(*cidr); !s.ok())
      return Status(s.code(), "failed to mark cidr[" + cidr->toString() + "] at idx [" + std::to_string(i) +
                                  "] as occupied for node: " + name + ": " + s.message());
  }
  return Status::Ok();
}

void RangeAllocator::releaseCIDRs(const Node& node) {
  std::lock_guard l(mu_);
  const auto& cidrs = node.spec.podCIDRs;
  for (size_t i = 0; i < cidrs.size() && i < sets_.size(); ++i)
    if (auto cidr = IpCidr::parse(cidrs[i]); cidr.ok()) (void)sets_[i].release(*cidr);
}

namespace {
metrics::Gauge& runningNodeIpam() {
  return metrics::Registry::global().gauge("running_managed_controllers",
                                           "Indicates where instances of a controller are currently running",
                                           {{"manager", "kube-controller-manager"}, {"name", "nodeipam"}});
}
}  // namespace

RangeAllocator::~RangeAllocator() {
  if (started_) runningNodeIpam().set(0);
}

void RangeAllocator::run(int workers, std::stop_token stop) {
  started_ = true;
  runningNodeIpam().set(1);
  // What nodes held at start was occupied by create(); nodes seen since are occupied by their syncs.
  base_.start(workers, stop, {[this] { return nodes_.hasSynced(); }});
}

runtime::SyncResult RangeAllocator::syncNode(const std::string& name) {
  auto node = nodes_.store().get(name);
  if (!node || node->metadata.deletionTimestamp) return runtime::SyncResult::ok();
  if (!node->spec.podCIDRs.empty()) {
    // upstream returns the error: the node is retried with backoff.
    if (Status s = occupyCIDRs(*node); !s.ok()) return runtime::SyncResult::error(s);
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
        recordNodeStatusChange(*recorder_, *node, "CIDRNotAvailable");
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
  for (int attempt = 0; attempt < kCIDRUpdateRetries; ++attempt) {
    auto r = client::patch<Node>(*client_, "", name, client::PatchType::kStrategicMerge, patch);
    if (r.ok()) {
      if (api::toStdStrings(r->spec.podCIDRs) == cidrs) {
        std::string shown;
        for (const auto& c : cidrs) shown += (shown.empty() ? "" : " ") + c;
        KLOG_INFO("\"Set node PodCIDR\" node=\"" + name + "\" podCIDRs=[" + shown + "]");
      } else {  // the node already had other CIDRs: give ours back
        releaseAll();
      }
      return runtime::SyncResult::ok();
    }
  }
  recordNodeStatusChange(*recorder_, *node, "CIDRAssignmentFailed");
  releaseAll();
  return runtime::SyncResult::error(Status(StatusCode::kUnavailable, "failed to update node " + name + " PodCIDR"));
}

}  // namespace kcm::controllers
