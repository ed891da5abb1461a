#include "client/typed_client.h"

#include "api/support/json_writer.h"

namespace kcm::client {

std::string resourcePath(const std::string& group, const std::string& version, const std::string& resource,
                         const std::string& ns, const std::string& name, const std::string& subresource) {
  std::string p = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (!ns.empty()) p += "/namespaces/" + urlEncode(ns);
  p += "/" + resource;
  if (!name.empty()) p += "/" + urlEncode(name);
  if (!subresource.empty()) p += "/" + subresource;
  return p;
}

void appendListQuery(const ListOptions& o, std::vector<std::pair<std::string, std::string>>& q) {
  if (!o.labelSelector.empty()) q.emplace_back("labelSelector", o.labelSelector);
  if (!o.fieldSelector.empty()) q.emplace_back("fieldSelector", o.fieldSelector);
  if (!o.resourceVersion.empty()) q.emplace_back("resourceVersion", o.resourceVersion);
  if (!o.resourceVersionMatch.empty()) q.emplace_back("resourceVersionMatch", o.resourceVersionMatch);
  if (o.limit > 0) q.emplace_back("limit", std::to_string(o.limit));
  if (!o.continueToken.empty()) q.emplace_back("continue", o.continueToken);
  if (o.timeoutSeconds > 0) q.emplace_back("timeoutSeconds", std::to_string(o.timeoutSeconds));
  if (o.allowWatchBookmarks) q.emplace_back("allowWatchBookmarks", "true");
  if (o.sendInitialEvents) q.emplace_back("sendInitialEvents", "true");
}

void appendWriteQuery(const WriteOptions& o, std::vector<std::pair<std::string, std::string>>& q) {
  if (!o.fieldManager.empty()) q.emplace_back("fieldManager", o.fieldManager);
  if (o.force) q.emplace_back("force", "true");
  for (const auto& d : o.dryRun) q.emplace_back("dryRun", d);
}

const char* patchContentType(PatchType t) {
  switch (t) {
    case PatchType::kMerge: return "application/merge-patch+json";
    case PatchType::kStrategicMerge: return "application/strategic-merge-patch+json";
    case PatchType::kJsonPatch: return "application/json-patch+json";
    case PatchType::kApply: return "application/apply-patch+yaml";
  }
  return "application/json";
}

std::string DeleteOptions::toJson() const {
  std::string out;
  api::JsonWriter w(out);
  w.beginObject();
  w.key("apiVersion");
  w.value("v1");
  w.key("kind");
  w.value("DeleteOptions");
  if (gracePeriodSeconds) {
    w.key("gracePeriodSeconds");
    w.value(*gracePeriodSeconds);
  }
  if (propagationPolicy) {
    w.key("propagationPolicy");
    w.value(*propagationPolicy);
  }
  if (preconditionUID || preconditionResourceVersion) {
    w.key("preconditions");
    w.beginObject();
    if (preconditionResourceVersion) {
      w.key("resourceVersion");
      w.value(*preconditionResourceVersion);
    }
    if (preconditionUID) {
      w.key("uid");
      w.value(*preconditionUID);
    }
    w.endObject();
  }
  if (!dryRun.empty()) {
    w.key("dryRun");
    w.beginArray();
    for (const auto& d : dryRun) w.value(d);
    w.endArray();
  }
  w.endObject();
  return out;
}

Result<api::meta::v1::PartialObjectMetadata> getDynamic(RestClient& c, const GroupVersionResource& gvr,
                                                        const std::string& ns, const std::string& name) {
  Request req;
  req.path = resourcePath(gvr.group, gvr.version, gvr.resource, ns, name);
  return decodeResponse<api::meta::v1::PartialObjectMetadata>(c.send(req));
}

Result<api::meta::v1::PartialObjectMetadataList> listDynamicPage(RestClient& c, const GroupVersionResource& gvr,
                                                                 const std::string& ns, const ListOptions& o) {
  Request req;
  req.path = resourcePath(gvr.group, gvr.version, gvr.resource, ns);
  appendListQuery(o, req.query);
  return decodeResponse<api::meta::v1::PartialObjectMetadataList>(c.send(req));
}

Result<api::meta::v1::PartialObjectMetadataList> listMetadataPage(RestClient& c, const GroupVersionResource& gvr,
                                                                  const std::string& ns, const ListOptions& o) {
  Request req;
  req.path = resourcePath(gvr.group, gvr.version, gvr.resource, ns);
  req.accept = kAcceptPartialObjectMetadataList;
  appendListQuery(o, req.query);
  return decodeResponse<api::meta::v1::PartialObjectMetadataList>(c.send(req));
}

Result<ListInfo> listMetadataPageStreaming(
    RestClient& c, const GroupVersionResource& gvr, const std::string& ns, const ListOptions& o,
    const std::function<void(api::meta::v1::PartialObjectMetadata&&)>& onItem) {
  Request req;
  req.path = resourcePath(gvr.group, gvr.version, gvr.resource, ns);
  req.accept = kAcceptPartialObjectMetadataList;
  appendListQuery(o, req.query);
  auto r = c.send(req);
  if (!r.ok()) return r.status();
  return decodeListStreaming<api::meta::v1::PartialObjectMetadata>(r->body, onItem);
}

Status removeDynamic(RestClient& c, const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                     const DeleteOptions& o) {
  Request req;
  req.method = "DELETE";
  req.path = resourcePath(gvr.group, gvr.version, gvr.resource, ns, name);
  req.body = o.toJson();
  return c.send(req).status();
}

Status removeCollectionDynamic(RestClient& c, const GroupVersionResource& gvr, const std::string& ns,
                               const ListOptions& lo, const DeleteOptions& o) {
  Request req;
  req.method = "DELETE";
  req.path = resourcePath(gvr.group, gvr.version, gvr.resource, ns);
  appendListQuery(lo, req.query);
  req.body = o.toJson();
  return c.send(req).status();
}

Result<std::unique_ptr<StreamHandle>> watchRequestAsync(RestClient& c, Request req, const ListOptions& o,
                                                        OnLine onLine, std::function<void(Status)> onDone,
                                                        std::stop_token stop) {
  appendListQuery(o, req.query);
  req.query.emplace_back("watch", "true");
  req.timeout = std::chrono::seconds(o.timeoutSeconds > 0 ? o.timeoutSeconds + 30 : 330);
  return c.streamAsync(req, std::move(onLine), std::move(onDone), stop);
}

Status watchMetadata(RestClient& c, const GroupVersionResource& gvr, const std::string& ns, ListOptions o,
                     const std::function<bool(WatchEvent<api::meta::v1::PartialObjectMetadata>&)>& onEvent,
                     std::stop_token stop) {
  Request req;
  req.path = resourcePath(gvr.group, gvr.version, gvr.resource, ns);
  req.accept = kAcceptPartialObjectMetadata;
  return watchRequest<api::meta::v1::PartialObjectMetadata>(c, std::move(req), o, onEvent, stop);
}

}  // namespace kcm::client
