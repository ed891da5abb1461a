#!/usr/bin/env python3
"""The kcm's writes by verb and resource from the apiserver's audit log, for one scale-bench run: events of stage
ResponseComplete with a write verb whose stageTimestamp falls in [T0, T1] (Unix seconds), split into the run's own
namespace and everything else. Prints one line per (verb, resource[/subresource], where), most first.
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
                counts[(ev["verb"], res, where, ev.get("responseStatus", {}).get("code", 0) >= 400)] += 1
    for (verb, res, where, failed), n in counts.most_common():
        print("  %7d  %-7s %-36s %s%s" % (n, verb, res, where, "  (failed)" if failed else ""))


if __name__ == "__main__":
    main()
