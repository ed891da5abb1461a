#include "controllers/history/controller_history.h"

#include <algorithm>

#include "api/support/json_writer.h"
#include "controllers/util/controller_utils.h"

namespace kcm::controllers::history {

std::string controllerRevisionControllerIndexKey(const std::string& ns, const api::meta::v1::OwnerReference* ref) {
  if (!ref) return ns;
  return ns + "/" + ref->kind + "/" + ref->name + "/" + ref->uid;
}

std::vector<std::string> controllerRevisionControllerIndexKeys(const ControllerRevision& r) {
  return {controllerRevisionControllerIndexKey(r.metadata.namespace_, getControllerOf(r.metadata))};
}

std::string controllerRevisionName(const std::string& prefix, const std::string& hash) {
  return (prefix.size() > 223 ? prefix.substr(0, 223) : prefix) + "-" + hash;
}

std::string safeEncodeString(const std::string& s) {
  static constexpr std::string_view kAlphanums = "bcdfghjklmnpqrstvwxz2456789";
  std::string out = s;
  for (char& ch : out) ch = kAlphanums[static_cast<unsigned char>(ch) % kAlphanums.size()];
  return out;
}

std::string hashControllerRevision(const std::string& data, std::optional<int32_t> probe) {
  uint32_t h = 2166136261u;  // FNV-32: multiply, then xor
  auto feed = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h *= 16777619u;
      h ^= c;
    }
  };
  feed(data);
  if (probe) feed(std::to_string(*probe));
  return safeEncodeString(std::to_string(h));
}

void sortControllerRevisions(std::vector<RevisionPtr>& revisions) {
  std::stable_sort(revisions.begin(), revisions.end(), [](const RevisionPtr& a, const RevisionPtr& b) {
    if (a->revision != b->revision) return a->revision < b->revision;
    const auto ta = a->metadata.creationTimestamp.unixSeconds, tb = b->metadata.creationTimestamp.unixSeconds;
    if (ta != tb) return ta < tb;
    return a->metadata.name < b->metadata.name;
  });
}

bool equalRevision(const ControllerRevision& a, const ControllerRevision& b) { return a.data.json == b.data.json; }

std::vector<RevisionPtr> findEqualRevisions(const std::vector<RevisionPtr>& revisions,
                                            const ControllerRevision& needle) {
  std::vector<RevisionPtr> out;
  for (const auto& r : revisions)
    if (equalRevision(*r, needle)) out.push_back(r);
  return out;
}

int64_t maxRevision(const std::vector<RevisionPtr>& revisions) {
  int64_t m = 0;
  for (const auto& r : revisions) m = std::max(m, r->revision);
  return m;
}

namespace {
void writeGo(api::JsonWriter& w, const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object:
      w.beginObject();
      for (const auto& [k, v] : j.items()) {  // nlohmann::json keeps keys in a std::map: sorted bytewise
        w.key(k);
        writeGo(w, v);
      }
      w.endObject();
      break;
    case nlohmann::json::value_t::array:
      w.beginArray();
      for (const auto& v : j) writeGo(w, v);
      w.endArray();
      break;
    case nlohmann::json::value_t::string: w.value(j.get_ref<const std::string&>()); break;
    case nlohmann::json::value_t::boolean: w.value(j.get<bool>()); break;
    case nlohmann::json::value_t::number_integer: w.value(j.get<int64_t>()); break;
    case nlohmann::json::value_t::number_unsigned: w.value(static_cast<double>(j.get<uint64_t>())); break;
    case nlohmann::json::value_t::number_float: w.value(j.get<double>()); break;
    default: w.null();
  }
}
}  // namespace

std::string goMarshalSorted(const nlohmann::json& j) {
  std::string out;
  api::JsonWriter w(out);
  writeGo(w, j);
  return out;
}

Result<std::string> templateReplacePatch(const std::string& objectJson) {
  auto obj = nlohmann::json::parse(objectJson, nullptr, false);
  if (obj.is_discarded() || !obj.is_object()) return Status(StatusCode::kInternal, "cannot re-read encoded object");
  auto spec = obj.find("spec");
  if (spec == obj.end() || !spec->is_object()) return Status(StatusCode::kInternal, "encoded object has no spec");
  auto tmpl = spec->find("template");
  nlohmann::json t = (tmpl != spec->end() && tmpl->is_object()) ? *tmpl : nlohmann::json::object();
  t["$patch"] = "replace";
  nlohmann::json patch = {{"spec", {{"template", std::move(t)}}}};
  return goMarshalSorted(patch);
}

}  // namespace kcm::controllers::history
