// The protobuf decoders (api/gen/*_proto.cc behind the generated fromJson/decodeListItems/decodeWatchEvent) on
// hand-built wire data: every kind of field, the envelope, lists, watch frames, and malformed input.
#include <gtest/gtest.h>

#include "api/gen/core_v1_json.h"
#include "api/gen/meta_v1_json.h"
#include "api/support/proto.h"
#include "proto_writer.h"

namespace kcm::api {
namespace {

using prototest::Msg;
using core::v1::Pod;

Msg podMeta(const std::string& name) {
  return Msg()
      .str(1, name)
      .str(3, "default")
      .str(5, "uid-" + name)
      .str(6, "42")
      .varint(7, 3)
      .msg(8, Msg().varint(1, 1767322800).varint(2, 500000000))  // creationTimestamp, nanos dropped
      .entry(11, "app", "web")
      .entry(11, "tier", "front")
      .entry(12, "note", "x")
      .msg(13, Msg().str(5, "apps/v1").str(1, "ReplicaSet").str(3, "rs").str(4, "u1").varint(6, 1).varint(7, 1))
      .str(14, "example.com/hold");
}

Msg podMessage(const std::string& name) {
  Msg container = Msg()
                      .str(1, "c")
                      .str(2, "registry.k8s.io/pause:3.10")
                      .msg(6, Msg().str(1, "http").varint(3, 8080))
                      .msg(8, Msg().entry(1, "cpu", Msg().str(1, "1500m")).entry(2, "memory", Msg().str(1, "64Mi")));
  Msg spec = Msg()
                 // Volume {name, volumeSource {emptyDir {sizeLimit}}} and one with a configMap (an embedded
                 // LocalObjectReference carries its name).
                 .msg(1, Msg().str(1, "tmp").msg(2, Msg().msg(2, Msg().msg(2, Msg().str(1, "1Gi")))))
                 .msg(1, Msg().str(1, "cfg").msg(2, Msg().msg(19, Msg().msg(1, Msg().str(1, "cm")).varint(3, 420))))
                 .msg(2, container)
                 .varint(4, 0)
                 .str(10, "node-1")
                 .msg(14, Msg().str(4, std::string("\x01\x02\x96\x01", 4)))  // packed supplementalGroups 1, 2, 150
                 .msg(22, Msg().str(1, "k").str(2, "Exists").varint(5, static_cast<uint64_t>(-30)));
  Msg status = Msg()
                   .str(1, "Running")
                   .msg(2, Msg().str(1, "Ready").str(2, "True").msg(4, Msg()))  // zero lastTransitionTime
                   .str(6, "10.0.0.7")
                   .msg(7, Msg().varint(1, 1767322860));
  return Msg().msg(1, podMeta(name)).msg(2, spec).msg(3, status);
}

TEST(Proto, DecodesAnEnvelopedPodWithEveryKindOfField) {
  std::string body = Msg::envelope("v1", "Pod", podMessage("p"));
  ASSERT_TRUE(proto::isEnvelope(body));
  Pod p;
  ASSERT_TRUE(core::v1::fromJson(body, p).ok());
  EXPECT_EQ(p.apiVersion, "v1");
  EXPECT_EQ(p.kind, "Pod");
  EXPECT_EQ(p.metadata.name, "p");
  EXPECT_EQ(p.metadata.namespace_, "default");
  EXPECT_EQ(p.metadata.generation, 3);
  EXPECT_EQ(p.metadata.creationTimestamp.unixSeconds, 1767322800);
  EXPECT_FALSE(p.metadata.deletionTimestamp.has_value());
  ASSERT_EQ(p.metadata.labels.size(), 2u);
  EXPECT_EQ(p.metadata.labels.at("tier"), "front");
  EXPECT_EQ(p.metadata.annotations.at("note"), "x");
  ASSERT_EQ(p.metadata.ownerReferences.size(), 1u);
  EXPECT_EQ(p.metadata.ownerReferences[0].kind, "ReplicaSet");
  EXPECT_EQ(p.metadata.ownerReferences[0].apiVersion, "apps/v1");
  EXPECT_EQ(p.metadata.ownerReferences[0].controller, std::optional<bool>(true));
  EXPECT_EQ(p.metadata.finalizers, std::vector<String>{"example.com/hold"});
  const auto& s = p.spec;
  ASSERT_EQ(s.volumes.size(), 2u);
  ASSERT_TRUE(s.volumes[0].emptyDir.has_value());
  ASSERT_TRUE(s.volumes[0].emptyDir->sizeLimit.has_value());
  EXPECT_EQ(s.volumes[0].emptyDir->sizeLimit->str(), "1Gi");
  ASSERT_TRUE(s.volumes[1].configMap.has_value());
  EXPECT_EQ(s.volumes[1].configMap->name, "cm");
  EXPECT_EQ(s.volumes[1].configMap->defaultMode, std::optional<int32_t>(420));
  ASSERT_EQ(s.containers.size(), 1u);
  EXPECT_EQ(s.containers[0].ports[0].containerPort, 8080);
  EXPECT_EQ(s.containers[0].resources.limits.at("cpu").milliValue(), 1500);
  EXPECT_EQ(s.containers[0].resources.requests.at("memory").value(), 64 * 1024 * 1024);
  EXPECT_EQ(s.terminationGracePeriodSeconds, std::optional<int64_t>(0));  // present zero stays set
  EXPECT_EQ(s.nodeName, "node-1");
  ASSERT_TRUE(s.securityContext.has_value());
  EXPECT_EQ(s.securityContext->supplementalGroups, (std::vector<int64_t>{1, 2, 150}));
  ASSERT_EQ(s.tolerations.size(), 1u);
  EXPECT_EQ(s.tolerations[0].tolerationSeconds, std::optional<int64_t>(-30));
  EXPECT_EQ(p.status.phase, "Running");
  EXPECT_EQ(p.status.podIP, "10.0.0.7");
  ASSERT_EQ(p.status.conditions.size(), 1u);
  EXPECT_TRUE(p.status.conditions[0].lastTransitionTime.isZero());
  ASSERT_TRUE(p.status.startTime.has_value());
  EXPECT_EQ(p.status.startTime->unixSeconds, 1767322860);
  // Its JSON is what the same pod decoded from JSON gives.
  Pod again;
  ASSERT_TRUE(core::v1::fromJson(core::v1::toJson(p), again).ok());
  EXPECT_EQ(core::v1::toJson(again), core::v1::toJson(p));
}

TEST(Proto, UnpackedRepeatedScalarsAndIntOrStringBothWays) {
  Msg sc = Msg().varint(4, 7).varint(4, 8);  // supplementalGroups unpacked
  Msg spec = Msg().msg(14, sc);
  Pod p;
  ASSERT_TRUE(core::v1::fromJson(Msg::envelope("v1", "Pod", Msg().msg(2, spec)), p).ok());
  EXPECT_EQ(p.spec.securityContext->supplementalGroups, (std::vector<int64_t>{7, 8}));

  core::v1::Service svc;
  Msg ports = Msg()
                  .msg(1, Msg().str(1, "a").varint(3, 80).msg(4, Msg().varint(1, 1).str(3, "http")))
                  .msg(1, Msg().str(1, "b").varint(3, 90).msg(4, Msg().varint(1, 0).varint(2, 9090)));
  ASSERT_TRUE(core::v1::fromJson(Msg::envelope("v1", "Service", Msg().msg(2, ports)), svc).ok());
  ASSERT_EQ(svc.spec.ports.size(), 2u);
  EXPECT_TRUE(svc.spec.ports[0].targetPort.isString);
  EXPECT_EQ(svc.spec.ports[0].targetPort.strVal, "http");
  EXPECT_FALSE(svc.spec.ports[1].targetPort.isString);
  EXPECT_EQ(svc.spec.ports[1].targetPort.intVal, 9090);
}

TEST(Proto, ListItemsStreamWithTheListMetadata) {
  Msg list = Msg().msg(1, Msg().str(2, "777").str(3, "next-page")).msg(2, podMessage("a")).msg(2, podMessage("b"));
  std::vector<std::string> names;
  ListInfo info;
  Status s = core::v1::decodeListItems(Msg::envelope("v1", "PodList", list), [&](Pod&& p) {
    names.push_back(std::string(p.metadata.name.view()));
    EXPECT_TRUE(p.kind.empty());  // list items carry no TypeMeta, as in JSON lists
  }, info);
  ASSERT_TRUE(s.ok()) << s.toString();
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(info.resourceVersion, "777");
  EXPECT_EQ(info.continueToken, "next-page");
}

TEST(Proto, WatchFramesAndErrorEvents) {
  std::string frame = Msg::watchFrame("MODIFIED", Msg::envelope("v1", "Pod", podMessage("w")), false);
  ASSERT_TRUE(proto::isWatchFrame(frame));
  std::string type;
  Pod p;
  meta::v1::Status st;
  ASSERT_TRUE(core::v1::decodeWatchEvent(frame, type, p, st).ok());
  EXPECT_EQ(type, "MODIFIED");
  EXPECT_EQ(p.metadata.name, "w");
  EXPECT_EQ(p.kind, "Pod");

  Msg status = Msg().str(2, "Failure").str(3, "too old resource version: 1 (5)").str(4, "Expired").varint(6, 410);
  std::string err = Msg::watchFrame("ERROR", Msg::envelope("v1", "Status", status), false);
  ASSERT_TRUE(core::v1::decodeWatchEvent(err, type, p, st).ok());
  EXPECT_EQ(type, "ERROR");
  EXPECT_EQ(st.code, 410);
  EXPECT_EQ(st.reason, "Expired");
}

TEST(Proto, MalformedInputIsAnErrorNotACrash) {
  std::string good = Msg::envelope("v1", "Pod", podMessage("p"));
  Pod p;
  // Every truncation of a valid message: an error (or a shorter valid message), never a crash or a hang.
  int errors = 0;
  for (size_t n = 4; n < good.size(); ++n)
    if (!core::v1::fromJson(std::string_view(good).substr(0, n), p).ok()) ++errors;
  EXPECT_GT(errors, 0);
  // A string where a message belongs (nodeName is field 10, a string; securityContext 14 given as a varint).
  EXPECT_FALSE(core::v1::fromJson(Msg::envelope("v1", "Pod", Msg().msg(2, Msg().varint(14, 1))), p).ok());
  // A length running past the end.
  EXPECT_FALSE(core::v1::fromJson(std::string("k8s\0", 4) + "\x12\x7f" + "abc", p).ok());
  // A quantity Go would reject.
  Msg badQty = Msg().msg(2, Msg().msg(2, Msg().str(1, "c").msg(8, Msg().entry(1, "cpu", Msg().str(1, "1.5.5")))));
  EXPECT_FALSE(core::v1::fromJson(Msg::envelope("v1", "Pod", badQty), p).ok());
  // Unknown fields are skipped.
  EXPECT_TRUE(core::v1::fromJson(Msg::envelope("v1", "Pod", Msg().varint(99, 5).str(98, "x").msg(1, podMeta("u"))), p).ok());
  EXPECT_EQ(p.metadata.name, "u");
}

// Bytes that are not UTF-8 become U+FFFD, one per byte, wherever text is read (the envelope's kind, strings, map
// keys and values, IntOrString): the object encodes to the JSON Go's encoder would write and decodes back equal.
TEST(Proto, InvalidUtf8BecomesReplacementCharacters) {
  const std::string bad = "a\xd4z\xc0\x80";  // a lone lead byte, an overlong NUL
  Msg meta = Msg().str(1, bad).entry(11, bad, bad);
  Msg spec = Msg().msg(2, Msg().str(1, "c").msg(6, Msg().str(1, bad)))
                 .msg(2, Msg().str(1, "d").msg(11, Msg().msg(1, Msg().msg(2, Msg().msg(2, Msg().varint(1, 1).str(3, bad))))));
  Pod p;
  ASSERT_TRUE(core::v1::fromJson(Msg::envelope("v1", "P\xff" "d", Msg().msg(1, meta).msg(2, spec)), p).ok());
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(p.kind, "P" + fffd + "d");
  EXPECT_EQ(p.metadata.name, "a" + fffd + "z" + fffd + fffd);
  ASSERT_EQ(p.metadata.labels.size(), 1u);
  EXPECT_EQ(p.metadata.labels.begin()->first, p.metadata.name);
  EXPECT_EQ(p.metadata.labels.begin()->second, p.metadata.name);
  EXPECT_EQ(p.spec.containers.at(0).ports.at(0).name, p.metadata.name);
  ASSERT_TRUE(p.spec.containers.at(1).readinessProbe && p.spec.containers.at(1).readinessProbe->httpGet);
  EXPECT_EQ(p.spec.containers.at(1).readinessProbe->httpGet->port.strVal, std::string(p.metadata.name.view()));
  const std::string once = core::v1::toJson(p);
  Pod again;
  ASSERT_TRUE(core::v1::fromJson(once, again).ok());
  EXPECT_EQ(core::v1::toJson(again), once);
}

// RawExtension and FieldsV1 bytes must hold one JSON value (kept compact, as Go's encoder writes them); other bytes
// fail the decode instead of reaching a request body we would write.
TEST(Proto, RawJsonMustBeOneJsonValue) {
  auto withFields = [](std::string_view raw) {
    Msg entry = Msg().str(1, "kcm").str(2, "Update").str(3, "v1").str(6, "FieldsV1").msg(7, Msg().str(1, raw));
    return Msg::envelope("v1", "Pod", Msg().msg(1, Msg().str(1, "p").msg(17, entry)));
  };
  Pod p;
  ASSERT_TRUE(core::v1::fromJson(withFields("{\"f:metadata\": {\"f:labels\": {}}}\n"), p).ok());
  ASSERT_EQ(p.metadata.managedFields.size(), 1u);
  EXPECT_EQ(p.metadata.managedFields[0].manager, "kcm");
  ASSERT_TRUE(p.metadata.managedFields[0].fieldsV1);
  EXPECT_EQ(p.metadata.managedFields[0].fieldsV1->json, "{\"f:metadata\":{\"f:labels\":{}}}");
  EXPECT_FALSE(core::v1::fromJson(withFields("{\"f:metadata\""), p).ok());
  EXPECT_FALSE(core::v1::fromJson(withFields("{} {}"), p).ok());
  EXPECT_FALSE(core::v1::fromJson(withFields("\"\xff\""), p).ok());
}

// An empty Time message is the zero time: a *Time holding it would encode as null and read back unset, so it is
// unset from the start; a set one is kept.
TEST(Proto, EmptyTimeMessageLeavesATimePointerUnset) {
  Pod p;
  ASSERT_TRUE(core::v1::fromJson(Msg::envelope("v1", "Pod", Msg().msg(1, Msg().str(1, "p").msg(9, Msg()))), p).ok());
  EXPECT_FALSE(p.metadata.deletionTimestamp.has_value());
  ASSERT_TRUE(core::v1::fromJson(
      Msg::envelope("v1", "Pod", Msg().msg(1, Msg().str(1, "p").msg(9, Msg().varint(1, 1767322800)))), p).ok());
  ASSERT_TRUE(p.metadata.deletionTimestamp.has_value());
  EXPECT_EQ(p.metadata.deletionTimestamp->rfc3339(), "2026-01-02T03:00:00Z");
}

// Likewise a FieldsV1 message without raw bytes (or with an empty raw field): Go's encoder writes that *FieldsV1 as
// null, which reads back unset, so it is unset from the start and the managed-fields entry encodes as it decodes.
TEST(Proto, EmptyFieldsV1MessageLeavesItUnset) {
  auto withFields = [](const Msg& fields) {
    Msg entry = Msg().str(1, "kcm").str(2, "Update").msg(7, fields);
    return Msg::envelope("v1", "Pod", Msg().msg(1, Msg().str(1, "p").msg(17, entry)));
  };
  for (const Msg& fields : {Msg(), Msg().str(1, ""), Msg().varint(4, 7)}) {
    Pod p;
    ASSERT_TRUE(core::v1::fromJson(withFields(fields), p).ok());
    ASSERT_EQ(p.metadata.managedFields.size(), 1u);
    EXPECT_FALSE(p.metadata.managedFields[0].fieldsV1.has_value());
    const std::string once = core::v1::toJson(p);
    EXPECT_EQ(once.find("fieldsV1"), std::string::npos) << once;
    Pod again;
    ASSERT_TRUE(core::v1::fromJson(once, again).ok());
    EXPECT_EQ(core::v1::toJson(again), once);
  }
  Pod p;
  ASSERT_TRUE(core::v1::fromJson(withFields(Msg().str(1, "{}")), p).ok());
  ASSERT_TRUE(p.metadata.managedFields.at(0).fieldsV1.has_value());
  EXPECT_EQ(p.metadata.managedFields[0].fieldsV1->json, "{}");
}

// A Go named slice is a message of its own on the wire (APIResource.verbs: `message Verbs {repeated items = 1}`).
TEST(Proto, NamedSliceWrapperMessage) {
  Msg res = Msg().str(1, "pods").varint(2, 1).str(3, "Pod").msg(4, Msg().str(1, "get").str(1, "list")).str(5, "po");
  meta::v1::APIResourceList l;
  ASSERT_TRUE(meta::v1::fromJson(Msg::envelope("v1", "APIResourceList", Msg().str(1, "v1").msg(2, res)), l).ok());
  ASSERT_EQ(l.resources.size(), 1u);
  EXPECT_EQ(l.resources[0].verbs, (std::vector<String>{"get", "list"}));
  EXPECT_EQ(l.resources[0].shortNames, std::vector<String>{"po"});
  EXPECT_TRUE(l.resources[0].namespaced);
}

TEST(Proto, ErrorStatusFromAProtobufAnswer) {
  Msg status = Msg().str(2, "Failure").str(3, "pods \"x\" not found").str(4, "NotFound").varint(6, 404);
  meta::v1::Status st;
  ASSERT_TRUE(meta::v1::fromJson(Msg::envelope("v1", "Status", status), st).ok());
  EXPECT_EQ(st.kind, "Status");
  EXPECT_EQ(st.message, "pods \"x\" not found");
}

}  // namespace
}  // namespace kcm::api
