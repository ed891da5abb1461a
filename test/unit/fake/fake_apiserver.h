#pragma once
// FakeApiServer: an in-memory apiserver behind a RestClient (client-go's fake clientset + object tracker, for
// our unit tests). Objects are kept as JSON per resource; get, list (label/field selectors), watch (from a
// resourceVersion, events in order), create (generateName, uid, resourceVersion, creationTimestamp, generation),
// update and status update (resourceVersion preconditions, spec/status split, generation bumps), merge /
// strategic-merge (the merge keys our controllers touch) / JSON patches, delete (preconditions, finalizers,
// Orphan/Foreground propagation finalizers) and deletecollection answer as the apiserver does, with its error
// texts. Every request is recorded as an Action; reactors run first and may answer instead (errors, conflicts).
// No garbage collection, admission or defaulting: like client-go's fake, the test owns those.
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "client/rest_client.h"
#include "client/typed_client.h"

namespace kcm::testing {

struct Action {
  std::string verb;  // get, list, watch, create, update, patch, delete, deletecollection
  std::string group, version, resource, subresource, ns, name;
  std::string body;       // request body as sent
  std::string patchType;  // content type of a patch
  std::vector<std::pair<std::string, std::string>> query;
  bool matches(const std::string& v, const std::string& r) const {
    return (v == "*" || v == verb) && (r == "*" || r == resource || r == resource + "/" + subresource);
  }
  // "create pods", "patch nodes/status": for readable test failures.
  std::string toString() const;
};

class FakeApiServer : public client::Transport, public std::enable_shared_from_this<FakeApiServer> {
 public:
  using Reactor = std::function<std::optional<Reply>(const Action&)>;

  explicit FakeApiServer(Clock& clock = RealClock::get()) : clock_(clock) {}
  ~FakeApiServer() override;

  // ---- Seeding and reading (not recorded as actions).
  // Stores obj (JSON) at the collection path, e.g. "/apis/apps/v1/namespaces/ns/deployments"; uid,
  // resourceVersion and creationTimestamp are filled when missing. Returns the stored object.
  nlohmann::json add(const std::string& collectionPath, nlohmann::json obj);
  std::optional<nlohmann::json> getJson(const std::string& objectPath) const;
  std::vector<nlohmann::json> listJson(const std::string& collectionPath) const;

  template <class T>
  T add(const T& obj) {
    T out;
    auto stored = add(client::pathFor<T>(obj.metadata.namespace_), nlohmann::json::parse(toJson(obj)));
    (void)fromJson(stored.dump(), out);
    return out;
  }
  template <class T>
  std::optional<T> get(const std::string& ns, const std::string& name) const {
    auto j = getJson(client::pathFor<T>(ns, name));
    if (!j) return std::nullopt;
    T out;
    if (!fromJson(j->dump(), out).ok()) return std::nullopt;
    return out;
  }
  template <class T>
  std::vector<T> list(const std::string& ns = "") const {
    std::vector<T> out;
    for (const auto& j : listJson(client::pathFor<T>(ns))) {
      T o;
      if (fromJson(j.dump(), o).ok()) out.push_back(std::move(o));
    }
    return out;
  }

  // ---- Discovery: /api and /apis answer aggregated discovery (APIGroupDiscoveryList) for what is registered.
  struct Resource {
    std::string group, version, resource, kind;
    bool namespaced = true;
    std::vector<std::string> verbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update",
                                      "watch"};
    std::vector<std::string> subresources;
  };
  void addResource(Resource r);
  // Takes a resource out of discovery (a CRD deleted, an aggregated API gone); its objects stay.
  void removeResource(const std::string& group, const std::string& version, const std::string& resource);
  // Serves a group-version with freshness "Stale" (an aggregated apiserver that stopped answering).
  void setStale(const std::string& group, const std::string& version, bool stale = true);
  // Runs before /api and /apis are answered (not recorded as actions); the first that answers wins.
  void prependDiscoveryReactor(std::function<std::optional<Reply>(const std::string& path)> r);
  // The built-in kinds our controllers touch: pods, configmaps, secrets, serviceaccounts, services, events,
  // namespaces, nodes, replicationcontrollers, deployments, replicasets, leases, clusterroles.
  void addStandardResources();

  // ---- Reactors: run in order before the store; the first that answers wins. verb/resource may be "*";
  // resource may be "pods/status".
  void prependReactor(const std::string& verb, const std::string& resource, Reactor r);
  static Reply errorReply(int code, const std::string& reason, const std::string& message);

  // ---- Recorded requests.
  std::vector<Action> actions() const;
  // Only the writes (create, update, patch, delete, deletecollection).
  std::vector<Action> writes() const;
  std::vector<Action> actionsFor(const std::string& verb, const std::string& resource) const;
  // "<type> <reason> <message>" of each Event created (flush the broadcaster first).
  std::vector<std::string> createdEvents() const;
  void clearActions();

  // Ends every open watch (onDone OK), as an apiserver closing them; informers relist or re-watch.
  void closeWatches();
  int openWatches() const;
  uint64_t resourceVersion() const;

  // client::Transport
  Reply roundTrip(const client::Request& req, const std::string& target) override;
  std::unique_ptr<client::StreamHandle> openStream(const client::Request& req, const std::string& target,
                                                   client::OnLine onLine, client::OnDone onDone) override;

  // A RestClient talking to this server (user agent labels requests in Action::toString only).
  std::shared_ptr<client::RestClient> client(const std::string& userAgent = "fake");

 private:
  struct Path;
  struct Watcher;
  struct Event {
    std::string type;
    std::string resourceKey;
    nlohmann::json object;
  };
  Reply discovery(const std::string& path);
  Reply serve(const Path& p, const client::Request& req, const Action& a);
  Reply doGet(const Path& p, const client::Request& req);
  Reply doCreate(const Path& p, const client::Request& req);
  Reply doUpdate(const Path& p, nlohmann::json body, bool fromPatch);
  Reply doPatch(const Path& p, const client::Request& req);
  Reply doDelete(const Path& p, const client::Request& req);
  Reply doDeleteCollection(const Path& p, const client::Request& req);
  Reply deleteLocked(const Path& p, const nlohmann::json& opts);
  void emitLocked(const std::string& type, const std::string& resourceKey, const nlohmann::json& obj);
  void deliver();
  nlohmann::json stampNewLocked(const Path& p, nlohmann::json obj);

  Clock& clock_;
  mutable std::mutex mu_;
  // resource key ("/apis/apps/v1|deployments") -> "ns/name" -> object
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;
  std::vector<Event> history_;  // every event, for watches from an older resourceVersion
  uint64_t rv_ = 100;
  uint64_t uidSeq_ = 0;
  std::vector<std::pair<std::string, Reactor>> reactors_;  // "verb|resource"
  std::vector<Action> actions_;
  std::vector<Resource> resources_;
  std::set<std::string> staleGroupVersions_;  // "group/version"
  std::vector<std::function<std::optional<Reply>(const std::string&)>> discoveryReactors_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  // Events waiting to be delivered, in resourceVersion order; delivered outside mu_ under deliverMu_.
  std::vector<std::pair<std::shared_ptr<Watcher>, std::string>> pending_;
  std::recursive_mutex deliverMu_;
};

}  // namespace kcm::testing
