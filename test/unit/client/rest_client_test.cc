#include "client/rest_client.h"

#include <gtest/gtest.h>

#include "api/gen/coordination_v1_codec.h"
#include "api/gen/coordination_v1_json.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/core_v1_json.h"
#include "client/typed_client.h"

namespace kcm::client {
namespace {

TEST(ApiErrors, MapFromStatusReasonAndHttpCode) {
  struct Case {
    int code;
    const char* body;
    StatusCode want;
  } cases[] = {
      {404, R"({"kind":"Status","reason":"NotFound","message":"pods \"x\" not found","code":404})", StatusCode::kNotFound},
      {409, R"({"kind":"Status","reason":"AlreadyExists","message":"exists","code":409})", StatusCode::kAlreadyExists},
      {409, R"({"kind":"Status","reason":"Conflict","message":"the object has been modified","code":409})", StatusCode::kConflict},
      {410, R"({"kind":"Status","reason":"Expired","message":"too old resource version","code":410})", StatusCode::kGone},
      {422, R"({"kind":"Status","reason":"Invalid","message":"bad","code":422})", StatusCode::kInvalid},
      {429, "", StatusCode::kTooManyRequests},
      {401, "", StatusCode::kUnauthorized},
      {403, R"({"kind":"Status","reason":"Forbidden","message":"forbidden: x","code":403})", StatusCode::kForbidden},
      {500, "oops", StatusCode::kInternal},
      {503, "", StatusCode::kUnavailable},
      {504, "", StatusCode::kTimeout},
  };
  for (const auto& c : cases) {
    Status s = statusFromResponse("GET", "/api/v1/pods", c.code, c.body);
    EXPECT_EQ(s.code(), c.want) << c.code << " " << c.body;
    EXPECT_FALSE(s.message().empty());
  }
  EXPECT_EQ(statusFromResponse("GET", "/x", 404, R"({"kind":"Status","message":"pods \"x\" not found"})").message(),
            "pods \"x\" not found");
  EXPECT_NE(statusFromResponse("GET", "/x", 500, "boom").message().find("boom"), std::string::npos);
}

// A reply without a Status reads as client-go's NewGenericServerResponse words it, naming the resource the path
// addresses (the aggregator's plain-text 404 for a metrics API that is gone, an empty 503).
TEST(ApiErrors, RepliesWithoutAStatusAsClientGoWordsThem) {
  Status gone = statusFromResponse("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods?labelSelector=app%3Dweb",
                                   404, "404 page not found\n");
  EXPECT_EQ(gone.code(), StatusCode::kNotFound);
  EXPECT_EQ(gone.message(), "the server could not find the requested resource (get pods.metrics.k8s.io)");
  EXPECT_EQ(statusFromResponse("GET", "/api/v1/namespaces/ns/pods/p", 503, "").message(),
            "the server is currently unable to handle the request (get pods p)");
  EXPECT_EQ(statusFromResponse("POST", "/api/v1/namespaces/ns/configmaps", 500, " boom ").message(),
            "an error on the server (\"boom\") has prevented the request from succeeding (post configmaps)");
  Status exists = statusFromResponse("POST", "/api/v1/namespaces", 409, "{}");
  EXPECT_EQ(exists.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(exists.message(), "the server reported a conflict (post namespaces)");
  EXPECT_EQ(statusFromResponse("GET", "/api/v1/namespaces/kube-system", 403, "denied").message(),
            "denied (get namespaces kube-system)");
  EXPECT_EQ(statusFromResponse("PUT", "/api/v1/namespaces/gone/finalize", 404, "").message(),
            "the server could not find the requested resource (put namespaces gone)");
  EXPECT_EQ(statusFromResponse("GET", "/healthz", 418, "").message(),
            "the server responded with the status code 418 but did not return more information");
}

TEST(RestClient, RejectsBadTlsMaterialNamingTheSource) {
  RestConfig cfg;
  cfg.host = "https://127.0.0.1:6443";
  cfg.source = "kubeconfig /x";
  cfg.caData = "not a pem";
  auto c = RestClient::create(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("kubeconfig /x"), std::string::npos);
  cfg.caData.clear();
  cfg.certData = "nope";
  cfg.keyData = "nope";
  EXPECT_FALSE(RestClient::create(cfg).ok());
  cfg.certData.clear();
  cfg.keyData.clear();
  cfg.host = "https://:0";
  EXPECT_FALSE(RestClient::create(cfg).ok());
}

TEST(RestClient, UnreachableServerIsUnavailableNotAHang) {
  RestConfig cfg;
  cfg.host = "http://127.0.0.1:1";  // nothing listens on port 1
  auto c = RestClient::create(cfg);
  ASSERT_TRUE(c.ok());
  Request req;
  req.path = "/healthz";
  auto r = (*c)->send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().toString();
}

TEST(TypedClient, PathsAndQueries) {
  EXPECT_EQ(resourcePath("", "v1", "pods", "ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(resourcePath("apps", "v1", "deployments", "", ""), "/apis/apps/v1/deployments");
  EXPECT_EQ(pathFor<api::core::v1::Node>("ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(pathFor<api::coordination::v1::Lease>("kube-system", "kube-controller-manager"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager");
  DeleteOptions d;
  d.propagationPolicy = "Foreground";
  d.preconditionUID = "u";
  EXPECT_EQ(d.toJson(),
            R"({"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Foreground","preconditions":{"uid":"u"}})");
  EXPECT_EQ(urlEncode("app in (a,b)"), "app%20in%20%28a%2Cb%29");
}

TEST(TypedClient, DecodesWatchEventsInAnyFieldOrder) {
  WatchEvent<api::core::v1::Pod> ev;
  ASSERT_TRUE(decodeWatchEvent(R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})", ev).ok());
  EXPECT_EQ(ev.type, "ADDED");
  EXPECT_EQ(ev.object.metadata.name, "a");
  WatchEvent<api::core::v1::Pod> ev2;
  ASSERT_TRUE(decodeWatchEvent(R"({"object":{"metadata":{"name":"b"}},"type":"DELETED"})", ev2).ok());
  EXPECT_EQ(ev2.type, "DELETED");
  EXPECT_EQ(ev2.object.metadata.name, "b");
  WatchEvent<api::core::v1::Pod> err;
  ASSERT_TRUE(decodeWatchEvent(
      R"j({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 1 (5)"}})j",
      err).ok());
  EXPECT_EQ(err.type, "ERROR");
  EXPECT_EQ(err.status.code, 410);
  EXPECT_EQ(err.status.reason, "Expired");
  WatchEvent<api::core::v1::Pod> bad;
  EXPECT_FALSE(decodeWatchEvent("{not json", bad).ok());
}

}  // namespace
}  // namespace kcm::client
