#!/usr/bin/env bash
# Checks the Kubernetes packaging for real (see k8s/test.py for the list): the chart rendered
# and linted by a real Helm, the manifests validated against the Kubernetes 1.30 schemas, the
# image recipe parsed, the alert rules checked by promtool, and every dashboard query
# evaluated by a real Prometheus scraping real nodes under load on 127.0.0.1.
#
# Tools are installed once into .services/k8s-tools (override with K8S_TOOLS), from the
# package registries only:
# - Helm: no helm binary is published on them, so Helm 4 comes as a library inside PyPI's
#   helm-python-sdk (used through its Python API: Chart.load, render, lint, validate_schema);
# - kubernetes-validate from PyPI: the Kubernetes OpenAPI schemas, offline;
# - prometheus and promtool: Debian's prometheus package, downloaded and unpacked with
#   dpkg -x (no service is installed or started by the package).
# The live part needs target/debug/atrium-node and atrium-loadtest (built here if missing) and,
# for cluster mode with a router, the services of scripts/services.sh (ATRIUM_TEST_* set).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${K8S_TOOLS:-$PWD/.services/k8s-tools}"
HELM_SDK=0.2.2
KUBERNETES_VALIDATE=1.37.0
log() { printf '[k8s] %s\n' "$*" >&2; }

mkdir -p "$TOOLS"
stamp="$TOOLS/venv/.installed-helm-$HELM_SDK-kv-$KUBERNETES_VALIDATE"
if [ ! -f "$stamp" ]; then
    log "installing helm-python-sdk $HELM_SDK and kubernetes-validate $KUBERNETES_VALIDATE (PyPI) into $TOOLS/venv"
    rm -rf "$TOOLS/venv"
    python3 -m venv "$TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check \
        "helm-python-sdk==$HELM_SDK" "kubernetes-validate==$KUBERNETES_VALIDATE" "PyYAML>=6"
    touch "$stamp"
fi

if [ ! -x "$TOOLS/prom/usr/bin/prometheus" ] || [ ! -x "$TOOLS/prom/usr/bin/promtool" ]; then
    log "downloading Debian's prometheus package into $TOOLS"
    mkdir -p "$TOOLS/deb"
    rm -f "$TOOLS"/deb/prometheus_*.deb
    if ! (cd "$TOOLS/deb" && apt-get download prometheus >/dev/null 2>&1); then
        apt-get update -q >/dev/null 2>&1 || true
        (cd "$TOOLS/deb" && apt-get download prometheus >/dev/null)
    fi
    rm -rf "$TOOLS/prom"
    dpkg -x "$TOOLS"/deb/prometheus_*.deb "$TOOLS/prom"
fi

# The binaries the live part runs. The router is optional here (it may not build yet);
# test.py reports what it could not check without it.
if [ "${K8S_TEST_NO_BUILD:-}" != 1 ]; then
    log "cargo build (atrium-node, atrium-loadtest, atrium-router)"
    cargo build --locked -q -p atrium-node -p atrium-loadtest
    cargo build --locked -q -p atrium-router || log "atrium-router did not build; the router checks will say so"
fi

K8S_TOOLS="$TOOLS" exec "$TOOLS/venv/bin/python" k8s/test.py "$@"
