#pragma once
// Typed verbs over RestClient for any generated API type T (ResourceTraits<T> gives group/version/resource):
// get, list (paged), watch, create, update, updateStatus, patch (merge, strategic, JSON patch, apply),
// delete (propagation, preconditions, grace), deleteCollection, plus subresources. Light: T's JSON goes through
// the generated entry points of api/gen/<group>_<version>_json.h (fromJson, toJson, decodeListItems,
// decodeWatchEvent, found by argument-dependent lookup), so include that header for the T you use; the codec
// itself is compiled once in the api library. Thread-safe as RestClient is.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/gen/meta_v1_json.h"
#include "client/rest_client.h"

namespace kcm::client {

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::string resourceVersion;
  std::string resourceVersionMatch;
  int64_t limit = 0;
  std::string continueToken;
  int64_t timeoutSeconds = 0;
  bool allowWatchBookmarks = false;
  bool sendInitialEvents = false;
};

struct DeleteOptions {
  std::optional<std::string> propagationPolicy;  // "Orphan", "Background", "Foreground"
  std::optional<int64_t> gracePeriodSeconds;
  std::optional<std::string> preconditionUID;
  std::optional<std::string> preconditionResourceVersion;
  std::vector<std::string> dryRun;
  std::string toJson() const;
};

enum class PatchType { kMerge, kStrategicMerge, kJsonPatch, kApply };
const char* patchContentType(PatchType t);

struct WriteOptions {
  std::string fieldManager;
  bool force = false;  // apply: take ownership of conflicting fields
  std::vector<std::string> dryRun;
};

// "/api/v1" or "/apis/<group>/<version>", then "/namespaces/<ns>" when namespaced and ns is set, "/<resource>",
// "/<name>", "/<subresource>".
std::string resourcePath(const std::string& group, const std::string& version, const std::string& resource,
                         const std::string& ns, const std::string& name = "", const std::string& subresource = "");

template <class T>
std::string pathFor(const std::string& ns, const std::string& name = "", const std::string& sub = "") {
  using R = api::ResourceTraits<T>;
  return resourcePath(R::kGroup, R::kVersion, R::kResource, R::kNamespaced ? ns : "", name, sub);
}

// The Accept header of a typed request, as client-go sets it from the content type (--kube-api-content-type):
// "application/vnd.kubernetes.protobuf, */*" by kcm's default, JSON when configured so. Responses are decoded
// by what they are (the generated fromJson/decodeListItems/decodeWatchEvent also take protobuf); request bodies
// stay JSON.
inline std::string typedAccept(const RestClient& c) {
  const std::string& ct = c.config().contentType;
  return ct.starts_with("application/vnd.kubernetes.protobuf") ? ct + ", */*" : std::string("application/json");
}

void appendListQuery(const ListOptions& o, std::vector<std::pair<std::string, std::string>>& q);
void appendWriteQuery(const WriteOptions& o, std::vector<std::pair<std::string, std::string>>& q);

template <class T>
struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  T object;
  api::meta::v1::Status status;  // for ERROR
};

// Decodes one watch event line. An ERROR event's object is decoded into `status`.
template <class T>
Status decodeWatchEvent(std::string_view line, WatchEvent<T>& ev) {
  return decodeWatchEvent(line, ev.type, ev.object, ev.status);
}

template <class T>
Result<T> decodeResponse(Result<Response> r) {
  if (!r.ok()) return r.status();
  T out;
  if (Status s = fromJson(r->body, out); !s.ok()) return s;
  return out;
}

using api::ListInfo;

// Decodes a list response, handing each item to onItem as it is decoded: no vector of items is ever built,
// so a 10k-object list costs one object at a time beyond what the caller keeps.
template <class T>
Result<ListInfo> decodeListStreaming(const std::string& body, const std::function<void(T&&)>& onItem) {
  ListInfo info;
  if (Status s = decodeListItems(body, onItem, info); !s.ok()) return s;
  return info;
}

template <class T>
Result<ListInfo> listPageStreaming(RestClient& c, const std::string& ns, const ListOptions& o,
                                   const std::function<void(T&&)>& onItem) {
  Request req;
  req.accept = typedAccept(c);
  req.path = pathFor<T>(ns);
  appendListQuery(o, req.query);
  auto r = c.send(req);
  if (!r.ok()) return r.status();
  return decodeListStreaming<T>(r->body, onItem);
}

template <class T>
Result<T> get(RestClient& c, const std::string& ns, const std::string& name, const std::string& sub = "") {
  Request req;
  req.accept = typedAccept(c);
  req.path = pathFor<T>(ns, name, sub);
  return decodeResponse<T>(c.send(req));
}

template <class T>
Result<typename api::ResourceTraits<T>::List> listPage(RestClient& c, const std::string& ns, const ListOptions& o) {
  Request req;
  req.accept = typedAccept(c);
  req.path = pathFor<T>(ns);
  appendListQuery(o, req.query);
  return decodeResponse<typename api::ResourceTraits<T>::List>(c.send(req));
}

// Lists every page (limit/continue); the result's metadata carries the last page's resourceVersion.
template <class T>
Result<typename api::ResourceTraits<T>::List> list(RestClient& c, const std::string& ns, ListOptions o = {}) {
  typename api::ResourceTraits<T>::List all;
  while (true) {
    auto page = listPage<T>(c, ns, o);
    if (!page.ok()) return page.status();
    for (auto& item : page->items) all.items.push_back(std::move(item));
    all.metadata = page->metadata;
    if (page->metadata.continue_.empty() || o.limit == 0) break;
    o.continueToken = page->metadata.continue_;
    o.resourceVersion.clear();
  }
  all.metadata.continue_.clear();
  return all;
}

// Streams the watch `req` (path, query and Accept already set), decoding each event as T. Events that fail to
// decode end the watch with an error (the caller relists).
template <class T>
Status watchRequest(RestClient& c, Request req, const ListOptions& o,
                    const std::function<bool(WatchEvent<T>&)>& onEvent, std::stop_token stop) {
  appendListQuery(o, req.query);
  req.query.emplace_back("watch", "true");
  req.timeout = std::chrono::seconds(o.timeoutSeconds > 0 ? o.timeoutSeconds + 30 : 330);
  Status decodeErr;
  Status s = c.stream(
      req,
      [&](std::string_view line) {
        WatchEvent<T> ev;
        if (Status d = decodeWatchEvent(line, ev); !d.ok()) {
          decodeErr = d;
          return false;
        }
        return onEvent(ev);
      },
      stop);
  return decodeErr.ok() ? s : decodeErr;
}

// The watch `req` as a stream on the I/O loop: raw event lines to onLine, the outcome to onDone.
Result<std::unique_ptr<StreamHandle>> watchRequestAsync(RestClient& c, Request req, const ListOptions& o,
                                                        OnLine onLine, std::function<void(Status)> onDone,
                                                        std::stop_token stop);

// Watches until the server ends the stream, onEvent returns false, or stop.
template <class T>
Status watch(RestClient& c, const std::string& ns, ListOptions o,
             const std::function<bool(WatchEvent<T>&)>& onEvent, std::stop_token stop = {}) {
  Request req;
  req.accept = typedAccept(c);
  req.path = pathFor<T>(ns);
  return watchRequest<T>(c, std::move(req), o, onEvent, stop);
}

template <class T>
Result<T> sendObject(RestClient& c, const std::string& method, const std::string& path, const T& obj,
                     const WriteOptions& w) {
  Request req;
  req.accept = typedAccept(c);
  req.method = method;
  req.path = path;
  req.body = toJson(obj);
  appendWriteQuery(w, req.query);
  return decodeResponse<T>(c.send(req));
}

template <class T>
Result<T> create(RestClient& c, const std::string& ns, const T& obj, const WriteOptions& w = {}) {
  return sendObject(c, "POST", pathFor<T>(ns), obj, w);
}

template <class T>
Result<T> update(RestClient& c, const T& obj, const WriteOptions& w = {}) {
  return sendObject(c, "PUT", pathFor<T>(obj.metadata.namespace_, obj.metadata.name), obj, w);
}

template <class T>
Result<T> updateStatus(RestClient& c, const T& obj, const WriteOptions& w = {}) {
  return sendObject(c, "PUT", pathFor<T>(obj.metadata.namespace_, obj.metadata.name, "status"), obj, w);
}

template <class T>
Result<T> patch(RestClient& c, const std::string& ns, const std::string& name, PatchType type,
                const std::string& body, const std::string& sub = "", const WriteOptions& w = {}) {
  Request req;
  req.accept = typedAccept(c);
  req.method = "PATCH";
  req.path = pathFor<T>(ns, name, sub);
  req.body = body;
  req.contentType = patchContentType(type);
  appendWriteQuery(w, req.query);
  return decodeResponse<T>(c.send(req));
}

// DELETE; the response body (the object or a Status) is not decoded.
template <class T>
Status remove(RestClient& c, const std::string& ns, const std::string& name, const DeleteOptions& o = {}) {
  Request req;
  req.method = "DELETE";
  req.path = pathFor<T>(ns, name);
  req.body = o.toJson();
  auto r = c.send(req);
  return r.status();
}

template <class T>
Status removeCollection(RestClient& c, const std::string& ns, const ListOptions& lo, const DeleteOptions& o = {}) {
  Request req;
  req.method = "DELETE";
  req.path = pathFor<T>(ns);
  appendListQuery(lo, req.query);
  req.body = o.toJson();
  return c.send(req).status();
}

// ---- Metadata-only access (PartialObjectMetadata), by resource, for resources known only at run time.

struct GroupVersionResource {
  std::string group, version, resource;
  bool operator==(const GroupVersionResource&) const = default;
  std::string toString() const { return (group.empty() ? "" : group + "/") + version + ", Resource=" + resource; }
};

// client-go's metadata client asks for protobuf first whatever the content type (metadata.ConfigFor).
inline constexpr const char* kAcceptPartialObjectMetadataList =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
inline constexpr const char* kAcceptPartialObjectMetadata =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

// Full objects of a run-time resource as DynamicObject (typed metadata, the rest kept as raw JSON).
Result<api::meta::v1::PartialObjectMetadata> getDynamic(RestClient& c, const GroupVersionResource& gvr,
                                                        const std::string& ns, const std::string& name);
Result<api::meta::v1::PartialObjectMetadataList> listDynamicPage(RestClient& c, const GroupVersionResource& gvr,
                                                                 const std::string& ns, const ListOptions& o);

// One page of a metadata-only list.
Result<api::meta::v1::PartialObjectMetadataList> listMetadataPage(RestClient& c, const GroupVersionResource& gvr,
                                                                  const std::string& ns, const ListOptions& o);
Result<ListInfo> listMetadataPageStreaming(RestClient& c, const GroupVersionResource& gvr, const std::string& ns,
                                           const ListOptions& o,
                                           const std::function<void(api::meta::v1::PartialObjectMetadata&&)>& onItem);
// DELETE of one object / a collection of a run-time resource (the metadata client's Delete/DeleteCollection).
Status removeDynamic(RestClient& c, const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                     const DeleteOptions& o = {});
Status removeCollectionDynamic(RestClient& c, const GroupVersionResource& gvr, const std::string& ns,
                               const ListOptions& lo, const DeleteOptions& o = {});
Status watchMetadata(RestClient& c, const GroupVersionResource& gvr, const std::string& ns, ListOptions o,
                     const std::function<bool(WatchEvent<api::meta::v1::PartialObjectMetadata>&)>& onEvent,
                     std::stop_token stop = {});

}  // namespace kcm::client
