#include "api/support/codec.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/gen/apps_v1_codec.h"
#include "api/gen/batch_v1_codec.h"
#include "api/gen/certificates_v1_codec.h"
#include "api/gen/coordination_v1_codec.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/discovery_v1_codec.h"

namespace kcm::api {
namespace {

std::string readTestdata(const std::string& name) {
  std::ifstream f(std::string(KCM_TESTDATA_DIR) + "/api/testdata/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

template <class T>
void expectRoundTrip(const std::string& file) {
  std::string in = readTestdata(file);
  ASSERT_FALSE(in.empty()) << file;
  T obj;
  Status st = decodeJson(in, obj);
  ASSERT_TRUE(st.ok()) << file << ": " << st.toString();
  std::string out = encodeJson(obj);
  EXPECT_EQ(nlohmann::json::parse(in), nlohmann::json::parse(out)) << file << "\nencoded: " << out;
}

TEST(Codec, PodRoundTripsWithEveryFieldAndUnknownFields) { expectRoundTrip<core::v1::Pod>("pod.json"); }
TEST(Codec, DeploymentRoundTrips) { expectRoundTrip<apps::v1::Deployment>("deployment.json"); }
TEST(Codec, JobRoundTrips) { expectRoundTrip<batch::v1::Job>("job.json"); }
TEST(Codec, LeaseRoundTripsWithMicroTime) { expectRoundTrip<coordination::v1::Lease>("lease.json"); }
TEST(Codec, EndpointSliceRoundTrips) { expectRoundTrip<discovery::v1::EndpointSlice>("endpointslice.json"); }
TEST(Codec, CSRRoundTripsWithBytes) { expectRoundTrip<certificates::v1::CertificateSigningRequest>("csr.json"); }

TEST(Codec, DecodesTypedFields) {
  core::v1::Pod pod;
  ASSERT_TRUE(decodeJson(readTestdata("pod.json"), pod).ok());
  EXPECT_EQ(pod.metadata.name, "web-1");
  EXPECT_EQ(pod.metadata.namespace_, "default");
  ASSERT_TRUE(pod.metadata.deletionGracePeriodSeconds.has_value());
  EXPECT_EQ(*pod.metadata.deletionGracePeriodSeconds, 0);  // pointer field: zero differs from unset
  EXPECT_EQ(pod.metadata.creationTimestamp.rfc3339(), "2026-11-29T17:58:16Z");
  ASSERT_EQ(pod.spec.containers.size(), 1u);  // Go's Pod.Spec is a struct, not a pointer: always present
  const auto& c = pod.spec.containers[0];
  EXPECT_EQ(c.resources.limits.at("cpu").milliValue(), 500);
  EXPECT_EQ(c.resources.limits.at("memory").value(), 128 * 1024 * 1024);
  EXPECT_EQ(c.resources.requests.at("ephemeral-storage").value(), 1000);
  ASSERT_TRUE(c.readinessProbe && c.readinessProbe->tcpSocket);
  EXPECT_TRUE(c.readinessProbe->tcpSocket->port.isString);
  EXPECT_EQ(c.readinessProbe->tcpSocket->port.strVal, "http");
  EXPECT_EQ(c.livenessProbe->httpGet->port.intVal, 8080);
  EXPECT_FALSE(pod.status.unknownFields.empty());
}

// As metav1.Time's UnmarshalJSON: null is the zero time (a *Time stays unset), "" is not a time at all.
TEST(Codec, EmptyTimeStringIsAnErrorAndNullIsUnset) {
  core::v1::Pod pod;
  EXPECT_FALSE(decodeJson(R"({"metadata":{"deletionTimestamp":""}})", pod).ok());
  EXPECT_FALSE(decodeJson(R"({"metadata":{"creationTimestamp":""}})", pod).ok());
  coordination::v1::Lease lease;
  EXPECT_FALSE(decodeJson(R"({"spec":{"renewTime":""}})", lease).ok());
  ASSERT_TRUE(decodeJson(R"({"metadata":{"deletionTimestamp":null,"creationTimestamp":null}})", pod).ok());
  EXPECT_FALSE(pod.metadata.deletionTimestamp.has_value());
  EXPECT_TRUE(pod.metadata.creationTimestamp.isZero());
}

TEST(Codec, BytesAreBase64) {
  certificates::v1::CertificateSigningRequest csr;
  ASSERT_TRUE(decodeJson(readTestdata("csr.json"), csr).ok());
  EXPECT_EQ(csr.status.certificate, std::string("\x00\x01\x02\x03\x04", 5));
  EXPECT_EQ(csr.spec.request.substr(0, 11), "-----BEGIN ");
}

TEST(Codec, NullsAreUnset) {
  core::v1::Pod pod;
  ASSERT_TRUE(decodeJson(R"({"metadata":{"name":"x","labels":null,"deletionTimestamp":null},"spec":null})", pod).ok());
  EXPECT_EQ(pod.metadata.name, "x");
  EXPECT_TRUE(pod.metadata.labels.empty());
  EXPECT_FALSE(pod.metadata.deletionTimestamp.has_value());
  EXPECT_TRUE(pod.spec.containers.empty());
}

TEST(Codec, EncodingOmitsUnsetOptionalsLikeKubectl) {
  core::v1::ConfigMap cm;
  cm.apiVersion = "v1";
  cm.kind = "ConfigMap";
  cm.metadata.name = "kube-root-ca.crt";
  cm.data["ca.crt"] = "PEM";
  EXPECT_EQ(encodeJson(cm), R"({"apiVersion":"v1","data":{"ca.crt":"PEM"},"kind":"ConfigMap","metadata":{"name":"kube-root-ca.crt"}})");
}

TEST(Codec, MalformedInputIsAnErrorNotACrash) {
  core::v1::Pod pod;
  for (const char* bad : {"", "{", "[]", R"({"metadata":{"name":5}})", R"({"spec":{"containers":{}}})",
                          R"({"metadata":{"creationTimestamp":"yesterday"}})",
                          R"({"spec":{"overhead":{"cpu":"lots"}}})"}) {
    Status st = decodeJson(bad, pod);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
  }
}

// Unknown fields nested deeper than anything real (the apiserver's decoder stops at 10,000 levels): kept verbatim,
// raw, at any depth; no recursion, so no stack overflow.
TEST(Codec, DeeplyNestedUnknownFieldsAreKeptVerbatimNotACrash) {
  for (int depth : {500, 5000, 1000000}) {
    const std::string deep = std::string(depth, '[') + "1" + std::string(depth, ']');
    core::v1::Pod pod;
    ASSERT_TRUE(decodeJson(R"({"metadata":{"name":"deep"},"spec":{"x-unknown":)" + deep + "}}", pod).ok()) << depth;
    EXPECT_EQ(pod.metadata.name, "deep");
    EXPECT_NE(encodeJson(pod).find(R"("x-unknown":)" + deep), std::string::npos) << depth;
  }
}

}  // namespace
}  // namespace kcm::api
