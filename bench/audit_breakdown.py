#!/usr/bin/env python3
"""The kcm's writes by verb and resource from the apiserver's audit log, for one scale-bench run: events of stage
ResponseComplete with a write verb whose stageTimestamp falls in [T0, T1] (Unix seconds), split into the run's own
namespace and everything else. Prints one line per (verb, resource[/subresource], where), most first, then for
each resource updated or patched in the run namespace how many objects got 1, 2, 3... such writes (whether extra
writes come from a few objects or from every one).
Usage: audit_breakdown.py NAMESPACE T0 T1 AUDIT_LOG..."""
import collections
import datetime
import json
import sys

WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def seconds(ts):
    """RFC 3339 UTC with or without a fraction ("2026-12-07T19:00:00.123456Z") as Unix seconds."""
    base, _, frac = ts.rstrip("Z").partition(".")
    t = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    return t + (float("0." + frac) if frac else 0.0)


def main():
    ns, t0, t1, logs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
    counts = collections.Counter()
    per_object = collections.defaultdict(collections.Counter)  # resource -> object name -> updates and patches
    for path in logs:
        with open(path, errors="replace") as f:
            for line in f:
                if '"ResponseComplete"' not in line:
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("verb") not in WRITES or not (t0 <= seconds(ev.get("stageTimestamp", "1970-01-01T00:00:00.000000Z")) <= t1):
                    continue
                ref = ev.get("objectRef", {})
                res = ref.get("resource", "?") + ("/" + ref["subresource"] if ref.get("subresource") else "")
                where = "run namespace" if ref.get("namespace") == ns else (ref.get("namespace") or "cluster-scoped")
                failed = ev.get("responseStatus", {}).get("code", 0) >= 400
                counts[(ev["verb"], res, where, failed)] += 1
                if ev["verb"] in ("update", "patch") and ref.get("namespace") == ns and not failed:
                    per_object[res][ref.get("name", "?")] += 1
    for (verb, res, where, failed), n in counts.most_common():
        print("  %7d  %-7s %-36s %s%s" % (n, verb, res, where, "  (failed)" if failed else ""))
    for res, objects in sorted(per_object.items()):
        spread = collections.Counter(objects.values())
        print("  %-36s updates per object: %s" % (res, ", ".join("%dx %d" % (k, spread[k]) for k in sorted(spread))))


if __name__ == "__main__":
    main()
