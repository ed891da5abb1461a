#!/usr/bin/env python3
"""Dump and compare the end state of a differential scenario (hack/diff-upstream.sh).

  normalize.py dump NAMESPACE [NS:RESOURCE ...]
                                         every listable namespaced object of NAMESPACE, the namespace itself, the
                                         nodes and every RESOURCE (e.g. secrets, configmap/cluster-info) of NS, as
                                         one JSON list on stdout (raw: normalised only when compared)
  normalize.py compare A.json B.json SCENARIO
                                         normalises both dumps and prints every difference as
                                         `<kind> "<name>": <field path>: upstream=<v> ours=<v>`; exits 1 if any

What legitimately differs between two runs and is normalised away: uids, resourceVersions, creation and other
timestamps, managedFields, an object's own UID repeated in it (a Job's controller-uid labels) and other dumped
objects' UIDs (a Job's in its pods' labels, as <uid of KIND NAME>; a PV's claimRef to a deleted claim as one
placeholder, and that claimRef's resourceVersion; a StorageVersionMigration's recorded resourceVersion as <set>), Services' cluster IPs, pod IPs and UIDs in Endpoints (an address compares as its pod; addresses and subsets then
in a fixed order), CSR request and credential bytes and the bytes of issued certificates (compared by their
decoded fields and lifetime), the random suffix of generated names (mapped to `<generateName>*` everywhere they
appear, a pod's template ResourceClaims' `<pod>-<claim>-` too; a CronJob's Jobs' minute suffix as <minute>), which node the scheduler picked and the IPs KWOK gave, the cluster's own CA and token bytes (each run has a
fresh PKI), node status (KWOK's), EndpointSlice generations (how many writes reached the end state), Event counts and names (Events compare as a set of type, reason, object,
source and message) and the scheduler's Events, the digits of the CEL type names in ValidatingAdmissionPolicy
type-checking warnings (Deployment<n>.spec).
"""
import base64
import datetime
import json
import re
import subprocess
import sys

TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def kubectl(*args):
    r = subprocess.run(["kubectl", *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def dump(ns, extra=()):
    rc, out, err = kubectl("api-resources", "--verbs=list", "--namespaced", "-o", "name")
    if rc != 0:
        sys.exit("api-resources: " + err)
    # events.events.k8s.io is the same objects as core events: keep one.
    resources = [r for r in out.split() if r and r != "events.events.k8s.io"]
    items = []
    for chunk in (resources[i:i + 20] for i in range(0, len(resources), 20)):
        rc, out, err = kubectl("get", ",".join(chunk), "-n", ns, "-o", "json", "--ignore-not-found")
        if out.strip():
            items += json.loads(out).get("items", [])
        elif rc != 0:
            sys.exit("get %s: %s" % (",".join(chunk), err))
    gets = [["get", "nodes", "-o", "json"], ["get", "namespace", ns, "-o", "json"]]
    gets += [["get", spec.split(":", 1)[1], "-n", spec.split(":", 1)[0], "-o", "json", "--ignore-not-found"]
             for spec in extra]
    for args in gets:
        rc, out, err = kubectl(*args)
        if rc != 0:
            sys.exit(" ".join(args) + ": " + err)
        if out.strip():
            j = json.loads(out)
            items += j.get("items", [j])
    json.dump(items, sys.stdout, indent=1, sort_keys=True)


# k8s.io/apimachinery/pkg/util/rand's alphabet: generated name suffixes and the ServiceAccount admission plugin's
# kube-api-access-xxxxx volume names are 5 of these.
RAND_SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
# Kinds whose controllers name their pods <name>-<random>: pods already deleted are still named in Events.
POD_OWNER_KINDS = {"ReplicaSet", "ReplicationController", "Job", "DaemonSet"}


def generated_names(items):
    """Prefixes of generated names: every generateName seen, `<name>-` of pod owners, kube-api-access-."""
    prefixes = {"kube-api-access-"}
    for o in items:
        md = o.get("metadata", {})
        if md.get("generateName"):
            prefixes.add(md["generateName"])
        if o.get("kind") in POD_OWNER_KINDS and md.get("name"):
            prefixes.add(md["name"] + "-")
        # An EndpointSlice rewritten by an update may have lost its generateName; its name still starts with it.
        svc = md.get("labels", {}).get("kubernetes.io/service-name")
        if o.get("kind") == "EndpointSlice" and svc:
            prefixes.add(svc + "-")
        # resourceclaim-controller names a template's claim <pod>-<claim>-<random>: one deleted since (its pod done)
        # is still named in the pod's status.
        if o.get("kind") == "Pod":
            for rc in o.get("spec", {}).get("resourceClaims", []):
                if rc.get("resourceClaimTemplateName") and len(md.get("name", "") + rc.get("name", "")) + 2 <= 57:
                    prefixes.add(md.get("name", "") + "-" + rc.get("name", "") + "-")
        inv = o.get("involvedObject", {}) if o.get("kind") == "Event" else {}
        if inv.get("kind") in POD_OWNER_KINDS and inv.get("name"):  # an owner deleted since
            prefixes.add(inv["name"] + "-")
    if not prefixes:
        return None
    alternatives = "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
    return re.compile(r"(?<![A-Za-z0-9-])(" + alternatives + r")" + RAND_SUFFIX + r"(?![A-Za-z0-9-])")


# A CronJob names its Jobs <cronjob>-<scheduled time in unix minutes>: the minute differs between runs.
CRON_MINUTE = {"re": None}


def cron_job_names(items):
    prefixes = {o["metadata"]["name"] + "-" for o in items if o.get("kind") == "CronJob" and o.get("metadata", {}).get("name")}
    if not prefixes:
        return None
    alternatives = "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
    return re.compile(r"(?<![A-Za-z0-9-])(" + alternatives + r")\d{7,10}(?![0-9])")


def replace_names(v, names):
    if not isinstance(v, str):
        return v
    if names is not None:
        v = names.sub(lambda m: m.group(1) + "*", v)
    if CRON_MINUTE["re"] is not None:
        v = CRON_MINUTE["re"].sub(lambda m: m.group(1) + "<minute>", v)
    return v


def scrub(v, names):
    if isinstance(v, dict):
        return {k: scrub(x, names) for k, x in v.items()}
    if isinstance(v, list):
        return [scrub(x, names) for x in v]
    if isinstance(v, str):
        if TIME_RE.match(v):
            return "<time>"
        return replace_names(v, names)
    return v


def normalize_object(o, names, uids=None):
    # The object's own UID wherever it is repeated (a Job's generated controller-uid selector labels) is <own-uid>;
    # another dumped object's UID (a Job's in its pods' controller-uid labels) is <uid of KIND NAME>.
    own = o.get("metadata", {}).get("uid")
    text = json.dumps(o)
    if own:
        text = text.replace('"%s"' % own, '"<own-uid>"')
    for uid, label in (uids or {}).items():
        if uid != own and uid in text:
            text = text.replace('"%s"' % uid, '"%s"' % label)
    o = json.loads(text)
    kind = o.get("kind", "")
    md = o.setdefault("metadata", {})
    for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink"):
        md.pop(k, None)
    if "deletionTimestamp" in md:
        md["deletionTimestamp"] = "<set>"
    for ref in md.get("ownerReferences", []):
        ref.pop("uid", None)
    if kind == "Event":
        inv = o.get("involvedObject", {})
        return scrub({"kind": "Event", "metadata": {"name": "event"}, "type": o.get("type"),
                      "reason": o.get("reason"),
                      "involvedObject": {"kind": inv.get("kind"), "name": inv.get("name"),
                                         "namespace": inv.get("namespace"), "fieldPath": inv.get("fieldPath")},
                      "source": o.get("source", {}).get("component"),
                      "reportingComponent": o.get("reportingComponent"), "message": o.get("message")}, names)
    if kind == "PersistentVolume" and o.get("spec", {}).get("claimRef"):
        # The claim's resourceVersion when it was bound; a deleted claim's UID (a live one's is <uid of ...>).
        ref = o["spec"]["claimRef"]
        ref.pop("resourceVersion", None)
        if ref.get("uid") and not ref["uid"].startswith("<"):
            ref["uid"] = "<uid of a claim not dumped>"
    if kind == "StorageVersionMigration" and o.get("status", {}).get("resourceVersion"):
        o["status"]["resourceVersion"] = "<set>"  # the cluster's resourceVersion when it was recorded
    if kind == "CronJob":  # references to its Jobs carry their resourceVersions
        for r in o.get("status", {}).get("active", []):
            r.pop("resourceVersion", None)
    if kind == "Pod":
        spec, st = o.get("spec", {}), o.get("status", {})
        if spec.get("nodeName"):
            spec["nodeName"] = "<node>"
        for k in ("podIP", "podIPs", "hostIP", "hostIPs", "startTime"):
            st.pop(k, None)
        for cs in st.get("containerStatuses", []) + st.get("initContainerStatuses", []):
            for k in ("containerID", "imageID"):
                cs.pop(k, None)
    if kind == "Node":
        o.pop("status", None)
    if kind == "Secret" and o.get("type") == "kubernetes.io/service-account-token":
        o["data"] = {k: "<data>" for k in o.get("data", {})}
    if kind == "ConfigMap" and md.get("name") == "kube-root-ca.crt":
        o["data"] = {k: "<ca>" for k in o.get("data", {})}
    if kind == "ServiceAccount":
        for s in o.get("secrets", []):
            s.pop("uid", None)
    if kind == "EndpointSlice":  # as Endpoints: an endpoint compares as its pod, endpoints in a fixed order
        # Its generation counts the controller's writes, and how pod events coalesce into syncs is timing (a CI run
        # of 78f71fe saw 7 upstream, 6 ours for the same end state).
        md.pop("generation", None)
        for e in o.get("endpoints") or []:
            ref = e.get("targetRef", {})
            if ref.get("kind") == "Pod":
                e["addresses"] = ["<ip of pod %s>" % ref.get("name") for _ in e.get("addresses", [])]
                ref.pop("uid", None)
        if o.get("endpoints"):
            o["endpoints"] = sorted(o["endpoints"], key=lambda e: json.dumps(e, sort_keys=True))
    if kind == "Service":  # the apiserver allocates cluster IPs at random
        spec = o.get("spec", {})
        if spec.get("clusterIP") not in (None, "", "None"):
            spec["clusterIP"] = "<cluster ip>"
            spec["clusterIPs"] = ["<cluster ip>" for _ in spec.get("clusterIPs", [])]
    if kind == "Endpoints":
        # KWOK gives each run its own pod IPs, and addresses and subsets are ordered by IP (and by hashes that
        # include it): an address is compared as its pod, addresses by pod name, subsets as a set.
        for sub in o.get("subsets", []):
            for k in ("addresses", "notReadyAddresses"):
                for a in sub.get(k, []):
                    if a.get("targetRef", {}).get("kind") == "Pod":
                        a["ip"] = "<ip of pod %s>" % a["targetRef"].get("name")
                        a["targetRef"].pop("uid", None)
                sub[k] = sorted(sub.get(k, []), key=lambda a: json.dumps(a, sort_keys=True))
                if not sub[k]:
                    sub.pop(k)
        if "subsets" in o:
            o["subsets"] = sorted(o["subsets"], key=lambda x: json.dumps(x, sort_keys=True))
    if kind == "ValidatingAdmissionPolicy":
        # Type-checking warnings name a kind's CEL object type by the kind and the nanoseconds of the moment it was
        # built (Deployment499398980.spec): the digits are each run's own.
        kinds = set(re.findall(r"Kind=([A-Za-z0-9]+):", json.dumps(o)))
        if o.get("spec", {}).get("paramKind", {}).get("kind"):
            kinds.add(o["spec"]["paramKind"]["kind"])
        for w in o.get("status", {}).get("typeChecking", {}).get("expressionWarnings", []):
            for k in kinds:
                w["warning"] = re.sub(re.escape(k) + r"\d+(?=[.)', ])", k + "<n>", w.get("warning", ""))
    if kind == "CertificateSigningRequest":
        spec, st = o.get("spec", {}), o.get("status", {})
        if "request" in spec:
            spec["request"] = "<request>"  # each side makes its own key
        extra = spec.get("extra", {})
        if "authentication.kubernetes.io/credential-id" in extra:  # the requester's certificate: fresh PKI per side
            extra["authentication.kubernetes.io/credential-id"] = ["<credential>"]
        if st.get("certificate"):
            st["certificate"] = certificate_fields(st["certificate"])
    return scrub(o, names)


HEX_DUMP_RE = re.compile(r"^([0-9A-Fa-f]{2}:)*[0-9A-Fa-f]{2}:?$")


def certificate_fields(b64):
    """An issued certificate as what a client relies on: `openssl x509 -text` without the bytes that differ by
    run (serial, keys, signature, key ids are hex dumps) and its dates, plus its lifetime in seconds."""
    pem = base64.b64decode(b64)
    text = subprocess.run(["openssl", "x509", "-noout", "-text"], input=pem, capture_output=True).stdout.decode()
    fields = [ln.strip() for ln in text.splitlines()
              if ln.strip() and not HEX_DUMP_RE.match(ln.strip()) and not ln.strip().startswith(("Not Before", "Not After"))]
    dates = subprocess.run(["openssl", "x509", "-noout", "-startdate", "-enddate", "-dateopt", "iso_8601"], input=pem,
                           capture_output=True).stdout.decode().split()
    stamps = [datetime.datetime.strptime(" ".join(dates[i:i + 2]).split("=", 1)[1], "%Y-%m-%d %H:%M:%SZ")
              for i in (0, 2)]
    return {"fields": fields, "lifetimeSeconds": int((stamps[1] - stamps[0]).total_seconds())}


NOT_KCM = {"default-scheduler", "ipallocator-repair-controller"}  # events of other components (the scheduler's node
# choice and the apiserver's IP repair loop differ by run)


def normalize(items):
    items = [o for o in items
             if not (o.get("kind") == "Event" and (o.get("source", {}).get("component") in NOT_KCM or
                                                   o.get("reportingComponent") in NOT_KCM))]
    names = generated_names(items)
    CRON_MINUTE["re"] = cron_job_names(items)
    uids = {o["metadata"]["uid"]: "<uid of %s %s>" % (o.get("kind"), replace_names(o["metadata"].get("name", ""), names))
            for o in items if o.get("kind") != "Event" and o.get("metadata", {}).get("uid")}
    out = [normalize_object(o, names, uids) for o in items]
    events = {json.dumps(e, sort_keys=True) for e in out if e.get("kind") == "Event"}
    rest = [o for o in out if o.get("kind") != "Event"] + [json.loads(e) for e in sorted(events)]
    return sorted(rest, key=lambda o: (o.get("kind", ""), o["metadata"].get("name", ""), json.dumps(o, sort_keys=True)))


def key(o):
    if o.get("kind") == "Event":
        inv = o["involvedObject"]
        return ("Event", "%s/%s %s" % (inv.get("kind"), inv.get("name"), o.get("reason")))
    return (o.get("kind", ""), o["metadata"].get("name", ""))


def walk(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            p = path + "." + k if path else k
            if k not in a:
                out.append((p, "<absent>", b[k]))
            elif k not in b:
                out.append((p, a[k], "<absent>"))
            else:
                walk(a[k], b[k], p, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, "%s[%d]" % (path, i), out)
    elif a != b:
        out.append((path, a, b))


def short(v):
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= 200 else s[:200] + "..."


def event_text(e):
    rest = {k: v for k, v in e.items() if k not in ("kind", "metadata", "involvedObject", "reason", "message")}
    return "%s %s" % (json.dumps(e.get("message")), json.dumps(rest, sort_keys=True))


def compare(fa, fb, scenario):
    a, b = normalize(json.load(open(fa))), normalize(json.load(open(fb)))
    groups = {}
    for side, objs in (("upstream", a), ("ours", b)):
        for o in objs:
            groups.setdefault(key(o), {"upstream": [], "ours": []})[side].append(o)
    diffs = []
    for (kind, name), g in sorted(groups.items()):
        label = '%s "%s"' % (kind.lower(), name)
        # Objects that normalise to one name (two generated slices of a Service) pair up in a fixed order.
        ua, ob = (sorted(g[side], key=lambda o: json.dumps(o, sort_keys=True)) for side in ("upstream", "ours"))
        if kind == "Event":  # a set: report what one side has and the other lacks
            us, os_ = ({json.dumps(e, sort_keys=True) for e in x} for x in (ua, ob))
            for side, only in (("upstream", us - os_), ("ours", os_ - us)):
                for e in sorted(only):
                    diffs.append("%s: only in %s: %s" % (label, side, event_text(json.loads(e))))
            continue
        for i in range(max(len(ua), len(ob))):
            if i >= len(ua):
                diffs.append("%s: only in ours: %s" % (label, short(ob[i])))
            elif i >= len(ob):
                diffs.append("%s: only in upstream: %s" % (label, short(ua[i])))
            else:
                fields = []
                walk(ua[i], ob[i], "", fields)
                for p, x, y in fields:
                    diffs.append("%s: %s: upstream=%s ours=%s" % (label, p, short(x), short(y)))
    for d in diffs:
        print("DIFF %s: %s" % (scenario, d))
    print("%s: %d object(s) upstream, %d ours, %d difference(s)" % (scenario, len(a), len(b), len(diffs)))
    return 1 if diffs else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 5 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        sys.exit(__doc__)
