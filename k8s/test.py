#!/usr/bin/env python3
"""The Kubernetes packaging, checked for real. Run through k8s/test.sh, which installs the tools.

1. The dashboards are generated (k8s/grafana/generate.py --check) and the chart's copies match.
2. `helm lint --strict` (Helm 4 through helm-python-sdk) for default and non-default values.
3. The chart renders for each values file in k8s/helm/atrium/ci/ and for the defaults; every
   rendered manifest passes kubernetes-validate --strict -k 1.30.0 (custom resources, which it
   has no schema for, get a structural check here instead); the rendered objects hold what
   docs/deploy.md promises (every ATRIUM_* setting, stable ids, probes, drain timing...).
4. values.schema.json refuses bad values, and the templates refuse combinations that cannot work.
5. `promtool check rules` on the alert rules taken from the rendered PrometheusRule.
6. A real atrium-node (two in cluster mode, plus a router when one is built and runs) on
   127.0.0.1, a short load from atrium-loadtest, and a real Prometheus scraping them every
   second with the chart's alert rules loaded: every metric a dashboard or rule names must be
   exported, every dashboard query and variable must return data, every rule must evaluate.

Environment: K8S_TOOLS (the tools folder, set by test.sh); ATRIUM_TEST_DATABASE_URL and
ATRIUM_TEST_NATS_URL (from scripts/services.sh) switch the live part to cluster mode;
K8S_TEST_ALLOW=no-router,trust-proxy-ranges turns those checks (a working atrium-router to
check the router dashboard against; a node that believes a proxy inside a range listed in
ATRIUM_TRUST_PROXY, which node/src/limits/address.rs supports) into skips instead of failures.
K8S_TEST_KEEP=1 keeps the work folder.
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "k8s"
CHART = K8S / "helm" / "atrium"
TOOLS = Path(os.environ.get("K8S_TOOLS", ROOT / ".services" / "k8s-tools"))
PROM_BIN = TOOLS / "prom" / "usr" / "bin"
VENV_BIN = Path(sys.executable).parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug"
NAMESPACE = "atrium"
RELEASE = "demo"
KUBE_VERSION = "1.30.0"
CUSTOM_KINDS = {"ServiceMonitor", "PrometheusRule"}

passed, failed, skipped = [], [], []


def check(name, ok, detail=""):
    if ok:
        passed.append(name)
        print(f"  ok    {name}")
    else:
        failed.append(name)
        print(f"  FAIL  {name}")
        if detail:
            for line in str(detail).rstrip().splitlines()[:40]:
                print(f"        {line}")
    return ok


def skip(name, why):
    skipped.append(name)
    print(f"  skip  {name}: {why}")


def section(title):
    print(f"\n-- {title}", flush=True)


# ---------------------------------------------------------------------------- rendering


def values_sets():
    sets = {"defaults": {}}
    for path in sorted((CHART / "ci").glob("*-values.yaml")):
        sets[path.stem] = yaml.safe_load(path.read_text()) or {}
    return sets


def render(values, namespace=NAMESPACE):
    chart = helm.Chart.load(str(CHART))
    out = chart.render(values, name=RELEASE, namespace=namespace, is_install=True)
    docs = []
    for path, text in sorted(out.items()):
        if path.endswith("NOTES.txt") or not text.strip():
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                docs.append(doc)
    return docs, out


def find(docs, kind, name_part=""):
    return [d for d in docs if d.get("kind") == kind and name_part in d["metadata"]["name"]]


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def setting_names(helpers, define):
    """The chart's value key for each ATRIUM_* variable, from a `define` block of _helpers.tpl."""
    block = helpers.split(f'define "{define}"')[1].split("{{- end")[0]
    return {m.group(2): m.group(1)
            for m in re.finditer(r"([A-Za-z0-9]+): (ATRIUM_[A-Z0-9_]+)", block)}


def default_mismatches(documented, names, settings, skip, expected):
    """Documented settings whose values.yaml default differs from `expected(var, docs default)`."""
    bad = []
    for var, default in documented:
        if var in skip:
            continue
        if var not in names:
            bad.append(f"{var}: no value key")
            continue
        value = settings.get(names[var])
        text = str(value).lower() if isinstance(value, bool) else str(value)
        want = expected(var, default)
        if text != want:
            bad.append(f"{var}: values.yaml {text!r}, docs {want!r}")
    return bad


def docs_settings(heading="## Settings"):
    """(variable, default) from the settings table under `heading` in docs/operations.md
    (the nodes' under "## Settings", the routers' under "## Router")."""
    rows = []
    section_ = None
    for line in (ROOT / "docs" / "operations.md").read_text().splitlines():
        if line.startswith("## "):
            section_ = line.strip()
        if section_ != heading:
            continue
        m = re.match(r"\|\s*`(ATRIUM_[A-Z0-9_]+)`\s*\|\s*`--[a-z0-9-]+`\s*\|\s*([^|]*)\|", line)
        if m:
            default = m.group(2).strip()
            # A literal default is its first `code` span ("`2592000000` (30 days)"); anything
            # else ("empty", "the open-file limit less 256") is kept as written.
            literal = re.match(r"`([^`]*)`", default)
            rows.append((m.group(1), literal.group(1) if literal else default))
    return rows


CHART_DERIVED = {"ATRIUM_BIND", "ATRIUM_ADMIN_BIND", "ATRIUM_DATA", "ATRIUM_NODE_ID",
                 "ATRIUM_ADVERTISE", "ATRIUM_COORDINATOR", "ATRIUM_DATABASE_URL",
                 "ATRIUM_TRUST_PROXY"}


def lint_all(sets):
    section("helm lint --strict")
    for name, values in sets.items():
        report = helm.lint(str(CHART), values, strict=True, namespace=NAMESPACE,
                           kube_version="v" + KUBE_VERSION)
        bad = [m for m in report.get("messages", []) if m.get("severity", 0) >= 2]
        check(f"helm lint --strict ({name})", not report.get("errors") and not bad,
              json.dumps(report, indent=1))


def validate_all(sets, workdir):
    section(f"render and kubernetes-validate --strict -k {KUBE_VERSION}")
    rendered = {}
    for name, values in sets.items():
        try:
            helm.Chart.load(str(CHART)).validate_schema(values)
            docs, _ = render(values)
        except helm.HelmError as e:
            check(f"render ({name})", False, e)
            continue
        check(f"render ({name}): {len(docs)} objects", True)
        rendered[name] = docs
        plain = [d for d in docs if d["kind"] not in CUSTOM_KINDS]
        custom = [d for d in docs if d["kind"] in CUSTOM_KINDS]
        path = workdir / f"rendered-{name}.yaml"
        path.write_text(yaml.safe_dump_all(plain, sort_keys=False))
        proc = subprocess.run([str(VENV_BIN / "kubernetes-validate"), "--strict", "-k", KUBE_VERSION,
                               "--quiet", str(path)], capture_output=True, text=True)
        check(f"kubernetes-validate ({name}): {len(plain)} objects", proc.returncode == 0,
              proc.stdout + proc.stderr)
        for doc in custom:
            problems = custom_resource_problems(doc)
            check(f"custom resource {doc['kind']}/{doc['metadata']['name']} ({name})",
                  not problems, "\n".join(problems))
    return rendered


def custom_resource_problems(doc):
    """What kubernetes-validate cannot check: the Prometheus Operator's resources."""
    p = []
    if doc.get("apiVersion") != "monitoring.coreos.com/v1":
        p.append(f"apiVersion {doc.get('apiVersion')}")
    spec = doc.get("spec") or {}
    if doc["kind"] == "ServiceMonitor":
        if not spec.get("selector", {}).get("matchLabels"):
            p.append("no selector.matchLabels")
        for ep in spec.get("endpoints", []):
            if ep.get("port") != "admin" or ep.get("path") != "/metrics":
                p.append(f"endpoint {ep}")
        if not spec.get("endpoints"):
            p.append("no endpoints")
    if doc["kind"] == "PrometheusRule":
        for g in spec.get("groups", []):
            for r in g.get("rules", []):
                if not r.get("alert") or not r.get("expr"):
                    p.append(f"rule without alert or expr: {r}")
                extra = set(r) - {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}
                if extra:
                    p.append(f"rule {r.get('alert')}: unknown fields {extra}")
    return p


def semantic_checks(rendered):
    section("what the rendered chart promises")
    d = rendered.get("defaults")
    full = rendered.get("full-values")
    single = rendered.get("single-values")
    if not d:
        check("default render available", False)
        return
    sts = find(d, "StatefulSet")[0]
    pod = sts["spec"]["template"]["spec"]
    node = pod["containers"][0]
    env = env_of(node)

    documented = docs_settings()
    check("docs/operations.md settings table parsed", len(documented) >= 40, f"{len(documented)} rows")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    names = setting_names(helpers, "atrium.node.settingNames")
    # Settings whose chart default is empty are left out of the pod, so the node applies its
    # own default (none, or one it derives, like ATRIUM_MAX_CONNECTIONS from the open-file
    # limit); ATRIUM_TRUST_PROXY likewise when node.trustProxy is empty.
    optional = {"ATRIUM_TRUST_PROXY"} | {var for var, key in names.items()
                                         if values["node"]["settings"].get(key) == ""}
    missing = [v for v, _ in documented if v not in env and v not in optional]
    check("every documented ATRIUM_* setting reaches the node", not missing, f"missing: {missing}")
    operations_md = (ROOT / "docs" / "operations.md").read_text()

    def documented_default(var, default):
        # A default the docs describe rather than give (not a `literal`) is the node's to
        # derive: the chart leaves it empty.
        literal = re.search(r"\|\s*`" + var + r"`\s*\|[^|]*\|\s*`", operations_md)
        return "" if default in ("empty", "unset") or not literal else default

    mismatched = default_mismatches(documented, names, values["node"]["settings"],
                                    CHART_DERIVED, documented_default)
    check("values.yaml node.settings defaults equal the documented defaults", not mismatched,
          "\n".join(mismatched))
    extra = sorted(set(names) - {v for v, _ in documented})
    check("the chart sets no undocumented node variable", not extra, extra)

    router_documented = docs_settings("## Router")
    if router_documented:
        rnames = setting_names(helpers, "atrium.router.settingNames")
        derived = {"ATRIUM_ROUTER_BIND", "ATRIUM_ROUTER_ADMIN_BIND", "ATRIUM_COORDINATOR", "ATRIUM_LEASE_MS"}
        bad = default_mismatches(router_documented, rnames, values["router"]["settings"], derived,
                                 documented_default)
        check("values.yaml router.settings cover the documented router settings, with their defaults",
              not bad, "\n".join(bad))
    else:
        skip("router settings against docs/operations.md", "no \"## Router\" settings table yet")
    check("by default ATRIUM_MEMORY_BUDGET is auto (follows resources.limits.memory) and "
          "ATRIUM_MAX_CONNECTIONS is left to the node",
          env.get("ATRIUM_MEMORY_BUDGET", {}).get("value") == "auto"
          and node["resources"].get("limits", {}).get("memory")
          and "ATRIUM_MAX_CONNECTIONS" not in env and "ATRIUM_ALLOWED_ORIGINS" not in env,
          {k: env.get(k) for k in ("ATRIUM_MEMORY_BUDGET", "ATRIUM_MAX_CONNECTIONS", "ATRIUM_ALLOWED_ORIGINS")})
    check("ATRIUM_LEASE_MS rendered as plain digits",
          env.get("ATRIUM_WELCOME_BUDGET_BYTES", {}).get("value") == "268435456",
          env.get("ATRIUM_WELCOME_BUDGET_BYTES"))

    check("ATRIUM_NODE_ID is the pod name",
          env["ATRIUM_NODE_ID"].get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name")
    headless = [s for s in find(d, "Service") if s["spec"].get("clusterIP") == "None"]
    check("a headless Service for the nodes", len(headless) == 1 and
          headless[0]["metadata"]["name"] == sts["spec"]["serviceName"])
    adv = env["ATRIUM_ADVERTISE"]["value"]
    check("ATRIUM_ADVERTISE is the pod's headless DNS name",
          adv == f"$(ATRIUM_NODE_ID).{sts['spec']['serviceName']}.{NAMESPACE}.svc.cluster.local:8080", adv)
    check("node.replicas is the StatefulSet size", sts["spec"]["replicas"] == 3)
    check("liveness /health, readiness /ready",
          node["livenessProbe"]["httpGet"]["path"] == "/health"
          and node["readinessProbe"]["httpGet"]["path"] == "/ready")
    check("resources: requests and limits",
          node["resources"].get("requests") and node["resources"].get("limits"))
    router = find(d, "Deployment", "router")[0]
    router_grace = int(router["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])
    router_env = env_of(router["spec"]["template"]["spec"]["containers"][0])
    router_drain = int(router_env["ATRIUM_ROUTER_DRAIN_MS"]["value"]) / 1000
    router_shutdown = int(router_env["ATRIUM_ROUTER_SHUTDOWN_MS"]["value"]) / 1000
    pre = node["lifecycle"]["preStop"]["sleep"]["seconds"]
    drain = int(env["ATRIUM_SHUTDOWN_MS"]["value"]) / 1000
    grace = pod["terminationGracePeriodSeconds"]
    check(f"node grace {grace}s > preStop {pre}s + drain {drain:g}s + router drain {router_drain:g}s",
          grace > pre + drain + router_drain)
    router_pre = router["spec"]["template"]["spec"]["containers"][0]["lifecycle"]["preStop"]["sleep"]["seconds"]
    check(f"router grace {router_grace}s > preStop {router_pre}s + its shutdown {router_shutdown:g}s",
          router_grace > router_pre + router_shutdown >= router_drain)
    check("routers get the coordinator and the nodes' lease time",
          "ATRIUM_COORDINATOR" in router_env
          and router_env["ATRIUM_LEASE_MS"]["value"] == env["ATRIUM_LEASE_MS"]["value"])
    # Against the sources, too: every variable each binary reads is set by the chart (the
    # optional empty ones aside), and nothing the chart sets is unknown to the binary.
    router_names = setting_names(helpers, "atrium.router.settingNames")
    router_optional = {var for var, key in router_names.items()
                       if values["router"]["settings"].get(key) == ""}
    for binary, container_env, path in (("node", env, ROOT / "node/src/config.rs"),
                                        ("router", router_env, ROOT / "router/src/config.rs")):
        if not path.exists():
            skip(f"{binary} settings against {path.relative_to(ROOT)}", "no such file")
            continue
        read = set(re.findall(r'env\s*=\s*"(ATRIUM_[A-Z0-9_]+)"', path.read_text()))
        unset = sorted(read - set(container_env) - (optional if binary == "node" else router_optional))
        unknown = sorted(set(container_env) - read)
        check(f"the {binary} container sets every variable {path.relative_to(ROOT)} reads, and no other",
              read and not unset and not unknown, f"not set: {unset}; unknown to the binary: {unknown}")
    pdb = find(d, "PodDisruptionBudget", "node")
    check("a PodDisruptionBudget selecting the nodes", pdb and
          pdb[0]["spec"]["selector"]["matchLabels"].items() <= sts["spec"]["template"]["metadata"]["labels"].items())
    cms = [c for c in find(d, "ConfigMap") if "dashboard" in c["metadata"]["name"]]
    ok = len(cms) == 3 and all(c["metadata"]["labels"].get("grafana_dashboard") == "1" for c in cms)
    same = all(json.loads(v) == json.loads((K8S / "grafana" / k.removeprefix("atrium-")).read_text())
               for c in cms for k, v in c["data"].items())
    check("three dashboard ConfigMaps labelled grafana_dashboard: \"1\", equal to k8s/grafana", ok and same)
    check("no HPA, ServiceMonitor or PrometheusRule by default",
          not find(d, "HorizontalPodAutoscaler") and not find(d, "ServiceMonitor") and not find(d, "PrometheusRule"))
    check("no Postgres CA volume by default",
          all(v["name"] != "postgres-ca" for v in pod.get("volumes", [])))
    secret = find(d, "Secret")
    check("URLs given as values go to a Secret, not the pod spec",
          secret and "database-url" in secret[0]["stringData"]
          and "valueFrom" in env["ATRIUM_DATABASE_URL"])

    if full:
        fsts = find(full, "StatefulSet")[0]
        fenv = env_of(fsts["spec"]["template"]["spec"]["containers"][0])
        check("full: node.replicas 5", fsts["spec"]["replicas"] == 5)
        check("full: database URL from the existing Secret",
              fenv["ATRIUM_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "atrium-db", "key": "url"})
        check("full: ATRIUM_TRUST_PROXY set", fenv.get("ATRIUM_TRUST_PROXY", {}).get("value") == "10.244.0.0/16")
        check("full: changed settings reach the node",
              fenv["ATRIUM_LEASE_MS"]["value"] == "3000" and fenv["ATRIUM_HEALTH_STATS"]["value"] == "true"
              and fenv["ATRIUM_WELCOME_BUDGET_BYTES"]["value"] == "536870912"
              and fenv["ATRIUM_ALLOWED_ORIGINS"]["value"] == "https://app.example.com,https://staging.example.com"
              and fenv["ATRIUM_MEMORY_BUDGET"]["value"] == "1536M"
              and fenv["ATRIUM_MAX_CONNECTIONS"]["value"] == "20000"
              and fenv["ATRIUM_SESSION_TTL_MS"]["value"] == "604800000")
        check("full: a volumeClaimTemplate for the data", bool(fsts["spec"].get("volumeClaimTemplates")))
        fpod = fsts["spec"]["template"]["spec"]
        mounts = {m["name"]: m for m in fpod["containers"][0].get("volumeMounts", [])}
        vols = {v["name"]: v for v in fpod.get("volumes", [])}
        check("full: the Postgres CA Secret (database.rootCert) is mounted read-only at "
              "/etc/atrium/postgres-ca/ca.crt",
              mounts.get("postgres-ca", {}).get("mountPath") == "/etc/atrium/postgres-ca"
              and mounts["postgres-ca"].get("readOnly") is True
              and vols.get("postgres-ca", {}).get("secret") == {
                  "secretName": "atrium-db-ca", "items": [{"key": "root.pem", "path": "ca.crt"}]},
              f"mounts {list(mounts)}, volumes {vols}")
        check("full: HPA, two ServiceMonitors, a PrometheusRule",
              len(find(full, "HorizontalPodAutoscaler")) == 1 and len(find(full, "ServiceMonitor")) == 2
              and len(find(full, "PrometheusRule")) == 1)
        check("full: the router Deployment leaves replicas to the HPA",
              "replicas" not in find(full, "Deployment", "router")[0]["spec"])
        alerts = {r["alert"] for g in find(full, "PrometheusRule")[0]["spec"]["groups"] for r in g["rules"]}
        want = {"AtriumNodeDown", "AtriumEditP99High", "AtriumLeaseChurn", "AtriumQueueOverflows",
                "AtriumRateLimitStorm"}
        check("full: alerts for node down, edit p99, lease churn, queue overflows, rate-limit storms",
              want <= alerts, sorted(alerts))
    if single:
        check("single: no router, one node, no dashboards",
              not find(single, "Deployment") and find(single, "StatefulSet")[0]["spec"]["replicas"] == 1
              and not [c for c in find(single, "ConfigMap") if "dashboard" in c["metadata"]["name"]])


def refusals():
    section("values.schema.json and the templates refuse what cannot work")
    chart = helm.Chart.load(str(CHART))
    bad = {
        "node.replicas as a string": {"node": {"replicas": "three"}},
        "node.replicas 0": {"node": {"replicas": 0}},
        "an unknown node setting": {"node": {"settings": {"leaseMillis": 5000}}},
        "a negative setting": {"node": {"settings": {"leaseMs": -1}}},
        "healthStats as a word": {"node": {"settings": {"healthStats": "yes"}}},
        "memoryBudget in Kubernetes units (2Gi)": {"node": {"settings": {"memoryBudget": "2Gi"}}},
        "maxConnections 0": {"node": {"settings": {"maxConnections": 0}}},
        "maxConnections as a word": {"node": {"settings": {"maxConnections": "many"}}},
        "a coordinator URL with another scheme": {"coordinator": {"url": "http://nats:4222"}},
        "a database URL that is not Postgres": {"database": {"url": "mysql://db/atrium"}},
        "a router setting not named ATRIUM_*": {"router": {"settings": {"LOG": "x"}}},
        "an unknown top-level value": {"nodes": {"replicas": 3}},
        "a bad scrape interval": {"monitoring": {"serviceMonitor": {"interval": "often"}}},
    }
    for name, values in bad.items():
        try:
            chart.validate_schema(values)
            refused = False
            detail = "accepted"
        except helm.HelmError as e:
            refused, detail = True, e
        check(f"schema refuses {name}", refused, detail)
    try:
        chart.validate_schema({"node": {"replicas": 7, "settings": {
            "leaseMs": 3000, "memoryBudget": "2GiB", "maxConnections": 50000}}})
        check("schema accepts good values", True)
    except helm.HelmError as e:
        check("schema accepts good values", False, e)
    combos = {
        "3 nodes without Postgres": {"database": {"url": ""}},
        "routers without a coordinator": {"coordinator": {"url": ""}, "node": {"replicas": 1}},
        "a grace period shorter than the drain": {"node": {"terminationGracePeriodSeconds": 10}},
        "the embedded store without a volume": {"database": {"url": ""}, "coordinator": {"url": ""},
                                                "router": {"enabled": False}, "node": {"replicas": 1}},
    }
    for name, values in combos.items():
        try:
            render(values)
            check(f"render refuses {name}", False, "rendered")
        except helm.HelmError as e:
            check(f"render refuses {name}", True)
            print(f"        ({str(e).strip().splitlines()[-1][:150]})")


# ---------------------------------------------------------------------------- PromQL names

FUNCTIONS_AND_WORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or",
    "unless", "inf", "nan", "le",
}


def metric_names(expr):
    """The metric names a PromQL expression reads (identifiers that are not functions,
    keywords, labels or durations)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    s = re.sub(r"\{[^}]*\}", "", s)
    s = re.sub(r"\[[^\]]*\]", "", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", s):
        word = m.group(0)
        rest = s[m.end():].lstrip()
        if rest.startswith("("):
            continue
        if word.lower() in FUNCTIONS_AND_WORDS:
            continue
        if re.fullmatch(r"\d+[smhdwy]", word) or (m.start() > 0 and s[m.start() - 1].isdigit()):
            continue
        names.add(word)
    return names


def dashboard_queries():
    """(dashboard, panel title, expr) for every target, and (dashboard, variable, query)."""
    targets, variables = [], []
    for path in sorted((K8S / "grafana").glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            for t in panel.get("targets", []):
                targets.append((path.stem, panel["title"], t["expr"]))
        for var in board["templating"]["list"]:
            if var["type"] == "query":
                variables.append((path.stem, var["name"], var["query"]["query"]))
    return targets, variables


def substitute(expr):
    return (expr.replace("$__rate_interval", "1m").replace("$__interval", "15s")
            .replace("$namespace", NAMESPACE).replace("$pod", ".*"))


# ---------------------------------------------------------------------------- rules


def extract_rules(rendered, workdir):
    section("promtool check rules")
    full = rendered.get("full-values")
    if not full or not find(full, "PrometheusRule"):
        check("a PrometheusRule rendered", False)
        return None
    spec = find(full, "PrometheusRule")[0]["spec"]
    path = workdir / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": spec["groups"]}, sort_keys=False))
    proc = subprocess.run([str(PROM_BIN / "promtool"), "check", "rules", str(path)],
                          capture_output=True, text=True)
    check("promtool check rules", proc.returncode == 0, proc.stdout + proc.stderr)
    return path


# ---------------------------------------------------------------------------- live


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=3.0, headers=None, data=None):
    req = urllib.request.Request(url, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_http(url, seconds, proc=None):
    end = time.time() + seconds
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            status, _ = http_get(url, timeout=1)
            if status == 200:
                return True
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.2)
    return False


class Procs:
    def __init__(self, workdir):
        self.workdir = workdir
        self.procs = []

    def start(self, name, argv, env=None):
        log = open(self.workdir / f"{name}.log", "w")
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
        full_env.update(env or {})
        proc = subprocess.Popen(argv, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                                cwd=self.workdir, start_new_session=True)
        self.procs.append((name, proc))
        return proc

    def log_tail(self, name, lines=20):
        try:
            return "\n".join((self.workdir / f"{name}.log").read_text().splitlines()[-lines:])
        except OSError:
            return ""

    def stop_all(self):
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.time() + 15
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def exported_names(url):
    try:
        status, text = http_get(url)
    except OSError:
        return set()
    names = set()
    if status != 200:
        return names
    for line in text.splitlines():
        if line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def psql_bin():
    for path in sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"), reverse=True):
        return str(path)
    return shutil.which("psql")


def trust_proxy_ranges(procs, workdir):
    """The chart passes node.trustProxy (the routers' pod range) as ATRIUM_TRUST_PROXY: check
    that a node believes X-Forwarded-For from an address inside a range, not only from an
    exactly listed address."""
    section("ATRIUM_TRUST_PROXY with an address range (what node.trustProxy needs)")
    node = TARGET / "atrium-node"
    results = {}
    for label, trust in (("exact address", "127.0.0.1"), ("range", "127.0.0.0/8")):
        port = free_port()
        name = f"trust-{label.replace(' ', '-')}"
        proc = procs.start(name, [str(node)], {
            "ATRIUM_BIND": f"127.0.0.1:{port}", "ATRIUM_DATA": str(workdir / name),
            "ATRIUM_TRUST_PROXY": trust, "ATRIUM_AUTH_PER_IP_PER_MINUTE": "2",
            "ATRIUM_AUTH_PER_EMAIL_PER_MINUTE": "100", "ATRIUM_ARGON2_MEMORY_KIB": "1024",
            "ATRIUM_ARGON2_ITERATIONS": "1", "ATRIUM_LOG": "warn"})
        if not wait_http(f"http://127.0.0.1:{port}/health", 20, proc):
            check(f"node with ATRIUM_TRUST_PROXY={trust} starts", False, procs.log_tail(name))
            continue
        limited = 0
        for i in range(6):
            # Each request claims a different client behind the proxy (a documentation
            # address: it is only a header, nothing is sent there).
            status, _ = http_get(f"http://127.0.0.1:{port}/api/signin", headers={
                "content-type": "application/json", "x-forwarded-for": f"192.0.2.{i + 1}"},
                data=json.dumps({"email": f"nobody{i}@example.com", "password": "wrong-password"}).encode())
            limited += status == 429
        results[label] = limited
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    if "exact address" in results:
        check("an exactly listed proxy's X-Forwarded-For is believed (6 clients, none limited)",
              results["exact address"] == 0, f"{results['exact address']} of 6 got 429")
    if "range" in results and results["range"] and allowed("trust-proxy-ranges"):
        skip("a proxy inside a listed range is believed",
             f"{results['range']} of 6 got 429: the node ignores ranges in ATRIUM_TRUST_PROXY")
    elif "range" in results:
        check("a proxy inside a listed range (127.0.0.0/8) is believed (6 clients, none limited)",
              results["range"] == 0,
              f"{results['range']} of 6 got 429: the node did not believe a proxy inside a "
              "range listed in ATRIUM_TRUST_PROXY (node/src/limits/address.rs Network), so "
              "node.trustProxy cannot name the routers' pod range; see docs/deploy.md")


def misbehaving_socket(port):
    """A socket that sends a patch before its hello (a reject, `invalid`) and then never says
    hello (the node closes it with 4000 after ATRIUM_HELLO_TIMEOUT_MS): the errors panels need
    rejects and closes by code to show."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"GET /files/k8sidle00000000000000/ws HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                 b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    payload = b'{"type":"patch","id":1,"ops":[]}'
    mask = secrets.token_bytes(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
    return sock


def allowed(gap):
    return gap in os.environ.get("K8S_TEST_ALLOW", "").replace(" ", "").split(",")


def live(rules_path, workdir):
    section("live: nodes, load, Prometheus, every dashboard query")
    node_bin = TARGET / "atrium-node"
    if not node_bin.exists():
        check("target/debug/atrium-node is built", False, "cargo build -p atrium-node")
        return
    procs = Procs(workdir)
    database = None
    try:
        trust_proxy_ranges(procs, workdir)

        db_admin = os.environ.get("ATRIUM_TEST_DATABASE_URL")
        nats = os.environ.get("ATRIUM_TEST_NATS_URL")
        cluster = bool(db_admin and nats and psql_bin())
        common = {"ATRIUM_LOG": "warn", "ATRIUM_SNAPSHOT_MS": "1000", "ATRIUM_ROOM_EDITORS": "2",
                  "ATRIUM_WS_PER_SECOND": "2", "ATRIUM_HELLO_TIMEOUT_MS": "1500",
                  "ATRIUM_LEASE_MS": "3000", "ATRIUM_ARGON2_MEMORY_KIB": "1024",
                  "ATRIUM_ARGON2_ITERATIONS": "1", "ATRIUM_TRUST_PROXY": "127.0.0.1"}
        if cluster:
            database = f"atrium_k8s_{secrets.token_hex(6)}"
            subprocess.run([psql_bin(), db_admin, "-q", "-c", f"CREATE DATABASE {database}"],
                           check=True, capture_output=True)
            parts = urllib.parse.urlsplit(db_admin)
            common["ATRIUM_DATABASE_URL"] = urllib.parse.urlunsplit(parts._replace(path="/" + database))
            common["ATRIUM_COORDINATOR"] = f"{nats}?namespace=k8s{secrets.token_hex(6)}"
            count = 2
        else:
            count = 1
            print("        (no ATRIUM_TEST_DATABASE_URL/ATRIUM_TEST_NATS_URL: one node on its embedded store)")
        nodes = []
        for i in range(count):
            port, admin = free_port(), free_port()
            pod = f"{RELEASE}-atrium-node-{i}"
            env = dict(common, ATRIUM_BIND=f"127.0.0.1:{port}", ATRIUM_ADMIN_BIND=f"127.0.0.1:{admin}",
                       ATRIUM_DATA=str(workdir / pod), ATRIUM_NODE_ID=pod,
                       ATRIUM_ADVERTISE=f"127.0.0.1:{port}")
            proc = procs.start(pod, [str(node_bin)], env)
            nodes.append((pod, port, admin, proc))
        for pod, port, admin, proc in nodes:
            if not check(f"{pod} up ({'cluster' if cluster else 'embedded store'})",
                         wait_http(f"http://127.0.0.1:{port}/ready", 30, proc), procs.log_tail(pod)):
                return

        routers = []
        router_bin = TARGET / "atrium-router"
        router_problem = None
        if not cluster:
            router_problem = "no coordinator and Postgres from scripts/services.sh to run one against"
        elif not router_bin.exists():
            router_problem = f"{router_bin} is not built"
        else:
            port, admin = free_port(), free_port()
            pod = f"{RELEASE}-atrium-router-0"
            proc = procs.start(pod, [str(router_bin)], {
                "ATRIUM_ROUTER_BIND": f"127.0.0.1:{port}", "ATRIUM_ROUTER_ADMIN_BIND": f"127.0.0.1:{admin}",
                "ATRIUM_COORDINATOR": common["ATRIUM_COORDINATOR"], "ATRIUM_LOG": "warn",
                "ATRIUM_LEASE_MS": common["ATRIUM_LEASE_MS"], "ATRIUM_ROUTER_DRAIN_MS": "1000",
                "ATRIUM_ROUTER_SHUTDOWN_MS": "3000"})
            if wait_http(f"http://127.0.0.1:{admin}/metrics", 20, proc):
                routers.append((pod, port, admin, proc))
            else:
                router_problem = ("atrium-router did not serve /metrics on ATRIUM_ROUTER_ADMIN_BIND within 20 s "
                                  f"(exit code {proc.poll()}); its log:\n{procs.log_tail(pod)}")

        # Prometheus: one-second scrapes, the chart's rules, labels as the ServiceMonitors set them.
        prom_port = free_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules_path)] if rules_path else [],
            "scrape_configs": [
                {"job_name": "atrium-node", "static_configs": [
                    {"targets": [f"127.0.0.1:{admin}"], "labels": {"namespace": NAMESPACE, "pod": pod}}
                    for pod, _, admin, _ in nodes]},
            ] + ([{"job_name": "atrium-router", "static_configs": [
                    {"targets": [f"127.0.0.1:{admin}"], "labels": {"namespace": NAMESPACE, "pod": pod}}
                    for pod, _, admin, _ in routers]}] if routers else []),
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        prom = procs.start("prometheus", [
            str(PROM_BIN / "prometheus"), f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}",
            "--storage.tsdb.retention.time=1h", "--log.level=warn"])
        api = f"http://127.0.0.1:{prom_port}/api/v1"
        if not check("Prometheus up", wait_http(f"http://127.0.0.1:{prom_port}/-/ready", 30, prom),
                     procs.log_tail("prometheus")):
            return

        # Load: sockets editing and moving cursors (through the router when there is one).
        entry = routers[0][1] if routers else nodes[0][1]
        # A socket that never says hello: the node closes it (4000) after the hello timeout.
        idle = misbehaving_socket(nodes[0][1])
        load = subprocess.run([str(TARGET / "atrium-loadtest"), "--url", f"http://127.0.0.1:{entry}",
                               "--users", "20", "--files", "2", "--duration", "6", "--warmup", "1",
                               "--editors", "0.5", "--edit-rate", "4", "--workers", "1"],
                              capture_output=True, text=True, timeout=120, cwd=workdir)
        idle.close()
        (workdir / "loadtest.log").write_text(load.stdout + load.stderr)
        check("atrium-loadtest ran (20 sockets, 2 files, 6 s)", load.returncode == 0,
              (load.stdout + load.stderr)[-2000:])
        exported = set()
        for pod, _, admin, _ in nodes:
            exported |= exported_names(f"http://127.0.0.1:{admin}/metrics")
        if routers:
            entry_url = f"http://127.0.0.1:{routers[0][1]}"
            # Refusals the router answers itself: a bad file id, a blocked path.
            for path in ("/api/files/bad.id", "/metrics"):
                http_get(entry_url + path)
            # A node dies without a word: until its membership lapses the router still sends
            # it some of the requests for any node, fails to connect, and retries elsewhere.
            victim = nodes[-1]
            victim[3].kill()
            victim[3].wait()
            for _ in range(12):
                try:
                    http_get(entry_url + "/health", timeout=3)
                except OSError:
                    pass
        time.sleep(3)  # the last scrapes and rule evaluations after the load

        router_exported = set()
        for pod, _, admin, _ in routers:
            router_exported |= exported_names(f"http://127.0.0.1:{admin}/metrics")
        exported_all = exported | router_exported | {"up"}

        def query(expr):
            url = f"{api}/query?" + urllib.parse.urlencode({"query": expr})
            status, body = http_get(url, timeout=10)
            data = json.loads(body)
            return data.get("status") == "success", data.get("data", {}).get("result", []), data.get("error", "")

        targets, variables = dashboard_queries()
        check(f"dashboards hold queries ({len(targets)} targets)", len(targets) > 30)
        for board, title, expr in targets:
            names = metric_names(expr)
            is_router = any(n.startswith("atrium_router_") for n in names) or 'job="atrium-router"' in expr
            if is_router and not routers:
                continue
            unknown = sorted(n for n in names if n not in exported_all)
            ok, result, err = query(substitute(expr))
            check(f"{board} / {title}: {expr[:90]}", not unknown and ok and result,
                  f"names nobody exports: {unknown}" if unknown else (err or "empty result"))
        for board, var, q in variables:
            m = re.fullmatch(r"label_values\((.*),\s*([a-z_]+)\)", q)
            if not m:
                check(f"{board} variable {var} is label_values()", False, q)
                continue
            if 'job="atrium-router"' in q and not routers:
                continue
            ok, result, err = query(substitute(m.group(1)))
            has = ok and any(m.group(2) in r["metric"] for r in result)
            check(f"{board} variable ${var} has values", has, err or "no series with that label")

        router_names = sorted({n for _, _, e in targets for n in metric_names(e) if n.startswith("atrium_router_")})
        if routers:
            missing = [n for n in router_names if n not in router_exported]
            check("the router exports every atrium_router_* name the router dashboard uses",
                  not missing, f"missing: {missing}")
        else:
            message = (f"router dashboard not verified: {router_problem}.\n"
                       f"Names it uses: {', '.join(router_names)}")
            if allowed("no-router"):
                skip("router dashboard queries", message)
            else:
                check("router dashboard queries checked against a running atrium-router", False, message)

        if rules_path:
            rules = yaml.safe_load(rules_path.read_text())["groups"]
            for group in rules:
                for rule in group["rules"]:
                    names = metric_names(rule["expr"])
                    unknown = sorted(n for n in names if n not in exported_all)
                    ok, _, err = query(rule["expr"])
                    check(f"rule {rule['alert']} evaluates and names exported metrics",
                          ok and not unknown, err or f"names nobody exports: {unknown}")
            status, body = http_get(f"{api}/rules")
            loaded = [r for g in json.loads(body)["data"]["groups"] for r in g["rules"]]
            bad = [f"{r['name']}: {r.get('health')} {r.get('lastError', '')}" for r in loaded
                   if r.get("health") != "ok"]
            check(f"Prometheus loaded and evaluated {len(loaded)} rules without error",
                  loaded and not bad, "\n".join(bad))
    finally:
        procs.stop_all()
        if database:
            subprocess.run([psql_bin(), os.environ["ATRIUM_TEST_DATABASE_URL"], "-q", "-c",
                            f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"], capture_output=True)


def main():
    started = time.time()
    workdir = Path(tempfile.mkdtemp(prefix="atrium-k8s-"))
    keep = os.environ.get("K8S_TEST_KEEP") == "1"
    try:
        section("dashboards are generated and the chart's copies match")
        proc = subprocess.run([sys.executable, str(K8S / "grafana" / "generate.py"), "--check"],
                              capture_output=True, text=True)
        check("k8s/grafana/generate.py --check", proc.returncode == 0, proc.stdout + proc.stderr)
        section("Dockerfile and .dockerignore")
        proc = subprocess.run([sys.executable, str(K8S / "check_dockerfile.py")], capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            if line.startswith("ok "):
                check(line[3:], True)
            elif line.startswith("FAIL "):
                check(line[5:], False)
        check("k8s/check_dockerfile.py ran", proc.returncode in (0, 1), proc.stderr)
        sets = values_sets()
        lint_all(sets)
        rendered = validate_all(sets, workdir)
        semantic_checks(rendered)
        refusals()
        rules = extract_rules(rendered, workdir)
        live(rules, workdir)
    finally:
        if keep:
            print(f"\n(kept {workdir})")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nk8s checks in {time.time() - started:.0f} s")
    if failed:
        print("failed:")
        for name in failed:
            print(f"  - {name}")
    print(f"{len(passed)} passed, {len(failed)} failed" + (f", {len(skipped)} skipped" if skipped else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
