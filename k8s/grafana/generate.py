#!/usr/bin/env python3
"""Writes the Grafana dashboards: k8s/grafana/{cluster,node,router}.json and the chart's copies
in k8s/helm/atrium/dashboards/ (the chart can only read files inside itself).

    python3 k8s/grafana/generate.py          # write
    python3 k8s/grafana/generate.py --check  # exit 1 if a written file differs

Every expression names only metrics the binaries export; k8s/test.sh evaluates each one
against a real Prometheus scraping real processes and fails on any empty answer.

Variables: $datasource, $namespace, and $pod (node and router dashboards). The scrape jobs are
atrium-node and atrium-router (the chart's ServiceMonitors set them with jobLabel).
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHART_COPY = HERE.parent / "helm" / "atrium" / "dashboards"

NODE = 'job="atrium-node", namespace="$namespace"'
NODE_POD = NODE + ', pod=~"$pod"'
ROUTER = 'job="atrium-router", namespace="$namespace"'
ROUTER_POD = ROUTER + ', pod=~"$pod"'
RI = "$__rate_interval"


class Board:
    def __init__(self, uid, title, description):
        self.uid, self.title, self.description = uid, title, description
        self.panels = []
        self.y = 0
        self.x = 0
        self.row_h = 0
        self.next_id = 1

    def row(self, title):
        self._newline()
        self.panels.append({"type": "row", "title": title, "id": self._id(), "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.y += 1

    def _newline(self):
        if self.x:
            self.y += self.row_h
            self.x = 0
            self.row_h = 0

    def _id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def _place(self, w, h):
        if self.x + w > 24:
            self._newline()
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def panel(self, kind, title, targets, unit="short", w=8, h=8, description="", stack=False):
        refs = "ABCDEFGH"
        panel = {
            "type": kind,
            "title": title,
            "id": self._id(),
            "description": description,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": self._place(w, h),
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [
                {"refId": refs[i], "expr": expr, "legendFormat": legend,
                 "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                for i, (expr, legend) in enumerate(targets)
            ],
        }
        if kind == "timeseries":
            panel["fieldConfig"]["defaults"]["custom"] = {
                "drawStyle": "line", "lineWidth": 1, "fillOpacity": 10 if stack else 0,
                "stacking": {"mode": "normal" if stack else "none"}}
            panel["options"] = {"legend": {"displayMode": "list", "placement": "bottom"},
                                "tooltip": {"mode": "multi"}}
        if kind == "stat":
            panel["options"] = {"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "value",
                                "graphMode": "area"}
        return panel

    def ts(self, title, targets, unit="short", w=8, h=8, description="", stack=False):
        self.panels.append(self.panel("timeseries", title, targets, unit, w, h, description, stack))

    def rate_by(self, title, metric, sel, by, **kw):
        """A time series of one counter's rate, a line per value of the label `by`."""
        self.ts(title, [(rate(metric, sel, by), "{{%s}}" % by)], **kw)

    def stat(self, title, expr, unit="short", w=4, h=4, description=""):
        self.panels.append(self.panel("stat", title, [(expr, "")], unit, w, h, description))

    def json(self, variables):
        return {
            "uid": self.uid,
            "title": self.title,
            "description": self.description,
            "tags": ["atrium"],
            "editable": True,
            "graphTooltip": 1,
            "refresh": "30s",
            "schemaVersion": 39,
            "time": {"from": "now-3h", "to": "now"},
            "timezone": "",
            "templating": {"list": variables},
            "annotations": {"list": []},
            "links": [{"type": "dashboards", "tags": ["atrium"], "asDropdown": True,
                       "title": "Atrium"}],
            "panels": self.panels,
        }


def datasource_var():
    return {"name": "datasource", "label": "Prometheus", "type": "datasource",
            "query": "prometheus", "current": {}, "hide": 0}


def query_var(name, label, query, multi=False):
    var = {"name": name, "label": label, "type": "query",
           "datasource": {"type": "prometheus", "uid": "${datasource}"},
           "query": {"query": query, "refId": name}, "definition": query,
           "refresh": 2, "sort": 1, "current": {}, "hide": 0}
    if multi:
        var.update({"multi": True, "includeAll": True, "allValue": ".*"})
    return var


def gauge(metric, sel, agg="sum"):
    """A gauge over the selection, summed (or `agg`, such as max, where every router
    reports the same fleet-wide value)."""
    return f"{agg}({metric}{{{sel}}})"


def rate(metric, sel, by=""):
    """A counter's rate, summed over the selection (optionally per label)."""
    group = f" by ({by}) " if by else ""
    return f"sum{group}(rate({metric}{{{sel}}}[{RI}]))"


def p(q, metric, sel, by=""):
    """A quantile of a histogram's rate, summed over the selection (optionally per label)."""
    group = f"le, {by}" if by else "le"
    return f"histogram_quantile({q}, sum by ({group}) (rate({metric}_bucket{{{sel}}}[{RI}])))"


def cluster():
    b = Board("atrium-cluster", "Atrium / Cluster",
              "The whole fleet: people, files, traffic, edit latency, failovers and errors.")
    b.row("Now")
    b.stat("Nodes up", f'sum(up{{{NODE}}})')
    b.stat("People", gauge("atrium_people", NODE))
    b.stat("Editors", gauge("atrium_editors", NODE))
    b.stat("Open files (rooms)", gauge("atrium_rooms", NODE))
    b.stat("Sockets", gauge("atrium_connections", NODE))
    b.stat("Edit p99", p(0.99, "atrium_patch_durable_seconds", NODE), unit="s")
    b.row("Traffic")
    b.ts("Messages a second", [
        (rate("atrium_messages_received_total", NODE), "in"),
        (rate("atrium_messages_sent_total", NODE), "out"),
        (rate("atrium_patches_acked_total", NODE), "patches acked"),
    ], unit="ops", description="Socket messages; a room message counts once per socket it reaches.")
    b.ts("Socket bytes a second", [
        (rate("atrium_received_bytes_total", NODE), "in"),
        (rate("atrium_sent_bytes_total", NODE), "out"),
    ], unit="Bps")
    b.ts("People and files per node", [
        (f"sum by (pod) (atrium_people{{{NODE}}})", "{{pod}} people"),
        (f"sum by (pod) (atrium_rooms{{{NODE}}})", "{{pod}} files"),
    ])
    b.row("Edit relay latency")
    b.ts("Edit: applied to durable and acked", [
        (p(0.5, "atrium_patch_durable_seconds", NODE), "p50"),
        (p(0.99, "atrium_patch_durable_seconds", NODE), "p99"),
        (p(0.999, "atrium_patch_durable_seconds", NODE), "p99.9"),
    ], unit="s", w=12, description="An edit is relayed to the room at once and acked once "
       "durable: this is what an editor waits for.")
    b.ts("Edit p99 per node", [
        (p(0.99, "atrium_patch_durable_seconds", NODE, "pod"), "{{pod}}"),
    ], unit="s", w=12)
    b.row("Failovers and lease moves")
    b.ts("Lease operations a second", [
        (f'sum by (operation) (rate(atrium_coordinator_operations_total{{{NODE}, operation=~"acquire|release"}}[{RI}]))',
         "{{operation}}"),
    ], unit="ops", description="Acquires are files taken by a node: after a failover, a drain "
       "or a rebalance.")
    b.ts("Node restarts", [
        (f"sum by (pod) (resets(atrium_journal_commits_total{{{NODE}}}[1h]))", "{{pod}}"),
    ], description="Counter resets in the last hour: each is a node process that started again.")
    b.ts("Nodes up", [(gauge("up", NODE), "up"), (f"count(up{{{NODE}}})", "scraped")])
    b.row("Errors")
    b.rate_by("Rejected messages by code", "atrium_rejects_total", NODE, "code", unit="ops", stack=True)
    b.rate_by("Sockets closed by code", "atrium_closes_total", NODE, "code", unit="ops", stack=True)
    b.rate_by("HTTP answers by status", "atrium_http_requests_total", NODE, "status", unit="reqps", stack=True)
    b.ts("Limits", [
        (rate("atrium_rate_limited_total", NODE), "rate limited"),
        (rate("atrium_queue_overflows_total", NODE), "queue overflows (4008)"),
        (rate("atrium_presence_dropped_total", NODE), "presence dropped"),
    ], unit="ops", w=24)
    b.row("Webhooks")
    b.ts("Webhook messages a second", [
        (rate("atrium_webhook_delivered_total", NODE), "delivered"),
        (rate("atrium_webhook_retries_total", NODE), "tries failed (retried)"),
        (rate("atrium_webhook_failed_total", NODE), "failed for good"),
        (rate("atrium_webhook_dropped_total", NODE), "dropped (outbox full)"),
    ], unit="ops", description="Sent by the owner of each file; a failed try is retried with "
       "backoff for up to ATRIUM_WEBHOOK_RETRY_FOR_MS (docs/webhooks.md).")
    b.ts("Webhook outbox", [
        (gauge("atrium_webhook_outbox_messages", NODE, "max"), "waiting"),
        (gauge("atrium_webhook_failed_messages", NODE, "max"), "failed, kept"),
    ], description="Fleet-wide, read from the store by every node (hence max, not sum). "
       "A waiting count that only grows is an endpoint down or too slow.")
    b.ts("Webhook delivery latency", [
        (p(0.5, "atrium_webhook_delivery_seconds", NODE), "p50"),
        (p(0.99, "atrium_webhook_delivery_seconds", NODE), "p99"),
    ], unit="s", description="From the event to its delivery, debounce and retries included.")
    return b.json([datasource_var(),
                   query_var("namespace", "Namespace", 'label_values(atrium_connections{job="atrium-node"}, namespace)')])


def node():
    b = Board("atrium-node", "Atrium / Node",
              "One or more room nodes: sockets, rooms, latency of each stage, store, coordinator.")
    b.row("Load")
    b.ts("Sockets and people", [
        (f"sum by (pod) (atrium_connections{{{NODE_POD}}})", "{{pod}} sockets"),
        (f"sum by (pod) (atrium_people{{{NODE_POD}}})", "{{pod}} people"),
        (f"sum by (pod) (atrium_editors{{{NODE_POD}}})", "{{pod}} editors"),
    ])
    b.ts("Rooms in memory", [(f"sum by (pod) (atrium_rooms{{{NODE_POD}}})", "{{pod}}")])
    b.ts("Messages a second by type", [
        (rate("atrium_messages_received_total", NODE_POD, "type"), "in {{type}}"),
        (rate("atrium_messages_sent_total", NODE_POD, "type"), "out {{type}}"),
    ], unit="ops")
    b.ts("Socket bytes a second", [
        (rate("atrium_received_bytes_total", NODE_POD, "pod"), "{{pod}} in"),
        (rate("atrium_sent_bytes_total", NODE_POD, "pod"), "{{pod}} out"),
    ], unit="Bps")
    b.rate_by("Patches acked a second", "atrium_patches_acked_total", NODE_POD, "pod", unit="ops")
    b.rate_by("HTTP answers by status", "atrium_http_requests_total", NODE_POD, "status", unit="reqps")
    b.row("Latency")
    b.ts("Edit: applied to durable", [
        (p(0.5, "atrium_patch_durable_seconds", NODE_POD, "pod"), "{{pod}} p50"),
        (p(0.99, "atrium_patch_durable_seconds", NODE_POD, "pod"), "{{pod}} p99"),
    ], unit="s")
    b.ts("Journal group commit", [
        (p(0.5, "atrium_journal_commit_seconds", NODE_POD, "pod"), "{{pod}} p50"),
        (p(0.99, "atrium_journal_commit_seconds", NODE_POD, "pod"), "{{pod}} p99"),
        (rate("atrium_journal_commits_total", NODE_POD, "pod"), "{{pod}} commits/s"),
    ], unit="s", description="One transaction and one sync per commit; commits/s shares the axis.")
    b.ts("Presence tick", [
        (p(0.99, "atrium_presence_tick_seconds", NODE_POD, "pod"), "{{pod}} p99"),
    ], unit="s")
    b.row("Store and coordinator")
    b.ts("Snapshots", [
        (rate("atrium_snapshots_total", NODE_POD, "pod"), "{{pod}} a second"),
        (p(0.99, "atrium_snapshot_seconds", NODE_POD, "pod"), "{{pod}} p99 seconds"),
    ])
    b.rate_by("Coordinator calls a second", "atrium_coordinator_operations_total", NODE_POD, "operation", unit="ops", w=16)
    b.row("Problems")
    b.rate_by("Rejects by code", "atrium_rejects_total", NODE_POD, "code", unit="ops")
    b.rate_by("Closes by code", "atrium_closes_total", NODE_POD, "code", unit="ops")
    b.ts("Limits", [
        (rate("atrium_rate_limited_total", NODE_POD, "pod"), "{{pod}} rate limited"),
        (rate("atrium_presence_dropped_total", NODE_POD, "pod"), "{{pod}} presence dropped"),
        (rate("atrium_queue_overflows_total", NODE_POD, "pod"), "{{pod}} queue overflows"),
    ], unit="ops")
    return b.json([
        datasource_var(),
        query_var("namespace", "Namespace", 'label_values(atrium_connections{job="atrium-node"}, namespace)'),
        query_var("pod", "Node", 'label_values(atrium_connections{job="atrium-node", namespace="$namespace"}, pod)', multi=True),
    ])


# The router's metrics (router/src/metrics.rs): requests and sockets by node, routing decisions
# by kind, upstream errors by node and kind, refusals by reason, proxy latency, ring and
# membership. k8s/test.sh checks each name against a running atrium-router.
def router():
    b = Board("atrium-router", "Atrium / Router",
              "The routers: where requests and sockets go, how they were routed, upstream errors "
              "and the latency the router adds.")
    b.row("Now")
    b.stat("Routers up", gauge("up", ROUTER))
    b.stat("Nodes on the ring", gauge("atrium_router_ring_members", ROUTER_POD, "max"))
    b.stat("Live nodes", gauge("atrium_router_live_members", ROUTER_POD, "max"))
    b.stat("Proxied sockets", gauge("atrium_router_sockets", ROUTER_POD))
    b.stat("Proxy p99", p(0.99, "atrium_router_proxy_latency_seconds", ROUTER_POD), unit="s")
    b.stat("Known lease holders", gauge("atrium_router_lease_holders", ROUTER_POD, "max"))
    b.row("Traffic")
    b.rate_by("Requests a second by node", "atrium_router_requests_total", ROUTER_POD, "node", unit="reqps", stack=True, description="Forwarded requests, socket upgrades included.")
    b.ts("Open proxied sockets by node", [
        (f"sum by (node) (atrium_router_sockets{{{ROUTER_POD}}})", "{{node}}"),
    ], stack=True)
    b.rate_by("Sockets opened a second by node", "atrium_router_sockets_opened_total", ROUTER_POD, "node", unit="ops", stack=True)
    b.rate_by("Routing decisions a second", "atrium_router_routing_decisions_total", ROUTER_POD, "kind", unit="ops", description="Lease holder known, ring owner, any node, or fallback.")
    b.ts("Proxy latency (arrival to the node's response header)", [
        (p(0.5, "atrium_router_proxy_latency_seconds", ROUTER_POD), "p50"),
        (p(0.99, "atrium_router_proxy_latency_seconds", ROUTER_POD), "p99"),
        (p(0.99, "atrium_router_proxy_latency_seconds", ROUTER_POD, "pod"), "{{pod}} p99"),
    ], unit="s", w=16)
    b.row("Problems")
    b.ts("Upstream errors a second", [
        (rate("atrium_router_upstream_errors_total", ROUTER_POD, "node, kind"), "{{node}} {{kind}}"),
    ], unit="ops", description="Failures reaching or talking to a node (connect, proxy).")
    b.ts("Answered by the router itself", [
        (rate("atrium_router_refused_total", ROUTER_POD, "reason"), "{{reason}}"),
        (rate("atrium_router_moved_total", ROUTER_POD), "409 moved from nodes"),
    ], unit="ops")
    b.ts("Ring and leases", [
        (gauge("atrium_router_ring_members", ROUTER_POD, "max"), "on the ring"),
        (gauge("atrium_router_live_members", ROUTER_POD, "max"), "live (draining included)"),
        (rate("atrium_router_membership_changes_total", ROUTER_POD), "membership changes/s"),
        (rate("atrium_router_lease_events_total", ROUTER_POD), "lease hand-overs/s"),
    ])
    return b.json([
        datasource_var(),
        query_var("namespace", "Namespace", 'label_values(atrium_router_ring_members{job="atrium-router"}, namespace)'),
        query_var("pod", "Router", 'label_values(atrium_router_ring_members{job="atrium-router", namespace="$namespace"}, pod)', multi=True),
    ])


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, build in (("cluster", cluster), ("node", node), ("router", router)):
        text = json.dumps(build(), indent=2) + "\n"
        for folder in (HERE, CHART_COPY):
            path = folder / f"{name}.json"
            if check:
                if not path.exists() or path.read_text() != text:
                    stale.append(str(path))
            else:
                folder.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    if stale:
        print("stale dashboards (run python3 k8s/grafana/generate.py):", *stale, sep="\n  ")
        sys.exit(1)


if __name__ == "__main__":
    main()
