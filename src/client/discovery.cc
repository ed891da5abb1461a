#include "client/discovery.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace kcm::client {
namespace {

using Json = nlohmann::json;

constexpr const char* kAggregatedAccept =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

std::vector<std::string> strings(const Json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& s : j[key])
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

}  // namespace

bool APIResourceInfo::hasVerb(const std::string& v) const {
  return std::find(verbs.begin(), verbs.end(), v) != verbs.end();
}

Result<std::vector<APIResourceInfo>> DiscoveryClient::fetchAggregated(const std::string& path, bool& served) {
  Request req;
  req.path = path;
  req.accept = kAggregatedAccept;
  auto r = client_->send(req);
  if (!r.ok()) return r.status();
  Json doc = Json::parse(r->body, nullptr, false);
  served = doc.is_object() && doc.value("kind", "") == "APIGroupDiscoveryList";
  std::vector<APIResourceInfo> out;
  if (!served) return out;
  for (const Json& g : doc.value("items", Json::array())) {
    std::string group = g.contains("metadata") ? g["metadata"].value("name", "") : "";
    bool first = true;
    for (const Json& v : g.value("versions", Json::array())) {
      std::string version = v.value("version", "");
      for (const Json& res : v.value("resources", Json::array())) {
        APIResourceInfo info;
        info.group = group;
        info.version = version;
        info.resource = res.value("resource", "");
        info.singular = res.value("singularResource", "");
        if (res.contains("responseKind")) info.kind = res["responseKind"].value("kind", "");
        info.namespaced = res.value("scope", "") == "Namespaced";
        info.verbs = strings(res, "verbs");
        info.shortNames = strings(res, "shortNames");
        for (const Json& s : res.value("subresources", Json::array())) info.subresources.push_back(s.value("subresource", ""));
        info.preferred = first;
        out.push_back(std::move(info));
      }
      first = false;
    }
  }
  return out;
}

Result<std::vector<APIResourceInfo>> DiscoveryClient::fetchLegacy() {
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
  std::vector<APIResourceInfo> out;
  for (const auto& [gv, group, version, preferred] : gvs) {
    req.path = group.empty() ? "/api/" + version : "/apis/" + gv;
    auto r = client_->send(req);
    if (!r.ok()) return r.status().withContext("discovery " + req.path);
    Json rl = Json::parse(r->body, nullptr, false);
    for (const Json& res : rl.value("resources", Json::array())) {
      std::string name = res.value("name", "");
      if (name.find('/') != std::string::npos) {  // a subresource: attach to its parent
        std::string parent = name.substr(0, name.find('/'));
        for (auto& o : out)
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
      out.push_back(std::move(info));
    }
  }
  return out;
}

Result<std::vector<APIResourceInfo>> DiscoveryClient::fetch() {
  bool servedCore = false, servedGroups = false;
  auto core = fetchAggregated("/api", servedCore);
  if (core.ok() && servedCore) {
    auto groups = fetchAggregated("/apis", servedGroups);
    if (groups.ok() && servedGroups) {
      auto all = std::move(core).value();
      for (auto& r : groups.value()) all.push_back(std::move(r));
      aggregated_ = true;
      return all;
    }
  }
  aggregated_ = false;
  return fetchLegacy();
}

Result<std::vector<APIResourceInfo>> DiscoveryClient::serverResources() {
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

Result<std::vector<APIResourceInfo>> DiscoveryClient::serverPreferredResources() {
  auto all = serverResources();
  if (!all.ok()) return all.status();
  std::vector<APIResourceInfo> out;
  for (auto& r : all.value())
    if (r.preferred) out.push_back(std::move(r));
  return out;
}

Result<APIResourceInfo> DiscoveryClient::resourceFor(const std::string& group, const std::string& version,
                                                     const std::string& kind) {
  auto all = serverResources();
  if (!all.ok()) return all.status();
  for (const auto& r : all.value())
    if (r.group == group && r.kind == kind && (version.empty() ? r.preferred : r.version == version)) return r;
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

}  // namespace kcm::client
