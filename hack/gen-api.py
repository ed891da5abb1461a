#!/usr/bin/env python3
"""Generates typed C++ API structs and their JSON codecs from the pinned OpenAPI v2 schema.

Inputs:
  api/openapi-spec/swagger.json  the schema served by the pinned kube-apiserver (`kubectl get --raw /openapi/v2`)
  the Go sources of k8s.io/api and k8s.io/apimachinery at the pinned release (Go module cache), read only to learn
  what the schema cannot say: whether a field is a Go pointer (unset differs from zero -> std::optional) and
  whether it is `omitempty` (how the apiserver and kubectl encode it).
Outputs: src/api/gen/<group>_<version>.{h,cc} and <group>_<version>_codec.h, one translation unit per group/version.

Run through hack/update-api.sh (regeneration is that one command).
"""
import json
import os
import re
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_api_proto  # noqa: E402

GROUPS = OrderedDict([
    # schema prefix                              (c++ namespace path, file stem, go package dir)
    ("io.k8s.apimachinery.pkg.apis.meta.v1", ("meta::v1", "meta_v1", "apimachinery/pkg/apis/meta/v1")),
    ("io.k8s.api.core.v1", ("core::v1", "core_v1", "api/core/v1")),
    ("io.k8s.api.apps.v1", ("apps::v1", "apps_v1", "api/apps/v1")),
    ("io.k8s.api.batch.v1", ("batch::v1", "batch_v1", "api/batch/v1")),
    ("io.k8s.api.autoscaling.v1", ("autoscaling::v1", "autoscaling_v1", "api/autoscaling/v1")),
    ("io.k8s.api.autoscaling.v2", ("autoscaling::v2", "autoscaling_v2", "api/autoscaling/v2")),
    ("io.k8s.api.policy.v1", ("policy::v1", "policy_v1", "api/policy/v1")),
    ("io.k8s.api.discovery.v1", ("discovery::v1", "discovery_v1", "api/discovery/v1")),
    ("io.k8s.api.coordination.v1", ("coordination::v1", "coordination_v1", "api/coordination/v1")),
    ("io.k8s.api.certificates.v1", ("certificates::v1", "certificates_v1", "api/certificates/v1")),
    ("io.k8s.api.rbac.v1", ("rbac::v1", "rbac_v1", "api/rbac/v1")),
    ("io.k8s.api.storage.v1", ("storage::v1", "storage_v1", "api/storage/v1")),
    ("io.k8s.api.networking.v1", ("networking::v1", "networking_v1", "api/networking/v1")),
    ("io.k8s.api.resource.v1", ("resource::v1", "resource_v1", "api/resource/v1")),
    ("io.k8s.api.resource.v1alpha3", ("resource::v1alpha3", "resource_v1alpha3", "api/resource/v1alpha3")),
    ("io.k8s.api.authentication.v1", ("authentication::v1", "authentication_v1", "api/authentication/v1")),
    ("io.k8s.api.authorization.v1", ("authorization::v1", "authorization_v1", "api/authorization/v1")),
    ("io.k8s.api.events.v1", ("events::v1", "events_v1", "api/events/v1")),
    ("io.k8s.api.scheduling.v1", ("scheduling::v1", "scheduling_v1", "api/scheduling/v1")),
    ("io.k8s.api.scheduling.v1alpha3", ("scheduling::v1alpha3", "scheduling_v1alpha3", "api/scheduling/v1alpha3")),
    ("io.k8s.api.scheduling.v1beta1", ("scheduling::v1beta1", "scheduling_v1beta1", "api/scheduling/v1beta1")),
    ("io.k8s.api.storagemigration.v1", ("storagemigration::v1", "storagemigration_v1", "api/storagemigration/v1")),
    ("io.k8s.api.admissionregistration.v1", ("admissionregistration::v1", "admissionregistration_v1", "api/admissionregistration/v1")),
    ("io.k8s.api.apiserverinternal.v1alpha1",
     ("apiserverinternal::v1alpha1", "apiserverinternal_v1alpha1", "api/apiserverinternal/v1alpha1")),
])

# Hand-written types in src/api/support (see types.h there).
SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "::kcm::api::Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "::kcm::api::IntOrString",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "::kcm::api::Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "::kcm::api::MicroTime",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "::kcm::api::RawJson",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "::kcm::api::RawJson",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": "::kcm::api::RawJson",
}
# Go struct types (not pointers) whose zero value still encodes (as null): metav1.Time/MicroTime.
ZERO_ENCODES_NULL = {"::kcm::api::Time", "::kcm::api::MicroTime"}

CPP_KEYWORDS = {"namespace", "default", "operator", "template", "continue", "class", "private", "public",
                "protected", "delete", "new", "union", "volatile", "register", "export", "explicit", "friend",
                "inline", "mutable", "static", "this", "throw", "typename", "using", "virtual", "bool", "int",
                "long", "short", "signed", "unsigned", "void", "char", "double", "float", "auto", "break",
                "case", "catch", "const", "do", "else", "enum", "extern", "for", "goto", "if", "return",
                "sizeof", "struct", "switch", "try", "typedef", "while", "and", "or", "not", "xor", "bitand",
                "bitor", "compl", "requires", "concept", "module", "import"}


def member(name):
    n = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return n + "_" if n in CPP_KEYWORDS else n


# ------------------------------------------------------------------------------------------------ Go sources
GO_FIELD = re.compile(r'^\s*(?:(\w+)\s+)?([\*\[\]\w\.]+(?:\[[\w\.]+\][\*\[\]\w\.]+)?)\s+`[^`]*json:"([^"]*)"')


def parse_go_structs(pkg_dir):
    """{struct name: {json name: (is_pointer, omitempty)} , '__inline__': [embedded type names]}"""
    structs = {}
    for fn in sorted(os.listdir(pkg_dir)):
        if not fn.endswith(".go") or fn.endswith("_test.go") or fn.startswith(("zz_", "generated")) \
                or "swagger_doc" in fn:
            continue
        cur = None
        for line in open(os.path.join(pkg_dir, fn)):
            m = re.match(r"^type (\w+) struct \{", line)
            if m:
                cur = structs.setdefault(m.group(1), {"__inline__": []})
                continue
            if cur is None:
                continue
            if line.startswith("}"):
                cur = None
                continue
            m = GO_FIELD.match(line)
            if not m:
                continue
            fname, gotype, tag = m.groups()
            parts = tag.split(",")
            jname = parts[0]
            if fname is None:  # embedded
                if jname == "" or "inline" in parts[1:]:
                    cur["__inline__"].append(gotype.split(".")[-1].lstrip("*"))
                    continue
            if jname == "-":
                continue
            # omitzero (Go 1.24) omits a zero struct too, e.g. ObjectMeta.creationTimestamp since 1.37.
            cur[jname] = (gotype.startswith("*"), "omitempty" in parts[1:] or "omitzero" in parts[1:],
                          "omitzero" in parts[1:])
    return structs


META_GO_STRUCTS = {}  # embedded metav1 types (TypeMeta) are resolved here when not in the package


def go_field_info(go_structs, type_name, jname):
    s = go_structs.get(type_name)
    if s is None:
        s = META_GO_STRUCTS.get(type_name)
    if s is None:
        return None
    if jname in s:
        return s[jname]
    for emb in s["__inline__"]:
        r = go_field_info(go_structs, emb, jname)
        if r:
            return r
    return None


# ------------------------------------------------------------------------------------------------ model
UNKNOWN_MEMBER = "  ::kcm::api::UnknownFields unknownFields;  // members this build does not know, kept verbatim"


def member_alignment_rank(f):
    """0: 8-byte aligned (pointers, vectors, maps, int64, Time, nested structs), 1: int32, 2: byte aligned."""
    if f.kind == "struct":
        return 0
    if f.cpp_type in ("::kcm::api::String", "::kcm::api::Quantity", "bool"):
        return 2
    if f.cpp_type == "int32_t":
        return 1
    return 0


class Field:
    def __init__(self, jname, cpp_type, kind, optional, omitempty, required, elem=None):
        self.jname, self.cpp_type, self.kind = jname, cpp_type, kind  # kind: scalar|string|bytes|struct|special|array|map
        self.optional, self.omitempty, self.required, self.elem = optional, omitempty, required, elem


def cpp_name(defname):
    if defname in SPECIAL:
        return SPECIAL[defname]
    prefix, _, tname = defname.rpartition(".")
    if prefix not in GROUPS:
        raise KeyError(defname)
    return "::kcm::api::%s::%s" % (GROUPS[prefix][0], tname)


def elem_info(schema):
    """(cpp type, kind, referenced def or None) of a schema that is not an array/map itself."""
    if "$ref" in schema:
        ref = schema["$ref"].split("/")[-1]
        if ref in SPECIAL:
            return SPECIAL[ref], "special", ref
        return cpp_name(ref), "struct", ref
    t, f = schema.get("type"), schema.get("format")
    if t == "string":
        return ("std::string", "bytes", None) if f == "byte" else ("::kcm::api::String", "string", None)
    if t == "integer":
        return ("int32_t" if f == "int32" else "int64_t"), "scalar", None
    if t == "boolean":
        return "bool", "scalar", None
    if t == "number":
        return "double", "scalar", None
    if t == "object" and not schema.get("additionalProperties") and not schema.get("properties"):
        return "::kcm::api::RawJson", "special", None
    raise ValueError("unsupported schema %r" % schema)


def build_fields(defname, d, go_structs):
    tname = defname.rpartition(".")[2]
    req = set(d.get("required", []))
    fields, deps, missing = [], set(), []
    for jname, ps in d.get("properties", {}).items():
        gi = go_field_info(go_structs, tname, jname)
        if gi is None:
            missing.append(jname)
            gi = (True, True, False)  # unknown to Go parsing: treat as pointer+omitempty (encode only what is set)
        is_ptr, omit, omitzero = gi
        t = ps.get("type")
        if t == "array":
            et, ek, ref = elem_info(ps["items"])
            f = Field(jname, "std::vector<%s>" % et, "array", False, omit, jname in req, (et, ek))
            if ref and ek == "struct":
                deps.add((ref, "weak"))
        elif t == "object" and "additionalProperties" in ps:
            ap = ps["additionalProperties"]
            if ap.get("type") == "array":
                it, ik, _ = elem_info(ap["items"])
                et, ek = "std::vector<%s>" % it, "array:" + ik
            else:
                et, ek, ref = elem_info(ap)
                if ref and ek == "struct":
                    deps.add((ref, "weak"))
            f = Field(jname, "::kcm::api::StringMap<%s>" % et, "map", False, omit, jname in req, (et, ek))
        else:
            ct, kind, ref = elem_info(ps)
            f = Field(jname, ct, kind, is_ptr, omit, jname in req)
            f.omitzero = omitzero
            if ref and kind == "struct":
                deps.add((ref, "strong"))
        fields.append(f)
    return fields, deps, missing


# ------------------------------------------------------------------------------------------------ emit
# String fields (by JSON name, in any type) whose values repeat across objects: decoded into the intern pool
# (kcm::api::String::interned), as are map keys and string map values (labels, annotations, selectors).
INTERNED = {
    "type", "reason", "kind", "apiVersion", "namespace", "generateName", "image", "imageID", "nodeName",
    "nominatedNodeName", "hostIP", "schedulerName", "preemptionPolicy", "priorityClassName", "serviceAccountName",
    "serviceAccount", "runtimeClassName", "manager", "subresource", "fieldPath", "mountPath",
    "terminationMessagePath", "topologyKey", "key", "operator", "signerName", "storageClassName", "provisioner",
    "driver", "command", "args", "finalizers", "zone",
}


def decode_stmt(f, target, val, ind):
    """C++ statements decoding simdjson value `val` into `target` (an lvalue of the field's plain type)."""
    k = f.kind
    if k == "string" and f.jname in INTERNED:
        return ["%sif (auto e = decodeInterned(%s, %s)) return e;" % (ind, val, target)]
    if k in ("scalar", "string", "bytes", "special", "struct"):
        fn = {"bytes": "decodeBytes"}.get(k, "decodeValue")
        return ["%sif (auto e = %s(%s, %s)) return e;" % (ind, fn, val, target)]
    et, ek = f.elem
    if k == "array":
        fn = "decodeBytes" if ek == "bytes" else "decodeValue"
        if ek == "string" and f.jname in INTERNED:
            fn = "decodeInterned"
        return ["%sif (auto e = decodeArray(%s, %s, [](::simdjson::ondemand::value x, %s& o) { return %s(x, o); })) return e;"
                % (ind, val, target, et, fn)]
    if k == "map":
        if ek.startswith("array:"):
            inner = ek.split(":")[1]
            fn = "decodeBytes" if inner == "bytes" else "decodeValue"
            it = et[len("std::vector<"):-1]
            elem = "[](::simdjson::ondemand::value x, %s& o) { return decodeArray(x, o, [](::simdjson::ondemand::value y, %s& p) { return %s(y, p); }); }" % (et, it, fn)
        else:
            fn = {"bytes": "decodeBytes", "string": "decodeInterned"}.get(ek, "decodeValue")
            elem = "[](::simdjson::ondemand::value x, %s& o) { return %s(x, o); }" % (et, fn)
        return ["%sif (auto e = decodeMap(%s, %s, %s)) return e;" % (ind, val, target, elem)]
    raise ValueError(k)


def encode_expr(f, v):
    k = f.kind
    if k == "bytes":
        return "encodeBytes(w, %s);" % v
    if k == "array":
        et, ek = f.elem
        fn = "encodeBytes" if ek == "bytes" else "encodeValue"
        return "encodeArray(w, %s, [](JsonWriter& w, const %s& x) { %s(w, x); });" % (v, et, fn)
    if k == "map":
        et, ek = f.elem
        if ek.startswith("array:"):
            inner = ek.split(":")[1]
            fn = "encodeBytes" if inner == "bytes" else "encodeValue"
            it = et[len("std::vector<"):-1]
            return ("encodeMap(w, %s, [](JsonWriter& w, const %s& x) { encodeArray(w, x, [](JsonWriter& w, const %s& y) { %s(w, y); }); });"
                    % (v, et, it, fn))
        fn = "encodeBytes" if ek == "bytes" else "encodeValue"
        return "encodeMap(w, %s, [](JsonWriter& w, const %s& x) { %s(w, x); });" % (v, et, fn)
    return "encodeValue(w, %s);" % v


def zero_test(f, v):
    """C++ expression true when the (non-optional) value is Go's zero value for omitempty purposes."""
    if f.kind in ("array", "map", "string", "bytes"):
        return "%s.empty()" % v
    if f.kind == "scalar":
        return "%s == %s{}" % (v, f.cpp_type)
    if f.kind == "special":
        return "isZero(%s)" % v
    return None  # structs: Go never omits them


def topo_sort(names, deps):
    """Definitions before their users: by-value members ("strong") always, element types of vectors and maps
    ("weak") too unless a cycle runs through them (a recursive type). Clang instantiates a container's destructor
    at the enclosing struct's default member initializer and then needs the element type complete; GCC defers it."""
    out, state = [], {}

    def visit(n, weak_depth):
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            if weak_depth:
                return  # a cycle through a container: fine, its element may stay incomplete there
            raise ValueError("recursive by-value type involving " + n)
        state[n] = 1
        for d, kind in sorted(deps[n]):
            if d in deps:
                visit(d, weak_depth + (kind != "strong"))
        state[n] = 2
        out.append(n)

    for n in names:
        visit(n, 0)
    return out


WRITTEN = set()


CODEC_PART_LINES = 3000


def write_out(path, text):
    """Writes only when the content changed, so an unchanged file keeps its mtime and is not recompiled."""
    WRITTEN.add(os.path.abspath(path))
    if os.path.exists(path) and open(path).read() == text:
        return
    open(path, "w").write(text)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = json.load(open(os.path.join(root, "api/openapi-spec/swagger.json")), object_pairs_hook=OrderedDict)
    defs = spec["definitions"]
    # Not in the OpenAPI document but served for `Accept: ...;as=PartialObjectMetadata(List)`: metadata-only
    # lists and watches (garbage collector, namespace controller, quota). Shapes from metav1's types.go.
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1."
    tm = OrderedDict([("apiVersion", {"type": "string"}), ("kind", {"type": "string"})])
    defs[meta + "PartialObjectMetadata"] = {"type": "object", "properties": OrderedDict(
        list(tm.items()) + [("metadata", {"$ref": "#/definitions/" + meta + "ObjectMeta"})])}
    defs[meta + "PartialObjectMetadataList"] = {"type": "object", "required": ["items"], "properties": OrderedDict(
        list(tm.items()) + [("items", {"type": "array", "items": {"$ref": "#/definitions/" + meta + "PartialObjectMetadata"}}),
                            ("metadata", {"$ref": "#/definitions/" + meta + "ListMeta"})])}
    modcache, version = sys.argv[1], sys.argv[2]  # GOMODCACHE, v0.X.Y
    outdir = os.path.join(root, "src/api/gen")
    os.makedirs(outdir, exist_ok=True)
    go = {}
    for prefix, (_, _, gopkg) in GROUPS.items():
        mod, _, sub = gopkg.partition("/")
        go[prefix] = parse_go_structs(os.path.join(modcache, "k8s.io", "%s@%s" % (mod, version), sub))

    META_GO_STRUCTS.update(go["io.k8s.apimachinery.pkg.apis.meta.v1"])
    # REST resources: kind -> (plural, namespaced, subresources) from the schema's paths.
    gvk_to_def = {}
    for dn, dv in defs.items():
        for g in dv.get("x-kubernetes-group-version-kind", []):
            gvk_to_def[(g["group"], g["version"], g["kind"])] = dn
    resources = {}
    # Create-only resources (TokenReview, SubjectAccessReview, ...): a POST on the collection, no GET by name.
    for path, ops in spec["paths"].items():
        post = ops.get("post", {})
        gvk = post.get("x-kubernetes-group-version-kind")
        if post.get("x-kubernetes-action") != "post" or not gvk or "{name}" in path:
            continue
        segs = path.strip("/").split("/")
        dn = gvk_to_def.get((gvk["group"], gvk["version"], gvk["kind"]))
        if dn and not any(x.startswith("{") for x in segs[-1:]):
            resources.setdefault(dn, (segs[-1], "{namespace}" in segs, gvk["group"], gvk["version"], gvk["kind"]))
    for path, ops in spec["paths"].items():
        get = ops.get("get", {})
        gvk = get.get("x-kubernetes-group-version-kind")
        if get.get("x-kubernetes-action") != "get" or not gvk or not path.endswith("/{name}"):
            continue
        segs = path.strip("/").split("/")
        plural = segs[-2]
        if "{name}" in segs[:-1]:
            continue  # a subresource
        dn = gvk_to_def.get((gvk["group"], gvk["version"], gvk["kind"]))
        if dn:
            resources[dn] = (plural, "{namespace}" in segs, gvk["group"], gvk["version"], gvk["kind"])
    total_missing = []
    protos = gen_api_proto.load_protos(modcache, version, [g for _, _, g in GROUPS.values()])
    proto_stats = {"no_message": [], "no_field": []}
    for prefix, (ns, stem, _) in GROUPS.items():
        names = [k for k in defs if k.rpartition(".")[0] == prefix and k not in SPECIAL]
        model, deps, includes = {}, {}, set()
        for n in names:
            fields, d, missing = build_fields(n, defs[n], go[prefix])
            total_missing += ["%s.%s" % (n, m) for m in missing]
            model[n] = fields
            deps[n] = set((r, k) for r, k in d if r.rpartition(".")[0] == prefix)
            for r, _ in d:
                p = r.rpartition(".")[0]
                if p != prefix:
                    includes.add(GROUPS[p][1])
        order = topo_sort(sorted(names), deps)
        short = lambda n: n.rpartition(".")[2]
        banner = "// Code generated by hack/gen-api.py from api/openapi-spec/swagger.json. DO NOT EDIT.\n"

        # ---- types header
        h = [banner, "#pragma once", "// Typed %s objects. Plain aggregates: copy before you change a cached one." % ns,
             "#include <cstdint>", "#include <map>", "#include <optional>", "#include <string>", "#include <vector>", "",
             '#include "api/support/types.h"']
        h += ['#include "api/gen/%s.h"' % i for i in sorted(includes)]
        h += ["", "namespace kcm::api::%s {" % ns, ""]
        h += ["struct %s;" % short(n) for n in order] + [""]
        for n in order:
            h.append("struct %s {" % short(n))
            # Members by alignment, 8-byte ones first, then 4-byte, then the 1-byte ones (api::String is 16 bytes
            # aligned to 1, bools): padding only before the unknown-fields pointer at the end. JSON order within
            # each group; the codecs name every field.
            for f in sorted(model[n], key=member_alignment_rank):
                if f.optional:
                    box = "::kcm::api::Box" if f.kind == "struct" else "std::optional"
                    t = "%s<%s>" % (box, f.cpp_type)
                else:
                    t = f.cpp_type
                h.append("  %s %s{};" % (t, member(f.jname)))
            h.append(UNKNOWN_MEMBER)  # last: brace-initialising the first members keeps working
            h.append("};")
            h.append("")
        h.append("}  // namespace kcm::api::%s" % ns)
        res = [n for n in order if n in resources]
        if res:
            h += ["", "namespace kcm::api {", ""]
            for n in res:
                plural, namespaced, g, v, kind = resources[n]
                lst = n + "List"
                h.append("template <>")
                h.append("struct ResourceTraits<%s> {" % cpp_name(n))
                h.append('  static constexpr const char* kGroup = "%s";' % g)
                h.append('  static constexpr const char* kVersion = "%s";' % v)
                h.append('  static constexpr const char* kResource = "%s";' % plural)
                h.append('  static constexpr const char* kKind = "%s";' % kind)
                h.append("  static constexpr bool kNamespaced = %s;" % ("true" if namespaced else "false"))
                if lst in defs:
                    h.append("  using List = %s;" % cpp_name(lst))
                h.append("};")
                h.append("")
            h.append("}  // namespace kcm::api")
        write_out(os.path.join(outdir, stem + ".h"), "\n".join(h) + "\n")

        # ---- codec header
        c = [banner, "#pragma once", "// JSON codec for %s types. Includes simdjson: include only from .cc files." % ns,
             '#include "api/gen/%s.h"' % stem, '#include "api/support/codec.h"']
        c += ['#include "api/gen/%s_codec.h"' % i for i in sorted(includes)]
        c += ["", "namespace kcm::api::%s {" % ns, ""]
        for n in order:
            c.append("::simdjson::error_code decodeValue(::simdjson::ondemand::value v, %s& out);" % short(n))
            c.append("void encodeValue(::kcm::api::JsonWriter& w, const %s& in);" % short(n))
        c += ["", "}  // namespace kcm::api::%s" % ns]
        write_out(os.path.join(outdir, stem + "_codec.h"), "\n".join(c) + "\n")
        gen_api_proto.emit(ns, stem, order, model, includes, protos, INTERNED, banner, member, write_out, outdir,
                           proto_stats)

        # ---- codec source
        # Split into parts of about CODEC_PART_LINES lines: one 13k-line core/v1 file was a 4-minute translation
        # unit on the critical path of a clean build; parts compile in parallel.
        head = [banner, '#include "api/gen/%s_codec.h"' % stem, "", "namespace kcm::api::%s {" % ns, "",
                "using ::kcm::api::JsonWriter;", "using namespace ::kcm::api::codec;",
                "using ::kcm::api::codec::decodeValue;", "using ::kcm::api::codec::decodeInterned;", "using ::kcm::api::codec::encodeValue;", ""]
        parts = []
        s = list(head)
        for n in order:
            if len(s) > CODEC_PART_LINES:
                parts.append(s)
                s = list(head)
            fields = model[n]
            s.append("::simdjson::error_code decodeValue(::simdjson::ondemand::value v, %s& out) {" % short(n))
            s.append("  ::simdjson::ondemand::object obj;")
            s.append("  if (auto e = v.get_object().get(obj)) return e;")
            s.append("  for (auto field : obj) {")
            s.append("    std::string_view key;")
            s.append("    if (auto e = field.unescaped_key().get(key)) return e;")
            s.append("    ::simdjson::ondemand::value val;")
            s.append("    if (auto e = field.value().get(val)) return e;")
            bylen = OrderedDict()
            for f in fields:
                bylen.setdefault(len(f.jname), []).append(f)
            s.append("    switch (key.size()) {")
            for ln in sorted(bylen):
                s.append("      case %d:" % ln)
                for f in bylen[ln]:
                    m = member(f.jname)
                    s.append('        if (key == "%s") {' % f.jname)
                    if f.optional:
                        s.append("          if (isNull(val)) { out.%s.reset(); continue; }" % m)
                        s.append("          auto& t = out.%s.emplace();" % m)
                        s += decode_stmt(f, "t", "val", "          ")
                    else:
                        s.append("          if (isNull(val)) continue;")
                        s += decode_stmt(f, "out.%s" % m, "val", "          ")
                    s.append("          continue;")
                    s.append("        }")
                s.append("        break;")
            s.append("      default:")
            s.append("        break;")
            s.append("    }")
            s.append("    if (auto e = out.unknownFields.capture(key, val)) return e;")
            s.append("  }")
            s.append("  return ::simdjson::SUCCESS;")
            s.append("}")
            s.append("")
            s.append("void encodeValue(JsonWriter& w, const %s& in) {" % short(n))
            s.append("  w.beginObject();")
            for f in fields:
                m = member(f.jname)
                if f.optional:
                    s.append("  if (in.%s) { w.key(\"%s\"); %s }" % (m, f.jname, encode_expr(f, "*in." + m)))
                    continue
                z = zero_test(f, "in." + m)
                null_when_zero = f.cpp_type in ZERO_ENCODES_NULL and not getattr(f, "omitzero", False)
                if f.omitempty and z and not f.required and not null_when_zero:
                    s.append("  if (!(%s)) { w.key(\"%s\"); %s }" % (z, f.jname, encode_expr(f, "in." + m)))
                else:
                    s.append("  w.key(\"%s\"); %s" % (f.jname, encode_expr(f, "in." + m)))
            s.append("  in.unknownFields.emit(w);")
            s.append("  w.endObject();")
            s.append("}")
            s.append("")
        parts.append(s)
        for i, s in enumerate(parts):
            s.append("}  // namespace kcm::api::%s" % ns)
            name = stem + (".cc" if i == 0 else "_part%d.cc" % (i + 1))
            write_out(os.path.join(outdir, name), "\n".join(s) + "\n")

        # ---- light JSON entry points for kinds (objects with apiVersion and kind): what typed clients,
        # informers and controllers call. No simdjson in the header, so controllers stay cheap to compile; the
        # templates behind them are instantiated once, here.
        kinds = [n for n in order if "kind" in defs[n].get("properties", {}) and "apiVersion" in defs[n].get("properties", {})]
        j = [banner, "#pragma once",
             "// JSON entry points for %s kinds. Light: no simdjson; the codec is instantiated in %s_json.cc." % (ns, stem),
             "#include <functional>", "#include <string>", "#include <string_view>", "",
             '#include "api/gen/%s.h"' % stem, '#include "api/support/json_api.h"', "",
             "namespace kcm::api::%s {" % ns, ""]
        for n in kinds:
            t = short(n)
            j.append("::kcm::Status fromJson(std::string_view json, %s& out);" % t)
            j.append("std::string toJson(const %s& in);" % t)
            if t.endswith("List"):
                continue
            j.append("::kcm::Status decodeListItems(const std::string& body, const std::function<void(%s&&)>& onItem, ListInfo& info);" % t)
            j.append("::kcm::Status decodeWatchEvent(std::string_view line, std::string& type, %s& obj, ::kcm::api::meta::v1::Status& status);" % t)
        j += ["", "}  // namespace kcm::api::%s" % ns]
        write_out(os.path.join(outdir, stem + "_json.h"), "\n".join(j) + "\n")
        jc = [banner, '#include "api/gen/%s_json.h"' % stem, "", '#include "api/gen/%s_codec.h"' % stem,
              '#include "api/gen/%s_proto.h"' % stem, '#include "api/support/json_impl.h"',
              '#include "api/support/proto_impl.h"', "", "namespace kcm::api::%s {" % ns, ""]
        for n in kinds:
            t = short(n)
            jc.append("::kcm::Status fromJson(std::string_view json, %s& out) {" % t)
            jc.append("  if (::kcm::api::proto::isEnvelope(json)) return ::kcm::api::proto::decodeObject(json, out);")
            jc.append("  return ::kcm::api::decodeJson(json, out);")
            jc.append("}")
            jc.append("std::string toJson(const %s& in) { return ::kcm::api::encodeJson(in); }" % t)
            if t.endswith("List"):
                continue
            jc.append("::kcm::Status decodeListItems(const std::string& body, const std::function<void(%s&&)>& onItem, ListInfo& info) {" % t)
            jc.append("  if (::kcm::api::proto::isEnvelope(body)) return ::kcm::api::proto::decodeListItems<%s>(body, onItem, info);" % t)
            jc.append("  return ::kcm::api::decodeListItemsImpl<%s>(body, onItem, info);" % t)
            jc.append("}")
            jc.append("::kcm::Status decodeWatchEvent(std::string_view line, std::string& type, %s& obj, ::kcm::api::meta::v1::Status& status) {" % t)
            jc.append("  if (::kcm::api::proto::isWatchFrame(line)) return ::kcm::api::proto::decodeWatchEvent(line, type, obj, status);")
            jc.append("  return ::kcm::api::decodeWatchEventImpl(line, type, obj, status);")
            jc.append("}")
        jc += ["", "}  // namespace kcm::api::%s" % ns]
        write_out(os.path.join(outdir, stem + "_json.cc"), "\n".join(jc) + "\n")
    for fn in os.listdir(outdir):  # files of group/versions no longer generated
        if os.path.abspath(os.path.join(outdir, fn)) not in WRITTEN:
            os.remove(os.path.join(outdir, fn))
    if total_missing:
        print("gen-api: %d schema fields not found in Go sources (treated as pointer+omitempty): %s"
              % (len(total_missing), ", ".join(total_missing[:20])), file=sys.stderr)
    for k, v in proto_stats.items():
        if v:
            print("gen-api: protobuf %s (%d): %s" % (k, len(v), ", ".join(v)), file=sys.stderr)
    print("gen-api: wrote %d group/versions to src/api/gen" % len(GROUPS), file=sys.stderr)


if __name__ == "__main__":
    main()
