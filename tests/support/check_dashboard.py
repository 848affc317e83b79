#!/usr/bin/env python3
"""check_dashboard.py — prove that every query of a Grafana dashboard works against a real
Prometheus and uses only metric families the daemon exposes.

Usage:
  check_dashboard.py --dashboard dashboards/sre-agent-sli.json --prometheus http://127.0.0.1:9090
                     [--metrics-file scrape.txt] [--rate-interval 1m] [--range 1h]
                     [--interval 15s] [--job '.*'] [--timeout 10]

What it checks (standard library only, python3 >= 3.8):
  * the dashboard's shape: uid, title, schemaVersion >= 39, a `datasource` variable of type
    datasource (query prometheus), a `job` query variable, unique panel ids, and every panel
    and target datasource is `${datasource}` (rows excepted); problems count as failures;
  * for every target `expr` of every panel (also panels nested in collapsed rows), after
    substituting Grafana variables ($__rate_interval, $__range, $__interval, $job / ${job},
    $datasource; any other `$var` is a failure):
      - every `sre_agent_*` identifier is a family in --metrics-file (a scrape of the daemon's
        /metrics: `# HELP` / `# TYPE` lines; `_bucket`/`_sum`/`_count` of a histogram and
        OpenMetrics-style names without `_total` are accepted);
      - POST /api/v1/query (instant, now) answers `status: success` with a non-empty result;
      - every `{{label}}` of the target's legendFormat is a label of every returned series;
  * the `job` variable's `label_values(METRIC, LABEL)` query returns at least one value.
Prints one line per query (`ok   ...` / `FAIL ...`) and finally
`dashboard: N passed, M failed`; exit status 1 when anything failed, 2 on bad usage.
"""
import argparse
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

VAR_RE = re.compile(r"\$\{?(__rate_interval|__range|__interval|job|datasource)\}?(?![A-Za-z0-9_])")
LEFTOVER_RE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_:]*\}?|\[\[[A-Za-z_][A-Za-z0-9_]*\]\]")
METRIC_RE = re.compile(r"\bsre_agent_[A-Za-z0-9_]+")
LEGEND_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
LABEL_VALUES_RE = re.compile(r"^\s*label_values\(\s*(.+?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dashboard", required=True, help="dashboard JSON file")
    p.add_argument("--prometheus", required=True, help="Prometheus base URL")
    p.add_argument("--metrics-file", help="the daemon's /metrics output (text exposition)")
    p.add_argument("--rate-interval", default="1m", help="value for $__rate_interval")
    p.add_argument("--range", dest="range_", default="1h", help="value for $__range")
    p.add_argument("--interval", default="15s", help="value for $__interval")
    p.add_argument("--job", default=".*", help="value for $job (a regex: used with =~)")
    p.add_argument("--timeout", type=float, default=10.0, help="HTTP timeout in seconds")
    return p.parse_args()


def walk_panels(panels):
    for p in panels or []:
        yield p
        yield from walk_panels(p.get("panels"))


def families_from_exposition(text):
    fams = {}
    for line in text.splitlines():
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[0] == "#" and parts[1] in ("HELP", "TYPE"):
            kind = parts[3].strip() if parts[1] == "TYPE" and len(parts) > 3 else None
            fams[parts[2]] = kind or fams.get(parts[2]) or "untyped"
    return fams


def family_known(name, fams):
    if name in fams:
        return True
    for suffix in ("_bucket", "_sum", "_count", "_created"):
        if name.endswith(suffix) and fams.get(name[: -len(suffix)]) in ("histogram", "summary",
                                                                          "untyped"):
            return True
    # OpenMetrics names a counter family without its `_total` suffix.
    return name.endswith("_total") and name[: -len("_total")] in fams


def substitute(expr, values):
    return VAR_RE.sub(lambda m: values[m.group(1)], expr)


def prom_get(base, path, params, timeout, post=True):
    query = urllib.parse.urlencode(params, doseq=True)
    if post:  # POST form: long queries do not hit URL length limits
        req = urllib.request.Request(base.rstrip("/") + path, data=query.encode(), method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    else:
        req = urllib.request.Request(base.rstrip("/") + path + "?" + query)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:  # 400/422 carry a JSON error body
        try:
            return json.load(e)
        except ValueError:
            return {"status": "error", "error": f"HTTP {e.code} {e.reason}"}
    except (urllib.error.URLError, OSError, ValueError) as e:
        return {"status": "error", "error": f"Prometheus at {base} unreachable: {e}"}


def shape_problems(dash):
    probs = []
    if not dash.get("uid"):
        probs.append("dashboard has no uid")
    if not dash.get("title"):
        probs.append("dashboard has no title")
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 39:
        probs.append(f"schemaVersion {dash.get('schemaVersion')!r} < 39")
    if "__inputs" in dash:
        probs.append("__inputs present (not substituted by file provisioning)")
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        probs.append("no `datasource` variable of type datasource with query prometheus")
    if "job" not in variables or variables["job"].get("type") != "query":
        probs.append("no `job` query variable")
    seen = set()
    for p in walk_panels(dash.get("panels")):
        where = f"panel {p.get('id')} {p.get('title')!r}"
        if p.get("id") in seen:
            probs.append(f"{where}: duplicate id")
        seen.add(p.get("id"))
        if "gridPos" not in p:
            probs.append(f"{where}: no gridPos")
        if p.get("type") == "row":
            continue
        if (p.get("datasource") or {}).get("uid") != "${datasource}":
            probs.append(f"{where}: datasource is not ${{datasource}}")
        for t in p.get("targets") or []:
            if (t.get("datasource") or {}).get("uid") not in (None, "${datasource}"):
                probs.append(f"{where} target {t.get('refId')}: datasource is not ${{datasource}}")
    return probs


def main():
    args = parse_args()
    try:
        with open(args.dashboard, encoding="utf-8") as f:
            dash = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_dashboard.py: cannot read {args.dashboard}: {e}", file=sys.stderr)
        return 2
    fams = None
    if args.metrics_file:
        try:
            with open(args.metrics_file, encoding="utf-8") as f:
                fams = families_from_exposition(f.read())
        except OSError as e:
            print(f"check_dashboard.py: cannot read {args.metrics_file}: {e}", file=sys.stderr)
            return 2
        if not fams:
            print(f"check_dashboard.py: no # HELP/# TYPE lines in {args.metrics_file}",
                  file=sys.stderr)
            return 2
    values = {"__rate_interval": args.rate_interval, "__range": args.range_,
              "__interval": args.interval, "job": args.job, "datasource": "prometheus"}

    passed = failed = 0
    for prob in shape_problems(dash):
        failed += 1
        print(f"FAIL shape: {prob}")

    for p in walk_panels(dash.get("panels")):
        for t in p.get("targets") or []:
            raw = t.get("expr")
            if not raw:
                continue
            label = f"[{p.get('id')} {p.get('title')} / {t.get('refId', '?')}]"
            expr = substitute(raw, values)
            errs = [f"unsupported variable {m.group(0)}" for m in LEFTOVER_RE.finditer(expr)]
            if fams is not None:
                errs += [f"unknown metric family {n}" for n in sorted(set(METRIC_RE.findall(expr)))
                         if not family_known(n, fams)]
            n_series = 0
            if not errs:
                ans = prom_get(args.prometheus, "/api/v1/query", {"query": expr}, args.timeout)
                if ans.get("status") != "success":
                    errs.append(f"{ans.get('errorType', 'error')}: {ans.get('error')}")
                else:
                    result = ans.get("data", {}).get("result")
                    kind = ans.get("data", {}).get("resultType")
                    n_series = len(result) if isinstance(result, list) else 1
                    if kind in ("vector", "matrix") and not result:
                        errs.append("empty result")
                    elif kind in ("vector", "matrix"):
                        legend = t.get("legendFormat") or ""
                        for lbl in LEGEND_RE.findall(legend):
                            if any(lbl not in s.get("metric", {}) for s in result):
                                errs.append(f"legend {{{{{lbl}}}}} but a series has no label {lbl}")
            if errs:
                failed += 1
                print(f"FAIL {label} {expr}\n     -> " + "; ".join(errs))
            else:
                passed += 1
                print(f"ok   {label} {n_series} series: {expr}")

    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = LABEL_VALUES_RE.match(substitute(q or "", values))
        if not m:
            failed += 1
            print(f"FAIL [variable {v.get('name')}] unsupported variable query {q!r}")
            continue
        selector, lbl = m.groups()
        errs = []
        if fams is not None:
            errs += [f"unknown metric family {n}" for n in sorted(set(METRIC_RE.findall(selector)))
                     if not family_known(n, fams)]
        ans = prom_get(args.prometheus, f"/api/v1/label/{lbl}/values", {"match[]": selector},
                       args.timeout, post=False)
        if ans.get("status") != "success":
            errs.append(f"{ans.get('errorType', 'error')}: {ans.get('error')}")
        elif not ans.get("data"):
            errs.append("no values")
        if errs:
            failed += 1
            print(f"FAIL [variable {v.get('name')}] {q}\n     -> " + "; ".join(errs))
        else:
            passed += 1
            print(f"ok   [variable {v.get('name')}] {q} -> {', '.join(ans['data'])}")

    print(f"dashboard: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
