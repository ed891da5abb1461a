#include "controllers/servicecidrs/servicecidrs_controller.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "api/gen/networking_v1_json.h"
#include "base/log.h"
#include "client/typed_client.h"
#include "controllers/nodeipam/cidr_set.h"
#include "controllers/util/endpointslice_util.h"

namespace kcm::controllers::servicecidrs {
namespace {

using u128 = unsigned __int128;

u128 lowOnes(int n) { return n >= 128 ? ~u128{0} : ((u128{1} << n) - 1); }

bool overlaps(const IpCidr& a, const IpCidr& b) {
  if (a.v6 != b.v6) return false;
  const int p = std::min(a.prefix, b.prefix);
  const u128 mask = ~lowOnes(a.bits() - p) & lowOnes(a.bits());
  return (a.base & mask) == (b.base & mask);
}

// An address as a /32 or /128 "prefix" (its value in base).
std::optional<IpCidr> parseAddr(const std::string& s) {
  auto c = IpCidr::parse(s + (s.find(':') != std::string::npos ? "/128" : "/32"));
  if (!c.ok()) return std::nullopt;
  return *c;
}

// PrefixContainsIP: inside the prefix, and neither its network address nor (IPv4) its broadcast address.
bool prefixContainsIP(const IpCidr& prefix, const IpCidr& ip) {
  if (prefix.v6 != ip.v6) return false;
  if (ip.base == prefix.base) return false;
  const u128 hostBits = lowOnes(prefix.bits() - prefix.prefix);
  if (!ip.v6 && ip.base == (prefix.base | hostBits)) return false;
  return overlaps(prefix, ip);
}

std::vector<IpCidr> prefixesOf(const ServiceCIDR& c) {
  std::vector<IpCidr> out;
  for (const auto& s : c.spec.cidrs)
    if (auto p = IpCidr::parse(s); p.ok()) out.push_back(*p);
  return out;
}

}  // namespace

ServiceCIDRsController::ServiceCIDRsController(std::shared_ptr<client::RestClient> client,
                                               informers::SharedInformer<ServiceCIDR>& cidrs,
                                               informers::SharedInformer<IPAddress>& ips,
                                               std::shared_ptr<client::EventRecorder> recorder, Clock& clock)
    : client_(std::move(client)), cidrs_(cidrs), ips_(ips), recorder_(std::move(recorder)), clock_(clock),
      base_("ipaddresses", [this](const std::string& key) { return sync(key); }, clock, 15) {
  informers::EventHandler<ServiceCIDR> ch;
  ch.onAdd = [this](const auto& c) {
    base_.enqueue(c->metadata.name);
    for (const auto& k : overlappingServiceCIDRs(*c)) base_.enqueue(k);
  };
  ch.onUpdate = [this](const auto&, const auto& c) { base_.enqueue(c->metadata.name); };
  ch.onDelete = [this](const auto& c, bool) { base_.enqueue(c->metadata.name); };
  registrations_.push_back(cidrs_.addEventHandler(ch));
  informers::EventHandler<IPAddress> ih;
  ih.onAdd = [this](const auto& ip) {
    for (const auto& k : containingServiceCIDRs(*ip)) base_.enqueue(k);
  };
  ih.onDelete = [this](const auto& ip, bool) {
    for (const auto& k : containingServiceCIDRs(*ip)) base_.enqueue(k);
  };
  registrations_.push_back(ips_.addEventHandler(ih));
}

void ServiceCIDRsController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting\" controller=" + log::quote(kControllerName));
  base_.start(workers, stop, {[this] { return cidrs_.hasSynced() && ips_.hasSynced(); }});
}

std::vector<std::string> ServiceCIDRsController::overlappingServiceCIDRs(const ServiceCIDR& cidr) const {
  std::set<std::string> out;
  const auto mine = prefixesOf(cidr);
  for (const auto& other : cidrs_.store().list())
    for (const auto& p : prefixesOf(*other))
      for (const auto& m : mine)
        if (overlaps(p, m)) out.insert(other->metadata.name);
  return {out.begin(), out.end()};
}

std::vector<std::string> ServiceCIDRsController::containingServiceCIDRs(const IPAddress& ip) const {
  auto mb = ip.metadata.labels.find("ipaddress.kubernetes.io/managed-by");
  if (mb == ip.metadata.labels.end() || mb->second != kIPAllocatorControllerName) return {};
  auto addr = parseAddr(ip.metadata.name);
  if (!addr) return {};
  std::set<std::string> out;
  for (const auto& c : cidrs_.store().list())
    for (const auto& p : prefixesOf(*c))
      if (prefixContainsIP(p, *addr)) out.insert(c->metadata.name);
  return {out.begin(), out.end()};
}

bool ServiceCIDRsController::canDeleteCIDR(const ServiceCIDR& serviceCIDR) const {
  // Contained in another ServiceCIDR: its addresses stay covered.
  bool hasParent = true;
  for (const auto& prefix : prefixesOf(serviceCIDR)) {
    std::vector<std::string> containing;
    for (const auto& c : cidrs_.store().list())
      for (const auto& p : prefixesOf(*c))
        if (overlaps(p, prefix) && p.prefix <= prefix.prefix) containing.push_back(c->metadata.name);
    if (containing.empty() || (containing.size() == 1 && containing[0] == serviceCIDR.metadata.name)) hasParent = false;
  }
  if (hasParent) {
    KLOG_INFO("\"Deleting ServiceCIDR contained in other ServiceCIDR\" ServiceCIDR=" + log::quote(serviceCIDR.metadata.name));
    return true;
  }
  for (const auto& prefix : prefixesOf(serviceCIDR)) {
    const std::string family = prefix.v6 ? "IPv6" : "IPv4";
    for (const auto& ip : ips_.store().list()) {
      const auto& l = ip->metadata.labels;
      auto f = l.find("ipaddress.kubernetes.io/ip-family");
      auto mb = l.find("ipaddress.kubernetes.io/managed-by");
      if (f == l.end() || f->second != family || mb == l.end() || mb->second != kIPAllocatorControllerName) continue;
      auto addr = parseAddr(ip->metadata.name);
      if (!addr) continue;
      std::vector<std::string> containing;
      for (const auto& c : cidrs_.store().list())
        for (const auto& p : prefixesOf(*c))
          if (prefixContainsIP(p, *addr)) containing.push_back(c->metadata.name);
      if (containing.size() == 1 && containing[0] == serviceCIDR.metadata.name) {
        KLOG_INFO("\"Deleting ServiceCIDR blocked by IP address\" IPAddress=" + log::quote(ip->metadata.name));
        return false;
      }
    }
  }
  KLOG_INFO("\"Deleting ServiceCIDR no longer have orphan IPs\" ServiceCIDR=" + log::quote(serviceCIDR.metadata.name));
  return true;
}

Status ServiceCIDRsController::updateConditionIfNeeded(const ServiceCIDR& cidr, const std::string& status,
                                                       const std::string& reason, const std::string& message) {
  for (const auto& c : cidr.status.conditions)
    if (c.type == "Ready" && c.status == status && c.reason == reason && c.message == message) return Status::Ok();
  KLOG_V(2, "\"Updating ServiceCIDR condition\" ServiceCIDR=" + log::quote(cidr.metadata.name) +
                " conditionType=\"Ready\" newStatus=" + log::quote(status) + " newReason=" + log::quote(reason));
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(clock_.wallNow().time_since_epoch()).count();
  nlohmann::ordered_json condition = {{"type", "Ready"},
                                      {"status", status},
                                      {"lastTransitionTime", api::Time::fromUnix(now).rfc3339()},
                                      {"reason", reason},
                                      {"message", message}};
  nlohmann::ordered_json apply = {{"kind", "ServiceCIDR"},
                                  {"apiVersion", "networking.k8s.io/v1"},
                                  {"metadata", {{"name", cidr.metadata.name}}},
                                  {"status", {{"conditions", {condition}}}}};
  client::WriteOptions w;
  w.fieldManager = kControllerName;
  w.force = true;
  return client::patch<ServiceCIDR>(*client_, "", cidr.metadata.name, client::PatchType::kApply, apply.dump(), "status", w)
      .status();
}

runtime::SyncResult ServiceCIDRsController::sync(const std::string& key) {
  auto cidr = cidrs_.store().get(key);
  if (!cidr) return runtime::SyncResult::ok();
  const auto& fin = cidr->metadata.finalizers;
  const bool hasFinalizer = std::find(fin.begin(), fin.end(), kServiceCIDRProtectionFinalizer) != fin.end();
  if (cidr->metadata.deletionTimestamp && !cidr->metadata.deletionTimestamp->isZero()) {
    if (!canDeleteCIDR(*cidr)) {
      Status st = updateConditionIfNeeded(*cidr, "False", "Terminating",
                                          "There are still IPAddresses referencing the ServiceCIDR, please remove them "
                                          "or create a new ServiceCIDR");
      return st.ok() ? runtime::SyncResult::ok() : runtime::SyncResult::error(st);
    }
    const auto deleted = std::chrono::system_clock::from_time_t(cidr->metadata.deletionTimestamp->unixSeconds);
    const auto left = deleted + std::chrono::seconds(10) - clock_.wallNow();  // deletionGracePeriod
    if (left > std::chrono::seconds(0))
      return runtime::SyncResult::after(std::chrono::duration_cast<Clock::Duration>(left));
    if (!hasFinalizer) return runtime::SyncResult::ok();
    const std::string patch =
        R"({"metadata":{"$deleteFromPrimitiveList/finalizers":[")" + std::string(kServiceCIDRProtectionFinalizer) + R"("]}})";
    Status st = client::patch<ServiceCIDR>(*client_, "", key, client::PatchType::kStrategicMerge, patch).status();
    if (!st.ok() && st.code() != StatusCode::kNotFound) return runtime::SyncResult::error(st);
    KLOG_V(4, "\"Removed protection finalizer from ServiceCIDRs\" ServiceCIDR=" + log::quote(key));
    return runtime::SyncResult::ok();
  }
  if (!hasFinalizer) {
    const std::string patch = R"({"metadata":{"finalizers":[")" + std::string(kServiceCIDRProtectionFinalizer) + R"("]}})";
    Status st = client::patch<ServiceCIDR>(*client_, "", key, client::PatchType::kStrategicMerge, patch).status();
    if (!st.ok() && st.code() != StatusCode::kNotFound) return runtime::SyncResult::error(st);
    KLOG_V(4, "\"Added protection finalizer to ServiceCIDR\" ServiceCIDR=" + log::quote(key));
  }
  Status st = updateConditionIfNeeded(*cidr, "True", "", "Kubernetes Service CIDR is ready");
  if (!st.ok()) {
    KLOG_INFO("\"error updating default ServiceCIDR status\" error=" + log::quote(st.message()));
    recorder_->event({"ServiceCIDR", "networking.k8s.io/v1", "", key, cidr->metadata.uid, cidr->metadata.resourceVersion, ""},
                     client::kEventTypeWarning, "KubernetesServiceCIDRError",
                     "The ServiceCIDR Status can not be set to Ready=True");
    return runtime::SyncResult::error(st);
  }
  return runtime::SyncResult::ok();
}

}  // namespace kcm::controllers::servicecidrs
