#include "fake/fake_apiserver.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <tuple>

#include "api/support/wall_time.h"

namespace kcm::testing {

using nlohmann::json;
using Reply = client::Transport::Reply;

namespace {

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) {  // segments arrive percent-encoded (urlEncode in resourcePath), as on the wire
      std::string seg, raw = path.substr(i, j - i);
      for (size_t k = 0; k < raw.size(); ++k) {
        if (raw[k] == '%' && k + 2 < raw.size() && std::isxdigit(static_cast<unsigned char>(raw[k + 1])) &&
            std::isxdigit(static_cast<unsigned char>(raw[k + 2]))) {
          seg += static_cast<char>(std::stoi(raw.substr(k + 1, 2), nullptr, 16));
          k += 2;
        } else {
          seg += raw[k];
        }
      }
      out.push_back(seg);
    }
    i = j + 1;
  }
  return out;
}

std::string queryValue(const std::vector<std::pair<std::string, std::string>>& q, const std::string& k) {
  for (const auto& [key, v] : q)
    if (key == k) return v;
  return "";
}

// ---- Selectors: enough of labels.Parse / fields.ParseSelector for what controllers send.

std::vector<std::string> splitTopLevel(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::vector<std::string> setValues(const std::string& s) {  // "(a, b)" -> {a, b}
  auto open = s.find('('), close = s.rfind(')');
  std::vector<std::string> out;
  if (open == std::string::npos || close == std::string::npos) return out;
  for (auto& v : splitTopLevel(s.substr(open + 1, close - open - 1))) out.push_back(trim(v));
  return out;
}

bool labelsMatch(const std::string& selector, const json& labels) {
  auto value = [&](const std::string& k) -> std::optional<std::string> {
    if (labels.is_object() && labels.contains(k) && labels[k].is_string()) return labels[k].get<std::string>();
    return std::nullopt;
  };
  for (auto req : splitTopLevel(selector)) {
    req = trim(req);
    if (req.empty()) continue;
    if (auto p = req.find(" notin "); p != std::string::npos) {
      auto v = value(trim(req.substr(0, p)));
      auto vals = setValues(req.substr(p));
      if (v && std::find(vals.begin(), vals.end(), *v) != vals.end()) return false;
    } else if (auto p2 = req.find(" in "); p2 != std::string::npos) {
      auto v = value(trim(req.substr(0, p2)));
      auto vals = setValues(req.substr(p2));
      if (!v || std::find(vals.begin(), vals.end(), *v) == vals.end()) return false;
    } else if (auto ne = req.find("!="); ne != std::string::npos) {
      auto v = value(trim(req.substr(0, ne)));
      if (v && *v == trim(req.substr(ne + 2))) return false;
    } else if (auto eq = req.find('='); eq != std::string::npos) {
      size_t vstart = req.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      auto v = value(trim(req.substr(0, eq)));
      if (!v || *v != trim(req.substr(vstart))) return false;
    } else if (req[0] == '!') {
      if (value(trim(req.substr(1)))) return false;
    } else if (!value(req)) {
      return false;
    }
  }
  return true;
}

std::string fieldValue(const json& obj, const std::string& dotted) {
  const json* cur = &obj;
  size_t i = 0;
  while (i <= dotted.size()) {
    size_t j = dotted.find('.', i);
    if (j == std::string::npos) j = dotted.size();
    std::string part = dotted.substr(i, j - i);
    if (!cur->is_object() || !cur->contains(part)) return "";
    cur = &(*cur)[part];
    i = j + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return "";
  return cur->dump();
}

bool fieldsMatch(const std::string& selector, const json& obj) {
  for (auto req : splitTopLevel(selector)) {
    req = trim(req);
    if (req.empty()) continue;
    if (auto ne = req.find("!="); ne != std::string::npos) {
      if (fieldValue(obj, trim(req.substr(0, ne))) == trim(req.substr(ne + 2))) return false;
    } else if (auto eq = req.find('='); eq != std::string::npos) {
      size_t vstart = req.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      if (fieldValue(obj, trim(req.substr(0, eq))) != trim(req.substr(vstart))) return false;
    }
  }
  return true;
}

// ---- Strategic merge patch: JSON merge patch plus the list merge keys and directives of the fields our
// controllers patch (ownerReferences by uid, conditions/addresses by type, containers/volumes/env by name,
// finalizers merged as a set, $patch: delete/replace, $deleteFromPrimitiveList).
const char* mergeKeyFor(const std::string& field) {
  static const std::map<std::string, const char*> kKeys = {
      {"ownerReferences", "uid"}, {"conditions", "type"}, {"addresses", "type"},   {"containers", "name"},
      {"initContainers", "name"}, {"ephemeralContainers", "name"}, {"volumes", "name"}, {"env", "name"},
      {"imagePullSecrets", "name"}, {"volumeMounts", "mountPath"}, {"podIPs", "ip"}, {"hostIPs", "ip"},
      {"resourceClaimStatuses", "name"}, {"containerStatuses", "name"}};
  auto it = kKeys.find(field);
  return it == kKeys.end() ? nullptr : it->second;
}

json strategicMerge(json target, const json& patch) {
  if (!patch.is_object()) return patch;
  if (patch.contains("$patch") && patch["$patch"] == "replace") {
    json out = patch;
    out.erase("$patch");
    return out;
  }
  if (!target.is_object()) target = json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key.rfind("$deleteFromPrimitiveList/", 0) == 0) {
      std::string field = key.substr(25);
      if (target.contains(field) && target[field].is_array() && v.is_array()) {
        json kept = json::array();
        for (const auto& e : target[field])
          if (std::find(v.begin(), v.end(), e) == v.end()) kept.push_back(e);
        target[field] = kept;
      }
      continue;
    }
    if (key[0] == '$') continue;  // $setElementOrder, $retainKeys: order and pruning do not matter here
    if (v.is_null()) {
      target.erase(key);
    } else if (v.is_array() && key == "finalizers") {
      json merged = target.contains(key) && target[key].is_array() ? target[key] : json::array();
      for (const auto& e : v)
        if (std::find(merged.begin(), merged.end(), e) == merged.end()) merged.push_back(e);
      target[key] = merged;
    } else if (v.is_array() && mergeKeyFor(key)) {
      const std::string mk = mergeKeyFor(key);
      json merged = target.contains(key) && target[key].is_array() ? target[key] : json::array();
      for (const auto& item : v) {
        if (!item.is_object() || !item.contains(mk)) {
          merged.push_back(item);
          continue;
        }
        auto match = std::find_if(merged.begin(), merged.end(),
                                  [&](const json& e) { return e.is_object() && e.value(mk, json()) == item[mk]; });
        if (item.contains("$patch") && item["$patch"] == "delete") {
          if (match != merged.end()) merged.erase(match);
        } else if (match != merged.end()) {
          *match = strategicMerge(*match, item);
        } else {
          json clean = item;
          clean.erase("$patch");
          merged.push_back(clean);
        }
      }
      target[key] = merged;
    } else if (v.is_object()) {
      target[key] = strategicMerge(target.contains(key) ? target[key] : json::object(), v);
    } else {
      target[key] = v;
    }
  }
  return target;
}

json statusJson(int code, const std::string& reason, const std::string& message, const std::string& name = "",
                const std::string& kind = "") {
  json s = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
            {"message", message},  {"reason", reason},   {"code", code}};
  if (!name.empty() || !kind.empty()) s["details"] = {{"name", name}, {"kind", kind}};
  return s;
}

}  // namespace

std::string Action::toString() const {
  std::string s = verb + " " + resource;
  if (!subresource.empty()) s += "/" + subresource;
  if (!ns.empty() || !name.empty()) s += " " + (ns.empty() ? "" : ns + "/") + name;
  return s;
}

struct FakeApiServer::Path {
  std::string gv;  // "/api/v1", "/apis/apps/v1"
  std::string group, version, resource, ns, name, sub;
  bool ok = false;
  std::string resourceKey() const { return gv + "|" + resource; }
  std::string objectKey() const { return ns + "/" + name; }
  std::string qualified() const { return group.empty() ? resource : resource + "." + group; }

  static Path parse(const std::string& path) {
    Path p;
    auto seg = splitPath(path.substr(0, path.find('?')));
    size_t i;
    if (seg.size() >= 2 && seg[0] == "api") {
      p.version = seg[1];
      p.gv = "/api/" + seg[1];
      i = 2;
    } else if (seg.size() >= 3 && seg[0] == "apis") {
      p.group = seg[1];
      p.version = seg[2];
      p.gv = "/apis/" + seg[1] + "/" + seg[2];
      i = 3;
    } else {
      return p;
    }
    std::vector<std::string> rest(seg.begin() + i, seg.end());
    if (rest.empty()) return p;
    bool nsSub = rest.size() == 3 && rest[0] == "namespaces" && (rest[2] == "status" || rest[2] == "finalize");
    if (rest[0] == "namespaces" && rest.size() >= 3 && !nsSub) {
      p.ns = rest[1];
      rest.erase(rest.begin(), rest.begin() + 2);
    }
    p.resource = rest[0];
    if (rest.size() > 1) p.name = rest[1];
    if (rest.size() > 2) p.sub = rest[2];
    p.ok = rest.size() <= 3;
    return p;
  }
};

struct FakeApiServer::Watcher {
  std::string resourceKey, ns, labelSelector, fieldSelector;
  client::OnLine onLine;
  client::OnDone onDone;
  bool cancelled = false;  // guarded by the server's deliverMu_
  bool wants(const std::string& key, const json& obj) const {
    if (key != resourceKey) return false;
    const json& md = obj.contains("metadata") ? obj["metadata"] : json::object();
    if (!ns.empty() && md.value("namespace", "") != ns) return false;
    if (!labelSelector.empty() && !labelsMatch(labelSelector, md.contains("labels") ? md["labels"] : json()))
      return false;
    return fieldSelector.empty() || fieldsMatch(fieldSelector, obj);
  }
};

namespace {
class FakeStreamHandle : public client::StreamHandle {
 public:
  FakeStreamHandle(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
  ~FakeStreamHandle() override { cancel_(); }

 private:
  std::function<void()> cancel_;
};
}  // namespace

FakeApiServer::~FakeApiServer() = default;

std::shared_ptr<client::RestClient> FakeApiServer::client(const std::string& userAgent) {
  client::RestConfig cfg;
  cfg.host = "https://fake-apiserver";
  cfg.userAgent = userAgent;
  cfg.qps = -1;  // no client-side rate limit in tests
  cfg.burst = 0;
  return client::RestClient::createWithTransport(cfg, shared_from_this(), clock_);
}

namespace {
// A Namespace also waits for its spec.finalizers (emptied through /finalize), as the apiserver's namespace
// storage does.
bool hasFinalizers(const json& obj, const std::string& resource, const std::string& group) {
  const json& md = obj["metadata"];
  if (md.contains("finalizers") && md["finalizers"].is_array() && !md["finalizers"].empty()) return true;
  if (resource == "namespaces" && group.empty() && obj.contains("spec") && obj["spec"].is_object()) {
    const json& f = obj["spec"].value("finalizers", json::array());
    return f.is_array() && !f.empty();
  }
  return false;
}
}  // namespace

json FakeApiServer::stampNewLocked(const Path& p, json obj) {
  auto& md = obj["metadata"];
  if (!md.is_object()) md = json::object();
  if (!p.ns.empty()) md["namespace"] = p.ns;
  if (!md.contains("uid") || md["uid"].get<std::string>().empty()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012llu", static_cast<unsigned long long>(++uidSeq_));
    md["uid"] = buf;
  }
  if (!md.contains("creationTimestamp") || md["creationTimestamp"].is_null())
    md["creationTimestamp"] = api::timeNow(clock_).rfc3339();
  if (!md.contains("generation")) md["generation"] = 1;
  md["resourceVersion"] = std::to_string(++rv_);
  return obj;
}

json FakeApiServer::add(const std::string& collectionPath, json obj) {
  Path p = Path::parse(collectionPath);
  if (!p.ok) throw std::runtime_error("FakeApiServer::add: bad path " + collectionPath);
  p.name = obj["metadata"].value("name", "");
  json stored;
  {
    std::lock_guard l(mu_);
    stored = stampNewLocked(p, std::move(obj));
    objects_[p.resourceKey()][p.objectKey()] = stored;
    emitLocked("ADDED", p.resourceKey(), stored);
  }
  deliver();
  return stored;
}

std::optional<json> FakeApiServer::getJson(const std::string& objectPath) const {
  Path p = Path::parse(objectPath);
  std::lock_guard l(mu_);
  auto r = objects_.find(p.resourceKey());
  if (r == objects_.end()) return std::nullopt;
  auto o = r->second.find(p.objectKey());
  if (o == r->second.end()) return std::nullopt;
  return o->second;
}

std::vector<json> FakeApiServer::listJson(const std::string& collectionPath) const {
  Path p = Path::parse(collectionPath);
  std::vector<json> out;
  std::lock_guard l(mu_);
  auto r = objects_.find(p.resourceKey());
  if (r == objects_.end()) return out;
  for (const auto& [k, o] : r->second)
    if (p.ns.empty() || o["metadata"].value("namespace", "") == p.ns) out.push_back(o);
  return out;
}

void FakeApiServer::prependReactor(const std::string& verb, const std::string& resource, Reactor r) {
  std::lock_guard l(mu_);
  reactors_.insert(reactors_.begin(), {verb + "|" + resource, std::move(r)});
}

Reply FakeApiServer::errorReply(int code, const std::string& reason, const std::string& message) {
  return Reply{code, statusJson(code, reason, message).dump(), "application/json", -1};
}

std::vector<Action> FakeApiServer::actions() const {
  std::lock_guard l(mu_);
  return actions_;
}

std::vector<Action> FakeApiServer::writes() const {
  std::vector<Action> out;
  for (auto& a : actions())
    if (a.verb != "get" && a.verb != "list" && a.verb != "watch") out.push_back(a);
  return out;
}

std::vector<Action> FakeApiServer::actionsFor(const std::string& verb, const std::string& resource) const {
  std::vector<Action> out;
  for (auto& a : actions())
    if (a.matches(verb, resource)) out.push_back(a);
  return out;
}

std::vector<std::string> FakeApiServer::createdEvents() const {
  std::vector<std::string> out;
  for (const auto& a : actionsFor("create", "events")) {
    auto j = nlohmann::json::parse(a.body, nullptr, false);
    if (j.is_object())
      out.push_back(j.value("type", "") + " " + j.value("reason", "") + " " + j.value("message", ""));
  }
  return out;
}

void FakeApiServer::clearActions() {
  std::lock_guard l(mu_);
  actions_.clear();
}

uint64_t FakeApiServer::resourceVersion() const {
  std::lock_guard l(mu_);
  return rv_;
}

int FakeApiServer::openWatches() const {
  std::lock_guard l(mu_);
  return static_cast<int>(watchers_.size());
}

void FakeApiServer::closeWatches() {
  std::vector<std::shared_ptr<Watcher>> ws;
  {
    std::lock_guard l(mu_);
    ws.swap(watchers_);
  }
  std::lock_guard d(deliverMu_);
  for (auto& w : ws) {
    if (w->cancelled) continue;
    w->cancelled = true;
    if (w->onDone) w->onDone(client::StreamEnd{Status::Ok(), 200, "", 0});
  }
}

void FakeApiServer::emitLocked(const std::string& type, const std::string& resourceKey, const json& obj) {
  history_.push_back({type, resourceKey, obj});
  std::string line;
  for (auto& w : watchers_) {
    if (!w->wants(resourceKey, obj)) continue;
    if (line.empty()) line = json{{"type", type}, {"object", obj}}.dump();
    pending_.emplace_back(w, line);
  }
}

void FakeApiServer::deliver() {
  std::lock_guard d(deliverMu_);
  while (true) {
    std::vector<std::pair<std::shared_ptr<Watcher>, std::string>> batch;
    {
      std::lock_guard l(mu_);
      batch.swap(pending_);
    }
    if (batch.empty()) return;
    for (auto& [w, line] : batch) {
      if (w->cancelled) continue;
      if (!w->onLine(line)) {
        w->cancelled = true;
        {
          std::lock_guard l(mu_);
          std::erase(watchers_, w);
        }
        if (w->onDone) w->onDone(client::StreamEnd{Status::Ok(), 200, "", 0});
      }
    }
  }
}

std::unique_ptr<client::StreamHandle> FakeApiServer::openStream(const client::Request& req, const std::string&,
                                                                client::OnLine onLine, client::OnDone onDone) {
  Path p = Path::parse(req.path);
  auto w = std::make_shared<Watcher>();
  w->resourceKey = p.resourceKey();
  w->ns = p.ns;
  w->labelSelector = queryValue(req.query, "labelSelector");
  w->fieldSelector = queryValue(req.query, "fieldSelector");
  w->onLine = std::move(onLine);
  w->onDone = std::move(onDone);
  const std::string rvText = queryValue(req.query, "resourceVersion");
  {
    std::lock_guard l(mu_);
    Action a{"watch", p.group, p.version, p.resource, p.sub, p.ns, p.name, "", "", req.query};
    actions_.push_back(a);
    for (auto& [key, r] : reactors_) {
      auto bar = key.find('|');
      if (!a.matches(key.substr(0, bar), key.substr(bar + 1))) continue;
      if (auto reply = r(a)) {
        client::StreamEnd e{Status::Ok(), reply->code, reply->body, reply->retryAfterSeconds};
        auto done = w->onDone;
        // Reported after return, as a socket would: the caller is not yet holding the handle.
        std::thread([done, e] { done(e); }).detach();
        return std::make_unique<FakeStreamHandle>([] {});
      }
    }
    if (rvText.empty() || rvText == "0") {
      auto r = objects_.find(p.resourceKey());
      if (r != objects_.end())
        for (const auto& [k, o] : r->second)
          if (w->wants(p.resourceKey(), o)) pending_.emplace_back(w, json{{"type", "ADDED"}, {"object", o}}.dump());
    } else {
      uint64_t from = std::strtoull(rvText.c_str(), nullptr, 10);
      for (const auto& e : history_) {
        uint64_t erv = std::strtoull(e.object["metadata"].value("resourceVersion", "0").c_str(), nullptr, 10);
        if (erv > from && w->wants(e.resourceKey, e.object))
          pending_.emplace_back(w, json{{"type", e.type}, {"object", e.object}}.dump());
      }
    }
    watchers_.push_back(w);
  }
  std::weak_ptr<FakeApiServer> self = weak_from_this();
  auto handle = std::make_unique<FakeStreamHandle>([self, w] {
    auto s = self.lock();
    if (!s) return;
    {
      std::lock_guard d(s->deliverMu_);
      w->cancelled = true;
    }
    std::lock_guard l(s->mu_);
    std::erase(s->watchers_, w);
  });
  // Events already due are delivered once the caller holds the handle: from a short-lived thread, as the
  // I/O loop would.
  std::thread([self] {
    if (auto s = self.lock()) s->deliver();
  }).detach();
  return handle;
}

void FakeApiServer::addResource(Resource r) {
  std::lock_guard l(mu_);
  resources_.push_back(std::move(r));
}

void FakeApiServer::removeResource(const std::string& group, const std::string& version, const std::string& resource) {
  std::lock_guard l(mu_);
  std::erase_if(resources_, [&](const Resource& r) {
    return r.group == group && r.version == version && r.resource == resource;
  });
}

void FakeApiServer::setStale(const std::string& group, const std::string& version, bool stale) {
  std::lock_guard l(mu_);
  if (stale) staleGroupVersions_.insert(group + "/" + version);
  else staleGroupVersions_.erase(group + "/" + version);
}

void FakeApiServer::prependDiscoveryReactor(std::function<std::optional<Reply>(const std::string& path)> r) {
  std::lock_guard l(mu_);
  discoveryReactors_.insert(discoveryReactors_.begin(), std::move(r));
}

void FakeApiServer::addStandardResources() {
  for (auto [g, v, r, k, ns] : std::initializer_list<std::tuple<const char*, const char*, const char*, const char*, bool>>{
           {"", "v1", "pods", "Pod", true},
           {"", "v1", "configmaps", "ConfigMap", true},
           {"", "v1", "secrets", "Secret", true},
           {"", "v1", "serviceaccounts", "ServiceAccount", true},
           {"", "v1", "services", "Service", true},
           {"", "v1", "events", "Event", true},
           {"", "v1", "replicationcontrollers", "ReplicationController", true},
           {"", "v1", "namespaces", "Namespace", false},
           {"", "v1", "nodes", "Node", false},
           {"apps", "v1", "deployments", "Deployment", true},
           {"apps", "v1", "replicasets", "ReplicaSet", true},
           {"coordination.k8s.io", "v1", "leases", "Lease", true},
           {"rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false}}) {
    Resource res;
    res.group = g;
    res.version = v;
    res.resource = r;
    res.kind = k;
    res.namespaced = ns;
    addResource(std::move(res));
  }
}

Reply FakeApiServer::discovery(const std::string& path) {
  std::vector<std::function<std::optional<Reply>(const std::string&)>> reactors;
  {
    std::lock_guard l(mu_);
    reactors = discoveryReactors_;
  }
  for (auto& r : reactors)
    if (auto reply = r(path)) return *reply;
  const bool core = path == "/api";
  std::map<std::string, std::map<std::string, json>> byGroup;  // group -> version -> resources
  std::set<std::string> stale;
  {
    std::lock_guard l(mu_);
    stale = staleGroupVersions_;
    for (const auto& r : resources_) {
      if (core != r.group.empty()) continue;
      json res = {{"resource", r.resource},
                  {"responseKind", {{"group", r.group}, {"version", r.version}, {"kind", r.kind}}},
                  {"scope", r.namespaced ? "Namespaced" : "Cluster"},
                  {"verbs", r.verbs}};
      json subs = json::array();
      for (const auto& s : r.subresources) subs.push_back({{"subresource", s}});
      res["subresources"] = subs;
      auto& v = byGroup[r.group][r.version];
      if (v.is_null()) v = json::array();
      v.push_back(res);
    }
  }
  json items = json::array();
  for (auto& [g, versions] : byGroup) {
    json vs = json::array();
    for (auto& [v, rs] : versions)
      vs.push_back({{"version", v}, {"resources", rs}, {"freshness", stale.count(g + "/" + v) ? "Stale" : "Current"}});
    items.push_back({{"metadata", {{"name", g}}}, {"versions", vs}});
  }
  json doc = {{"kind", "APIGroupDiscoveryList"}, {"apiVersion", "apidiscovery.k8s.io/v2"}, {"items", items}};
  return Reply{200, doc.dump()};
}

Reply FakeApiServer::roundTrip(const client::Request& req, const std::string&) {
  if (req.method == "GET" && (req.path == "/api" || req.path == "/apis")) return discovery(req.path);
  Path p = Path::parse(req.path);
  Action a;
  a.group = p.group;
  a.version = p.version;
  a.resource = p.resource;
  a.subresource = p.sub;
  a.ns = p.ns;
  a.name = p.name;
  a.body = req.body;
  a.query = req.query;
  if (req.method == "GET") a.verb = p.name.empty() ? "list" : "get";
  else if (req.method == "POST") a.verb = "create";
  else if (req.method == "PUT") a.verb = "update";
  else if (req.method == "PATCH") a.verb = "patch", a.patchType = req.contentType;
  else if (req.method == "DELETE") a.verb = p.name.empty() ? "deletecollection" : "delete";
  std::vector<Reactor> rs;
  {
    std::lock_guard l(mu_);
    actions_.push_back(a);
    for (auto& [key, r] : reactors_) {
      auto bar = key.find('|');
      if (a.matches(key.substr(0, bar), key.substr(bar + 1))) rs.push_back(r);
    }
  }
  for (auto& r : rs)
    if (auto reply = r(a)) return *reply;
  if (!p.ok) return errorReply(404, "NotFound", "the server could not find the requested resource");
  Reply out = serve(p, req, a);
  deliver();
  return out;
}

Reply FakeApiServer::serve(const Path& p, const client::Request& req, const Action& a) {
  if (a.verb == "get" || a.verb == "list") return doGet(p, req);
  if (a.verb == "create") return doCreate(p, req);
  if (a.verb == "update") {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded()) return errorReply(400, "BadRequest", "the body of the request was in an unknown format");
    std::lock_guard l(mu_);
    return doUpdate(p, std::move(body), false);
  }
  if (a.verb == "patch") return doPatch(p, req);
  if (a.verb == "delete") return doDelete(p, req);
  if (a.verb == "deletecollection") return doDeleteCollection(p, req);
  return errorReply(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
}

Reply FakeApiServer::doGet(const Path& p, const client::Request& req) {
  std::lock_guard l(mu_);
  auto& coll = objects_[p.resourceKey()];
  if (!p.name.empty()) {
    auto it = coll.find(p.objectKey());
    if (it == coll.end())
      return Reply{404, statusJson(404, "NotFound", p.qualified() + " \"" + p.name + "\" not found", p.name,
                                   p.resource).dump()};
    return Reply{200, it->second.dump()};
  }
  const std::string ls = queryValue(req.query, "labelSelector"), fs = queryValue(req.query, "fieldSelector");
  json items = json::array();
  std::string kind = "List", apiVersion = p.group.empty() ? p.version : p.group + "/" + p.version;
  for (const auto& [k, o] : coll) {
    if (!p.ns.empty() && o["metadata"].value("namespace", "") != p.ns) continue;
    const json& md = o["metadata"];
    if (!ls.empty() && !labelsMatch(ls, md.contains("labels") ? md["labels"] : json())) continue;
    if (!fs.empty() && !fieldsMatch(fs, o)) continue;
    if (o.contains("kind")) kind = o["kind"].get<std::string>() + "List";
    items.push_back(o);
  }
  json list = {{"kind", kind},
               {"apiVersion", apiVersion},
               {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
               {"items", items}};
  return Reply{200, list.dump()};
}

Reply FakeApiServer::doCreate(const Path& p, const client::Request& req) {
  json obj = json::parse(req.body, nullptr, false);
  if (obj.is_discarded() || !obj.is_object())
    return errorReply(400, "BadRequest", "the body of the request was in an unknown format");
  if (!p.sub.empty() || !p.name.empty()) {  // subresource creates (evictions, tokens): accepted, echoed
    return Reply{201, obj.dump()};
  }
  std::lock_guard l(mu_);
  json& md = obj["metadata"];
  if (!md.is_object()) md = json::object();
  if (md.contains("namespace") && !p.ns.empty() && md["namespace"] != p.ns)
    return errorReply(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on "
                                         "the request");
  std::string name = md.value("name", "");
  if (name.empty()) {
    std::string gen = md.value("generateName", "");
    if (gen.empty())
      return Reply{422, statusJson(422, "Invalid", p.qualified() + " \"\" is invalid: metadata.name: Required value: "
                                                   "name or generateName is required").dump()};
    static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t n = ++uidSeq_ * 2654435761u;
    name = gen;
    for (int i = 0; i < 5; ++i, n /= 27) name += kAlphabet[n % 27];
    md["name"] = name;
  }
  Path op = p;
  op.name = name;
  auto& coll = objects_[p.resourceKey()];
  if (coll.count(op.objectKey()))
    return Reply{409, statusJson(409, "AlreadyExists", p.qualified() + " \"" + name + "\" already exists", name,
                                 p.resource).dump()};
  md.erase("resourceVersion");
  md.erase("uid");
  md.erase("creationTimestamp");
  md.erase("deletionTimestamp");
  md.erase("generation");
  json stored = stampNewLocked(op, std::move(obj));
  coll[op.objectKey()] = stored;
  emitLocked("ADDED", p.resourceKey(), stored);
  return Reply{201, stored.dump()};
}

Reply FakeApiServer::doUpdate(const Path& p, json body, bool fromPatch) {
  auto& coll = objects_[p.resourceKey()];
  auto it = coll.find(p.objectKey());
  if (it == coll.end())
    return Reply{404, statusJson(404, "NotFound", p.qualified() + " \"" + p.name + "\" not found", p.name,
                                 p.resource).dump()};
  json& old = it->second;
  const json& oldMd = old["metadata"];
  std::string rv = body.contains("metadata") && body["metadata"].is_object()
                       ? body["metadata"].value("resourceVersion", "") : "";
  if (!fromPatch && !rv.empty() && rv != oldMd.value("resourceVersion", "")) {
    return Reply{409, statusJson(409, "Conflict", "Operation cannot be fulfilled on " + p.qualified() + " \"" + p.name +
                                                      "\": the object has been modified; please apply your changes "
                                                      "to the latest version and try again",
                                 p.name, p.resource).dump()};
  }
  json next;
  if (p.sub == "status" || p.sub == "approval") {  // a CSR's approval writes its status conditions only
    next = old;
    if (body.contains("status")) next["status"] = body["status"];
    else next.erase("status");
  } else if (p.sub == "finalize") {
    next = old;
    if (body.contains("spec")) next["spec"] = body["spec"];
  } else {
    next = std::move(body);
    // the main resource does not write status (every kind our controllers update has a status subresource)
    if (old.contains("status")) next["status"] = old["status"];
    else next.erase("status");
  }
  json& md = next["metadata"];
  if (!md.is_object()) md = json::object();
  for (const char* k : {"uid", "creationTimestamp", "namespace", "name", "deletionTimestamp",
                        "deletionGracePeriodSeconds"}) {
    if (oldMd.contains(k)) md[k] = oldMd[k];
    else md.erase(k);
  }
  if (p.sub == "status" || p.sub == "approval" || p.sub == "finalize") {
    next["metadata"] = oldMd;  // only status (spec for finalize) changes through a subresource
  }
  // generation moves when anything outside metadata and status changes
  auto specOf = [](const json& o) {
    json s = o;
    s.erase("metadata");
    s.erase("status");
    return s;
  };
  int64_t gen = oldMd.value("generation", int64_t{1});
  if (p.sub.empty() && specOf(next) != specOf(old)) ++gen;
  next["metadata"]["generation"] = gen;
  if (next == old) return Reply{200, old.dump()};  // a no-op write keeps its resourceVersion
  next["metadata"]["resourceVersion"] = std::to_string(++rv_);
  const json& nmd = next["metadata"];
  bool deleting = nmd.contains("deletionTimestamp") && !nmd["deletionTimestamp"].is_null();
  if (deleting && !hasFinalizers(next, p.resource, p.group)) {
    json gone = next;
    coll.erase(it);
    emitLocked("DELETED", p.resourceKey(), gone);
    return Reply{200, gone.dump()};
  }
  old = next;
  emitLocked("MODIFIED", p.resourceKey(), next);
  return Reply{200, next.dump()};
}

Reply FakeApiServer::doPatch(const Path& p, const client::Request& req) {
  std::lock_guard l(mu_);
  auto& coll = objects_[p.resourceKey()];
  auto it = coll.find(p.objectKey());
  const bool apply = req.contentType.find("apply-patch") != std::string::npos;
  if (it == coll.end() && !apply)
    return Reply{404, statusJson(404, "NotFound", p.qualified() + " \"" + p.name + "\" not found", p.name,
                                 p.resource).dump()};
  json base = it == coll.end() ? json::object() : it->second;
  json result;
  try {
    if (req.contentType.find("json-patch") != std::string::npos) {
      result = base.patch(json::parse(req.body));
    } else if (req.contentType.find("strategic-merge-patch") != std::string::npos) {
      result = strategicMerge(base, json::parse(req.body));
    } else {
      result = base;
      result.merge_patch(json::parse(req.body));
    }
  } catch (const std::exception& e) {
    return errorReply(422, "Invalid", std::string("the patch could not be applied: ") + e.what());
  }
  if (it == coll.end()) {  // apply of a new object
    Path cp = p;
    json& md = result["metadata"];
    if (!md.is_object()) md = json::object();
    md["name"] = p.name;
    json stored = stampNewLocked(cp, std::move(result));
    coll[cp.objectKey()] = stored;
    emitLocked("ADDED", p.resourceKey(), stored);
    return Reply{201, stored.dump()};
  }
  // A patch carrying a resourceVersion is a precondition, as the apiserver treats it.
  std::string rv = result["metadata"].value("resourceVersion", "");
  if (!rv.empty() && rv != it->second["metadata"].value("resourceVersion", ""))
    return Reply{409, statusJson(409, "Conflict", "Operation cannot be fulfilled on " + p.qualified() + " \"" +
                                                      p.name + "\": the object has been modified; please apply your "
                                                      "changes to the latest version and try again",
                                 p.name, p.resource).dump()};
  if (p.sub.empty() || p.sub == "status") return doUpdate(p, std::move(result), true);
  return errorReply(404, "NotFound", "the server could not find the requested resource");
}

Reply FakeApiServer::deleteLocked(const Path& p, const json& opts) {
  auto& coll = objects_[p.resourceKey()];
  auto it = coll.find(p.objectKey());
  if (it == coll.end())
    return Reply{404, statusJson(404, "NotFound", p.qualified() + " \"" + p.name + "\" not found", p.name,
                                 p.resource).dump()};
  json& obj = it->second;
  json& md = obj["metadata"];
  if (opts.contains("preconditions") && opts["preconditions"].is_object()) {
    const json& pre = opts["preconditions"];
    if (pre.contains("uid") && pre["uid"].is_string() && pre["uid"] != md["uid"])
      return Reply{409, statusJson(409, "Conflict", "Precondition failed: UID in precondition: " +
                                                        pre["uid"].get<std::string>() + ", UID in object meta: " +
                                                        md.value("uid", ""), p.name, p.resource).dump()};
    if (pre.contains("resourceVersion") && pre["resourceVersion"].is_string() &&
        pre["resourceVersion"] != md["resourceVersion"])
      return Reply{409, statusJson(409, "Conflict", "Precondition failed: ResourceVersion in precondition: " +
                                                        pre["resourceVersion"].get<std::string>() +
                                                        ", ResourceVersion in object meta: " +
                                                        md.value("resourceVersion", ""), p.name, p.resource).dump()};
  }
  const bool deleting = md.contains("deletionTimestamp") && !md["deletionTimestamp"].is_null();
  json finalizers = md.contains("finalizers") && md["finalizers"].is_array() ? md["finalizers"] : json::array();
  std::string policy = opts.value("propagationPolicy", "");
  if (opts.contains("orphanDependents") && opts["orphanDependents"].is_boolean())
    policy = opts["orphanDependents"].get<bool>() ? "Orphan" : policy;
  auto addFinalizer = [&](const char* f) {
    if (std::find(finalizers.begin(), finalizers.end(), f) == finalizers.end()) finalizers.push_back(f);
  };
  if (!deleting && policy == "Orphan") addFinalizer("orphan");
  if (!deleting && policy == "Foreground") addFinalizer("foregroundDeletion");
  json withFinalizers = obj;
  withFinalizers["metadata"]["finalizers"] = finalizers;
  if (!hasFinalizers(withFinalizers, p.resource, p.group)) {
    json gone = obj;
    gone["metadata"]["resourceVersion"] = std::to_string(++rv_);
    coll.erase(it);
    emitLocked("DELETED", p.resourceKey(), gone);
    return Reply{200, gone.dump()};
  }
  if (deleting && md.value("finalizers", json::array()) == finalizers) return Reply{200, obj.dump()};
  if (!finalizers.empty()) md["finalizers"] = finalizers;
  if (!deleting) {
    md["deletionTimestamp"] = api::timeNow(clock_).rfc3339();
    md["deletionGracePeriodSeconds"] = 0;
    if (p.resource == "namespaces" && p.group.empty()) obj["status"]["phase"] = "Terminating";
  }
  md["resourceVersion"] = std::to_string(++rv_);
  emitLocked("MODIFIED", p.resourceKey(), obj);
  return Reply{200, obj.dump()};
}

Reply FakeApiServer::doDelete(const Path& p, const client::Request& req) {
  json opts = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
  if (opts.is_discarded()) opts = json::object();
  std::lock_guard l(mu_);
  return deleteLocked(p, opts);
}

Reply FakeApiServer::doDeleteCollection(const Path& p, const client::Request& req) {
  json opts = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
  if (opts.is_discarded()) opts = json::object();
  const std::string ls = queryValue(req.query, "labelSelector"), fs = queryValue(req.query, "fieldSelector");
  std::lock_guard l(mu_);
  std::vector<std::string> names;
  for (const auto& [k, o] : objects_[p.resourceKey()]) {
    const json& md = o["metadata"];
    if (!p.ns.empty() && md.value("namespace", "") != p.ns) continue;
    if (!ls.empty() && !labelsMatch(ls, md.contains("labels") ? md["labels"] : json())) continue;
    if (!fs.empty() && !fieldsMatch(fs, o)) continue;
    names.push_back(md.value("name", ""));
  }
  for (const auto& n : names) {
    Path op = p;
    op.name = n;
    deleteLocked(op, opts);
  }
  return Reply{200, statusJson(200, "", "").dump()};
}

}  // namespace kcm::testing
