#include "leaderelection/leader_migration.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace kcm::leaderelection {
namespace {

constexpr const char* kGroup = "controllermanager.config.k8s.io";
constexpr const char* kKind = "LeaderMigrationConfiguration";

Status invalid(std::string msg) { return Status(StatusCode::kInvalidArgument, std::move(msg)); }

// The JSON type a YAML 1.1 node has after sigs.k8s.io/yaml's conversion, as encoding/json names it in
// "cannot unmarshal <type> into ...": plain scalars may be bools, numbers or null; quoted ones are strings.
std::string jsonType(const YAML::Node& n) {
  if (n.IsNull()) return "null";
  if (n.IsSequence()) return "array";
  if (n.IsMap()) return "object";
  if (n.Tag() != "?") return "string";
  static const std::regex kBool("y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF");
  static const std::regex kNull("~|null|Null|NULL");
  static const std::regex kNumber(R"([-+]?(0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|0o?[0-7_]+|[0-9]*\.[0-9]+([eE][-+]?[0-9]+)?|\.inf|\.Inf|\.INF|\.nan|\.NaN|\.NAN))");
  const std::string& s = n.Scalar();
  if (std::regex_match(s, kBool)) return "bool";
  if (std::regex_match(s, kNull)) return "null";
  if (std::regex_match(s, kNumber)) return "number";
  return "string";
}

// A string field: null reads as "", anything but a string is encoding/json's type error.
Status stringField(const YAML::Node& n, const std::string& goStruct, const std::string& jsonPath, std::string& out) {
  std::string t = jsonType(n);
  if (t == "null") return Status::Ok();
  if (t != "string")
    return invalid("json: cannot unmarshal " + t + " into Go struct field " + goStruct + "." + jsonPath +
                   " of type string");
  out = n.Scalar();
  return Status::Ok();
}

}  // namespace

LeaderMigrationConfiguration DefaultLeaderMigrationConfiguration() {
  LeaderMigrationConfiguration c;
  c.leaderName = "cloud-provider-extraction-migration";
  c.resourceLock = kResourceLockLeases;
  c.controllerLeaders = {{"route-controller", "*"}, {"service-controller", "*"}, {"cloud-node-lifecycle-controller", "*"}};
  return c;
}

Result<LeaderMigrationConfiguration> DecodeLeaderMigrationConfiguration(const std::string& data) {
  YAML::Node root;
  try {
    root = YAML::Load(data);
  } catch (const YAML::Exception& e) {
    return invalid(std::string("yaml: ") + e.msg);
  }
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) return invalid("couldn't get version/kind; json parse error: json: cannot unmarshal " +
                                    jsonType(root) + " into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }");
  auto scalarOf = [&](const char* key) -> std::string {
    YAML::Node n = root[key];
    return n && n.IsScalar() ? n.Scalar() : "";
  };
  const std::string kind = scalarOf("kind"), apiVersion = scalarOf("apiVersion");
  if (kind.empty()) return invalid("Object 'Kind' is missing in '" + data + "'");
  if (apiVersion.empty()) return invalid("Object 'apiVersion' is missing in '" + data + "'");
  const std::string prefix = std::string(kGroup) + "/";
  const std::string version = apiVersion.rfind(prefix, 0) == 0 ? apiVersion.substr(prefix.size()) : "";
  const bool knownVersion = version == "v1alpha1" || version == "v1beta1" || version == "v1";
  if (!knownVersion || kind != kKind)
    return invalid("no kind \"" + kind + "\" is registered for version \"" + apiVersion +
                   "\" in scheme \"pkg/runtime/scheme.go:111\"");
  const bool hasResourceLock = version != "v1";

  LeaderMigrationConfiguration cfg;
  std::vector<std::string> unknown, duplicates;
  // A key given twice in one map is the YAML decoder's error, reported with its line before unknown fields.
  auto firstTime = [&duplicates](std::vector<std::string>& seen, const YAML::Node& key) {
    if (std::find(seen.begin(), seen.end(), key.Scalar()) != seen.end()) {
      duplicates.push_back("line " + std::to_string(key.Mark().line + 1) + ": key \"" + key.Scalar() +
                           "\" already set in map");
      return false;
    }
    seen.push_back(key.Scalar());
    return true;
  };
  std::vector<std::string> seenTop;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (!firstTime(seenTop, kv.first)) continue;
    const YAML::Node& v = kv.second;
    if (key == "kind" || key == "apiVersion") continue;
    if (key == "leaderName") {
      if (Status s = stringField(v, kKind, "leaderName", cfg.leaderName); !s.ok()) return s;
    } else if (key == "resourceLock" && hasResourceLock) {
      if (Status s = stringField(v, kKind, "resourceLock", cfg.resourceLock); !s.ok()) return s;
    } else if (key == "controllerLeaders") {
      if (v.IsNull()) continue;
      if (!v.IsSequence())
        return invalid("json: cannot unmarshal " + jsonType(v) + " into Go struct field " + kKind +
                       ".controllerLeaders of type []" + kGroup + "." + version + ".ControllerLeaderConfiguration");
      for (std::size_t i = 0; i < v.size(); ++i) {
        const YAML::Node& item = v[i];
        ControllerLeaderConfiguration leader;
        if (item.IsNull()) {
          cfg.controllerLeaders.push_back(leader);
          continue;
        }
        if (!item.IsMap())
          return invalid("json: cannot unmarshal " + jsonType(item) + " into Go struct field " + kKind +
                         ".controllerLeaders of type " + kGroup + "." + version + ".ControllerLeaderConfiguration");
        std::vector<std::string> seenItem;
        for (const auto& f : item) {
          const std::string fk = f.first.Scalar();
          if (!firstTime(seenItem, f.first)) continue;
          std::string* target = fk == "name" ? &leader.name : fk == "component" ? &leader.component : nullptr;
          if (!target) {
            unknown.push_back("controllerLeaders[" + std::to_string(i) + "]." + fk);
            continue;
          }
          if (Status s = stringField(f.second, "ControllerLeaderConfiguration", "controllerLeaders." + fk, *target);
              !s.ok())
            return s;
        }
        cfg.controllerLeaders.push_back(std::move(leader));
      }
    } else {
      unknown.push_back(key);
    }
  }
  if (!hasResourceLock) cfg.resourceLock = kResourceLockLeases;  // v1 always means leases
  if (!duplicates.empty() || !unknown.empty()) {
    std::vector<std::string> strict;
    if (!duplicates.empty()) {
      std::string yamlErr = "yaml: unmarshal errors:";
      for (const auto& d : duplicates) yamlErr += "\n  " + d;
      strict.push_back(yamlErr);
    }
    for (const auto& u : unknown) strict.push_back("unknown field \"" + u + "\"");
    std::string msg = "strict decoding error: ";
    for (std::size_t i = 0; i < strict.size(); ++i) msg += (i ? ", " : "") + strict[i];
    return invalid(msg);
  }
  return cfg;
}

Result<LeaderMigrationConfiguration> ReadLeaderMigrationConfiguration(const std::string& path) {
  auto unreadable = [&](const std::string& op, int err) {
    std::string reason = std::strerror(err);
    if (!reason.empty()) reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
    return invalid("unable to read leader migration configuration from \"" + path + "\": " + op + " " + path + ": " +
                   reason);
  };
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return unreadable("open", errno ? errno : ENOENT);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return unreadable("read", EISDIR);
  std::ostringstream data;
  data << in.rdbuf();
  return DecodeLeaderMigrationConfiguration(data.str());
}

std::vector<std::string> ValidateLeaderMigrationConfiguration(const LeaderMigrationConfiguration& config) {
  std::vector<std::string> errs;
  if (config.leaderName.empty())
    errs.push_back("leaderName: Required value: leaderName must be set for LeaderMigrationConfiguration");
  if (config.resourceLock != kResourceLockLeases && config.resourceLock != kResourceLockEndpoints)
    errs.push_back("resourceLock: Invalid value: \"" + config.resourceLock +
                   "\": resource Lock must be one of 'leases' or 'endpoints'");
  for (std::size_t i = 0; i < config.controllerLeaders.size(); ++i) {
    const auto& l = config.controllerLeaders[i];
    const std::string path = "controllerLeaders[" + std::to_string(i) + "]";
    if (l.component.empty()) errs.push_back(path + ".component: Required value");
    if (l.name.empty()) errs.push_back(path + ".name: Required value");
  }
  return errs;
}

Result<LeaderMigrationConfiguration> LoadLeaderMigrationConfiguration(const std::string& path) {
  if (path.empty()) return DefaultLeaderMigrationConfiguration();
  auto cfg = ReadLeaderMigrationConfiguration(path);
  if (!cfg.ok()) return cfg.status();
  auto errs = ValidateLeaderMigrationConfiguration(*cfg);
  if (!errs.empty()) {
    // field.ErrorList printed with %v: "[a b c]".
    std::string list;
    for (const auto& e : errs) list += (list.empty() ? "" : " ") + e;
    return invalid("failed to parse leader migration configuration: [" + list + "]");
  }
  return cfg;
}

LeaderMigrator::LeaderMigrator(const LeaderMigrationConfiguration& config, const std::string& component)
    : config_(config), component_(component) {}

FilterResult LeaderMigrator::FilterFunc(const std::string& controllerName) const {
  // A later entry for the same controller wins, as upstream's map.
  const ControllerLeaderConfiguration* found = nullptr;
  for (const auto& l : config_.controllerLeaders)
    if (l.name == controllerName) found = &l;
  if (!found) return FilterResult::kNonMigrated;
  return found->component == component_ || found->component == "*" ? FilterResult::kMigrated : FilterResult::kUnowned;
}

}  // namespace kcm::leaderelection
