#include "client/discovery.h"

#include <algorithm>
#include <set>
#include <nlohmann/json.hpp>

namespace kcm::client {
namespace {

using Json = nlohmann::json;

constexpr const char* kAggregatedAccept =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
// client-go discovery_client.go defaultRetries: a discovery with failed groups is tried once more.
constexpr int kDiscoveryAttempts = 2;

std::vector<std::string> strings(const Json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& s : j[key])
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

std::string groupVersionString(const std::string& group, const std::string& version) {
  return group.empty() ? version : group + "/" + version;
}

}  // namespace

bool APIResourceInfo::hasVerb(const std::string& v) const {
  return std::find(verbs.begin(), verbs.end(), v) != verbs.end();
}

Status DiscoveryResult::groupDiscoveryError() const {
  if (failedGroupVersions.empty()) return Status::Ok();
  std::vector<std::string> parts;
  for (const auto& [gv, why] : failedGroupVersions) parts.push_back(gv + ": " + why);
  std::sort(parts.begin(), parts.end());
  std::string msg;
  for (const auto& p : parts) msg += (msg.empty() ? "" : ", ") + p;
  return Status(StatusCode::kUnavailable, "unable to retrieve the complete list of server APIs: " + msg);
}

// client-go SplitGroupsAndResources / convertAPIGroup: stale versions are failed group-versions; the preferred
// version is the first one that is not stale; a resource without a responseKind is not returned.
Result<DiscoveryResult> DiscoveryClient::fetchAggregated(const std::string& path, bool& served) {
  Request req;
  req.path = path;
  req.accept = kAggregatedAccept;
  auto r = client_->send(req);
  if (!r.ok()) return r.status();
  Json doc = Json::parse(r->body, nullptr, false);
  served = doc.is_object() && doc.value("kind", "") == "APIGroupDiscoveryList";
  DiscoveryResult out;
  if (!served) return out;
  for (const Json& g : doc.value("items", Json::array())) {
    std::string group = g.contains("metadata") ? g["metadata"].value("name", "") : "";
    bool preferredTaken = false;
    for (const Json& v : g.value("versions", Json::array())) {
      std::string version = v.value("version", "");
      const std::string gv = groupVersionString(group, version);
      if (v.value("freshness", "") == "Stale") {
        out.failedGroupVersions[gv] = "stale GroupVersion discovery: " + gv;
        continue;
      }
      const bool preferred = !preferredTaken;
      preferredTaken = true;
      for (const Json& res : v.value("resources", Json::array())) {
        APIResourceInfo info;
        info.group = group;
        info.version = version;
        info.resource = res.value("resource", "");
        info.singular = res.value("singularResource", "");
        if (res.contains("responseKind") && res["responseKind"].is_object())
          info.kind = res["responseKind"].value("kind", "");
        if (info.kind.empty()) continue;
        info.namespaced = res.value("scope", "") == "Namespaced";
        info.verbs = strings(res, "verbs");
        info.shortNames = strings(res, "shortNames");
        for (const Json& s : res.value("subresources", Json::array())) info.subresources.push_back(s.value("subresource", ""));
        info.preferred = preferred;
        out.resources.push_back(std::move(info));
      }
    }
  }
  return out;
}

// client-go ServerGroups + fetchGroupVersionResources: a group-version whose document fails to load is a failed
// group-version; the group lists failing is an error.
Result<DiscoveryResult> DiscoveryClient::fetchLegacy() {
  // (groupVersion, group, version, preferred)
  std::vector<std::tuple<std::string, std::string, std::string, bool>> gvs;
  Request req;
  req.path = "/api";
  auto core = client_->send(req);
  if (!core.ok()) return core.status().withContext("discovery /api");
  Json cj = Json::parse(core->body, nullptr, false);
  bool first = true;
  for (const auto& v : strings(cj, "versions")) {
    gvs.emplace_back(v, "", v, first);
    first = false;
  }
  req.path = "/apis";
  auto groups = client_->send(req);
  if (!groups.ok()) return groups.status().withContext("discovery /apis");
  Json gj = Json::parse(groups->body, nullptr, false);
  for (const Json& g : gj.value("groups", Json::array())) {
    std::string preferred = g.contains("preferredVersion") ? g["preferredVersion"].value("version", "") : "";
    for (const Json& v : g.value("versions", Json::array()))
      gvs.emplace_back(v.value("groupVersion", ""), g.value("name", ""), v.value("version", ""),
                       v.value("version", "") == preferred);
  }
  DiscoveryResult out;
  auto& resources = out.resources;
  for (const auto& [gv, group, version, preferred] : gvs) {
    req.path = group.empty() ? "/api/" + version : "/apis/" + gv;
    auto r = client_->send(req);
    if (!r.ok()) {
      out.failedGroupVersions[groupVersionString(group, version)] = r.status().message();
      continue;
    }
    Json rl = Json::parse(r->body, nullptr, false);
    for (const Json& res : rl.value("resources", Json::array())) {
      std::string name = res.value("name", "");
      if (name.find('/') != std::string::npos) {  // a subresource: attach to its parent
        std::string parent = name.substr(0, name.find('/'));
        for (auto& o : resources)
          if (o.group == group && o.version == version && o.resource == parent)
            o.subresources.push_back(name.substr(name.find('/') + 1));
        continue;
      }
      APIResourceInfo info;
      info.group = group;
      info.version = version;
      info.resource = name;
      info.singular = res.value("singularName", "");
      info.kind = res.value("kind", "");
      info.namespaced = res.value("namespaced", false);
      info.verbs = strings(res, "verbs");
      info.shortNames = strings(res, "shortNames");
      info.preferred = preferred;
      resources.push_back(std::move(info));
    }
  }
  return out;
}

Result<DiscoveryResult> DiscoveryClient::fetchOnce() {
  bool servedCore = false, servedGroups = false;
  auto core = fetchAggregated("/api", servedCore);
  if (core.ok() && servedCore) {
    auto groups = fetchAggregated("/apis", servedGroups);
    if (groups.ok() && servedGroups) {
      DiscoveryResult all = std::move(core).value();
      for (auto& r : groups->resources) all.resources.push_back(std::move(r));
      for (auto& [gv, why] : groups->failedGroupVersions) all.failedGroupVersions[gv] = std::move(why);
      std::lock_guard l(mu_);
      aggregated_ = true;
      return all;
    }
  }
  {
    std::lock_guard l(mu_);
    aggregated_ = false;
  }
  return fetchLegacy();
}

Result<DiscoveryResult> DiscoveryClient::fetch() {
  Result<DiscoveryResult> r = Status(StatusCode::kInternal, "no discovery attempt");
  for (int attempt = 0; attempt < kDiscoveryAttempts; ++attempt) {
    r = fetchOnce();
    if (!r.ok() || r->failedGroupVersions.empty()) break;
  }
  return r;
}

Result<DiscoveryResult> DiscoveryClient::serverGroupsAndResources() {
  {
    std::lock_guard l(mu_);
    if (cache_) return *cache_;
  }
  auto r = fetch();  // no lock across I/O; two racing fetches are harmless
  if (!r.ok()) return r.status();
  std::lock_guard l(mu_);
  cache_ = r.value();
  return *cache_;
}

// client-go ServerPreferredResources: groups and versions in discovery order; the first version serving a
// group-resource takes it, and only the group's preferred version takes it over.
Result<DiscoveryResult> DiscoveryClient::serverPreferredResourcesWithFailures() {
  auto all = serverGroupsAndResources();
  if (!all.ok()) return all.status();
  DiscoveryResult out;
  out.failedGroupVersions = std::move(all->failedGroupVersions);
  std::map<std::pair<std::string, std::string>, size_t> chosen;  // (group, resource) -> index in out.resources
  for (auto& r : all->resources) {
    auto [it, fresh] = chosen.try_emplace({r.group, r.resource}, out.resources.size());
    if (fresh) out.resources.push_back(std::move(r));
    else if (r.preferred) out.resources[it->second] = std::move(r);
  }
  return out;
}

Result<DiscoveryResult> DiscoveryClient::serverPreferredNamespacedResources() {
  auto preferred = serverPreferredResourcesWithFailures();
  if (!preferred.ok()) return preferred.status();
  std::erase_if(preferred->resources, [](const APIResourceInfo& r) { return !r.namespaced; });
  return preferred;
}

Result<std::vector<APIResourceInfo>> DiscoveryClient::serverResources() {
  auto all = serverGroupsAndResources();
  if (!all.ok()) return all.status();
  return std::move(all->resources);
}

Result<std::vector<APIResourceInfo>> DiscoveryClient::serverPreferredResources() {
  auto preferred = serverPreferredResourcesWithFailures();
  if (!preferred.ok()) return preferred.status();
  return std::move(preferred->resources);
}

Result<APIResourceInfo> DiscoveryClient::resourceFor(const std::string& group, const std::string& version,
                                                     const std::string& kind) {
  auto all = serverResources();
  if (!all.ok()) return all.status();
  const APIResourceInfo* firstServing = nullptr;
  for (const auto& r : all.value()) {
    if (r.group != group || r.kind != kind) continue;
    if (!version.empty()) {
      if (r.version == version) return r;
      continue;
    }
    if (r.preferred) return r;
    if (!firstServing) firstServing = &r;
  }
  if (firstServing) return *firstServing;
  return Status(StatusCode::kNotFound, "no matches for kind \"" + kind + "\" in group \"" + group + "\"" +
                                           (version.empty() ? "" : " version \"" + version + "\""));
}

void DiscoveryClient::invalidate() {
  std::lock_guard l(mu_);
  cache_.reset();
}

bool DiscoveryClient::usedAggregatedDiscovery() const {
  std::lock_guard l(mu_);
  return aggregated_;
}

std::string printResourceDiff(const std::set<std::string>& oldResources, const std::set<std::string>& newResources) {
  auto only = [](const std::set<std::string>& a, const std::set<std::string>& b) {
    std::string out;
    for (const auto& x : a)
      if (!b.count(x)) out += (out.empty() ? "" : " ") + x;
    return "[" + out + "]";
  };
  return "added: " + only(newResources, oldResources) + ", removed: " + only(oldResources, newResources);
}

}  // namespace kcm::client
