"""Protobuf decoders for the generated API structs (imported by gen-api.py).

The apiserver answers `Accept: application/vnd.kubernetes.protobuf` with the messages of the `generated.proto`
files of the pinned k8s.io/api and k8s.io/apimachinery modules. Their field names are the JSON names, so each
proto field is matched to the struct member gen-api.py made from the OpenAPI schema; the wire type of a field
decides how its bytes are read (support in src/api/support/proto.h). Only decoding: request bodies stay JSON.

Outputs per group/version: <stem>_proto.h (declarations) and <stem>_proto.cc (definitions).
"""
import os
import re

PROTO_FIELD = re.compile(r"^\s*(optional|repeated|required)\s+([\w\.]+)\s+(\w+)\s*=\s*(\d+)\s*;")
PROTO_MAP = re.compile(r"^\s*map<\s*(\w+)\s*,\s*([\w\.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;")

# Proto files besides those of the generated groups: the special types' messages are decoded by hand.
PART_LINES = 3000
EXTRA_PROTO = ["apimachinery/pkg/runtime", "apimachinery/pkg/api/resource", "apimachinery/pkg/util/intstr"]


def parse_proto(path):
    """{full message name: {field name: (number, label, type)}}"""
    msgs, pkg, cur = {}, "", None
    for line in open(path):
        s = line.split("//")[0]
        m = re.match(r"^package\s+([\w\.]+)\s*;", s)
        if m:
            pkg = m.group(1)
            continue
        m = re.match(r"^message\s+(\w+)\s*\{", s)
        if m:
            cur = msgs.setdefault(pkg + "." + m.group(1), {})
            continue
        if cur is None:
            continue
        if s.startswith("}"):
            cur = None
            continue
        m = PROTO_FIELD.match(s)
        if m:
            cur[m.group(3)] = (int(m.group(4)), m.group(1), m.group(2))
            continue
        m = PROTO_MAP.match(s)
        if m:
            cur[m.group(3)] = (int(m.group(4)), "map", m.group(2))
    return msgs


def load_protos(modcache, version, gopkgs):
    msgs = {}
    for gopkg in list(gopkgs) + EXTRA_PROTO:
        mod, _, sub = gopkg.partition("/")
        p = os.path.join(modcache, "k8s.io", "%s@%s" % (mod, version), sub, "generated.proto")
        msgs.update(parse_proto(p))
    return msgs


def proto_name(defname):
    """io.k8s.api.core.v1.Pod -> k8s.io.api.core.v1.Pod"""
    assert defname.startswith("io.k8s.")
    return "k8s.io." + defname[len("io.k8s."):]


def read_stmt(f, target, interned):
    """A call reading the field at tag `t` of reader `r` into `target` (renamed per nesting level by the caller)."""
    k = f.kind
    if k == "array":
        et, ek = f.elem
        fn = "readRepeatedInterned" if ek == "string" and f.jname in interned else "readRepeated"
        return "%s(r, t, %s)" % (fn, target)
    if k == "map":
        return "readMap(r, t, %s)" % target
    if k == "string" and f.jname in interned:
        return "readInterned(r, t, %s)" % target
    return "read(r, t, %s)" % target


def resolve(msgs, pkg, typ):
    """A field's message type as a full name (None for scalars)."""
    if typ.startswith("."):
        return typ[1:] if typ[1:] in msgs else None
    full = pkg + "." + typ
    return full if full in msgs else None


SPECIAL_MESSAGES = {"::kcm::api::Quantity": {"Quantity"}, "::kcm::api::IntOrString": {"IntOrString"},
                    "::kcm::api::Time": {"Time"}, "::kcm::api::MicroTime": {"MicroTime"},
                    "::kcm::api::RawJson": {"RawExtension", "FieldsV1"}}


def wire_names(cpp_type, kind):
    """The proto type names a member of this C++ type and kind can be read from."""
    if kind in ("string", "bytes"):
        return {kind}
    if kind == "scalar":
        return {{"int32_t": "int32", "int64_t": "int64", "bool": "bool", "double": "double"}[cpp_type]}
    if kind == "special":
        return SPECIAL_MESSAGES[cpp_type]
    return {cpp_type.rpartition("::")[2]}  # struct: the message of the same name


def compatible(f, label, typ):
    t = typ.rpartition(".")[2]
    if f.kind == "array":
        return (label == "repeated" and t in wire_names(*f.elem)) or label == "optional"  # optional: a wrapper
    if f.kind == "map":
        return label == "map" and (f.elem[1].startswith("array:") or t in wire_names(*f.elem))
    return label == "optional" and t in wire_names(f.cpp_type, f.kind)


def switch_lines(msgs, pname, fields, used, interned, member, reader, ind, depth=0):
    """C++ `switch` on the fields of proto message `pname` into the struct's members. A message field whose name
    is no member is an embedded Go struct (go-to-protobuf nests what JSON inlines): its fields are read in place."""
    pkg = pname.rpartition(".")[0]
    byname = {f.jname: f for f in fields}
    bylower = {f.jname.lower(): f for f in fields}
    cases = []
    for fname, (num, label, typ) in sorted(msgs[pname].items(), key=lambda kv: kv[1][0]):
        f = byname.get(fname) or bylower.get(fname.lower())
        if f is not None:
            used.add(f.jname)
            if not compatible(f, label, typ):
                raise ValueError("%s.%s: member %s (%s) cannot be read from proto %s %s"
                                 % (pname, fname, f.jname, f.cpp_type, label, typ))
            m = "out." + member(f.jname)
            if f.optional and f.cpp_type not in ("::kcm::api::Time", "::kcm::api::MicroTime", "::kcm::api::RawJson"):
                m += ".emplace()"  # a *Time or *FieldsV1 is read whole: an empty message leaves it unset, as null does
            stmt = read_stmt(f, m, interned)
            if f.kind == "array" and label == "optional":  # a Go named slice: `message Verbs {repeated items = 1}`
                stmt = "readWrapped(r, t, %s)" % m
            stmt = stmt.replace("(r, t,", "(%s, t%d," % (reader, depth))
            cases.append((num, ["%s  if (!%s) return false;" % (ind, stmt)]))
            continue
        sub = resolve(msgs, pkg, typ) if label == "optional" else None
        if sub is not None and any(k in byname or k.lower() in bylower for k in msgs[sub]):
            r2 = "r%d" % (depth + 1)
            body = ["%s  {" % ind,
                    "%s    std::string_view b%d;" % (ind, depth + 1),
                    "%s    if (t%d.wire != kLen || !%s.bytes(b%d)) return false;" % (ind, depth, reader, depth + 1),
                    "%s    Reader %s(b%d);" % (ind, r2, depth + 1),
                    "%s    Tag t%d;" % (ind, depth + 1),
                    "%s    while (%s.next(t%d)) {" % (ind, r2, depth + 1)]
            body += switch_lines(msgs, sub, fields, used, interned, member, r2, ind + "      ", depth + 1)
            body += ["%s      if (!%s.skip(t%d)) return false;" % (ind, r2, depth + 1),
                     "%s    }" % ind,
                     "%s    if (!%s.ok()) return false;" % (ind, r2),
                     "%s  }" % ind]
            cases.append((num, body))
    if not cases:
        return []
    out = ["%sswitch (t%d.field) {" % (ind, depth)]
    for num, body in cases:
        out.append("%s  case %d:" % (ind, num))
        out += ["  " + line for line in body]
        out.append("%s    continue;" % ind)
    out += ["%s  default:" % ind, "%s    break;" % ind, "%s}" % ind]
    return out


def emit(ns, stem, names, model, includes, msgs, interned, banner, member, write_out, outdir, stats):
    short = lambda n: n.rpartition(".")[2]
    h = [banner, "#pragma once",
         "// Protobuf decoders for %s types (the messages of generated.proto at the pin). Light: no simdjson." % ns,
         "#include <string_view>", "", '#include "api/gen/%s.h"' % stem, '#include "api/support/proto.h"']
    h += ['#include "api/gen/%s_proto.h"' % i for i in sorted(includes)]
    h += ["", "namespace kcm::api::%s {" % ns, ""]
    head = [banner, '#include "api/gen/%s_proto.h"' % stem, "", "namespace kcm::api::%s {" % ns, "",
            "using namespace ::kcm::api::proto;", ""]
    parts, c = [], list(head)
    for n in names:
        if len(c) > PART_LINES:  # parts compile in parallel (as the JSON codec's)
            parts.append(c)
            c = list(head)
        pname = proto_name(n)
        h.append("bool decodeProto(std::string_view bytes, %s& out);" % short(n))
        c.append("bool decodeProto(std::string_view bytes, %s& out) {" % short(n))
        c.append("  Reader r0(bytes);")
        c.append("  Tag t0;")
        c.append("  while (r0.next(t0)) {")
        used = set()
        sw = []
        if pname not in msgs:
            stats["no_message"].append(n)
        else:
            sw = switch_lines(msgs, pname, model[n], used, interned, member, "r0", "    ")
        if not sw:
            c.insert(len(c) - 3, "  (void)out;  // no fields")
        c += sw
        for f in model[n]:
            if f.jname not in used and f.jname not in ("apiVersion", "kind"):  # TypeMeta: the envelope's
                stats["no_field"].append("%s.%s" % (short(n), f.jname))
        c.append("    if (!r0.skip(t0)) return false;")
        c.append("  }")
        c.append("  return r0.ok();")
        c.append("}")
        c.append("")
    h += ["", "}  // namespace kcm::api::%s" % ns]
    write_out(os.path.join(outdir, stem + "_proto.h"), "\n".join(h) + "\n")
    parts.append(c)
    for i, c in enumerate(parts):
        c.append("}  // namespace kcm::api::%s" % ns)
        name = stem + ("_proto.cc" if i == 0 else "_proto_part%d.cc" % (i + 1))
        write_out(os.path.join(outdir, name), "\n".join(c) + "\n")
