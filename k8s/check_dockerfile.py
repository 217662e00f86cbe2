#!/usr/bin/env python3
"""A parser-level check of k8s/Dockerfile and .dockerignore, for machines without a Docker
daemon (no image can be built here). Prints `ok NAME` or `FAIL NAME: why` per check and exits 1
on any failure.

It parses the Dockerfile as BuildKit does (parser directives, comments, line continuations,
JSON or shell form) and checks: known instructions; ARGs before the first FROM are declared
before use; stage names are unique and every --from names an earlier stage; every COPY source
from the context exists and is not excluded by .dockerignore; the context holds every
workspace member and every file the crates embed with include_str!/include_bytes!; the build
stage installs cmake and builds both binaries with --locked; the runtime stage copies both
binaries to the paths the Helm chart starts, runs as a non-root numeric user, and has an
exec-form ENTRYPOINT.
"""

import fnmatch
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "k8s" / "Dockerfile"
IGNORE = ROOT / ".dockerignore"
INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
                "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
                "MAINTAINER"}

failures = 0


def result(name, ok, why=""):
    global failures
    if ok:
        print(f"ok Dockerfile: {name}")
    else:
        failures += 1
        print(f"FAIL Dockerfile: {name}: {why}")


def parse(text):
    """[(line number, INSTRUCTION, flags dict, args string)]"""
    lines = text.splitlines()
    out, buf, start = [], "", 0
    escape = "\\"
    for i, raw in enumerate(lines, 1):
        m = re.match(r"#\s*escape\s*=\s*(\S)", raw)
        if m and not out and not buf:
            escape = m.group(1)
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue  # comments inside a continued instruction are dropped
        if not buf:
            start = i
        if stripped.endswith(escape):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        word, _, rest = buf.partition(" ")
        flags = {}
        rest = rest.strip()
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            key, _, value = flag[2:].partition("=")
            flags.setdefault(key, []).append(value)
            rest = rest.strip()
        out.append((start, word.upper(), flags, rest))
        buf = ""
    if buf:
        out.append((start, "<unterminated>", {}, buf))
    return out


def ignore_patterns():
    pats = []
    for line in IGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        pats.append((neg, line.lstrip("!").strip("/")))
    return pats


def pattern_re(pat):
    out = ""
    i = 0
    while i < len(pat):
        if pat.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pat.startswith("**", i):
            out += ".*"
            i += 2
        elif pat[i] == "*":
            out += "[^/]*"
            i += 1
        elif pat[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pat[i])
            i += 1
    return re.compile(out + "(?:/.*)?$")


def ignored(rel, pats):
    """Docker's rule: the last matching pattern wins; a pattern matching a parent folder
    excludes everything under it."""
    state = False
    for neg, pat in pats:
        if pattern_re(pat).match(rel):
            state = not neg
    return state


def embedded_files():
    """Files outside each crate that its sources embed, relative to the repository root."""
    found = set()
    for src in ROOT.glob("*/src/**/*.rs"):
        if "target" in src.parts:
            continue
        text = src.read_text()
        for m in re.finditer(r'include_(?:str|bytes)!\(\s*(?:concat!\(\s*)?"([^"]+)"', text):
            path = (src.parent / m.group(1)).resolve()
            try:
                found.add(str(path.relative_to(ROOT)))
            except ValueError:
                pass
    return sorted(found)


def main():
    text = DOCKERFILE.read_text()
    instrs = parse(text)
    pats = ignore_patterns()
    result("every line is a known instruction", all(w in INSTRUCTIONS for _, w, _, _ in instrs),
           [(n, w) for n, w, _, _ in instrs if w not in INSTRUCTIONS])

    # Global ARGs and stages.
    global_args = set()
    stages = []
    for n, word, flags, args in instrs:
        if word == "ARG" and not stages:
            global_args.add(args.split("=")[0])
        if word == "FROM":
            parts = args.split()
            image = parts[0]
            for var in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", image):
                result(f"FROM line {n} uses a declared ARG", var in global_args, var)
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            stages.append({"name": name, "line": n, "instrs": []})
        elif stages:
            stages[-1]["instrs"].append((n, word, flags, args))
    names = [s["name"] for s in stages if s["name"]]
    result("stages are named and unique", len(names) == len(stages) and len(set(names)) == len(names), names)
    result("multi-stage (a build stage and a runtime stage)", len(stages) >= 2, len(stages))

    context_sources = []
    for i, stage in enumerate(stages):
        earlier = [s["name"] for s in stages[:i]]
        for n, word, flags, args in stage["instrs"]:
            if word in ("COPY", "ADD"):
                froms = flags.get("from", [])
                if args.startswith("["):
                    parts = json.loads(args)
                else:
                    parts = args.split()
                srcs = parts[:-1]
                if froms:
                    src_stage = froms[0]
                    result(f"line {n}: --from={src_stage} is an earlier stage", src_stage in earlier
                           or src_stage.isdigit() and int(src_stage) < i, earlier)
                else:
                    context_sources += [(n, s) for s in srcs]
            if word == "RUN":
                for m in re.finditer(r"--mount=\S*from=([^,\s]+)", args):
                    result(f"line {n}: mount from an earlier stage", m.group(1) in earlier)

    for n, src in context_sources:
        path = ROOT / src
        matches = list(ROOT.glob(src)) if any(c in src for c in "*?[") else ([path] if path.exists() else [])
        result(f"COPY {src} (line {n}) exists in the context", bool(matches), "no such file")
        rel = src.strip("./") or "."
        result(f"COPY {src} (line {n}) is not excluded by .dockerignore", not ignored(rel, pats),
               "excluded")

    copied = [src.strip("./").rstrip("/") for _, src in context_sources]

    def in_context(rel):
        return any(rel == c or rel.startswith(c + "/") for c in copied) and not ignored(rel, pats)

    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["members"]
    for member in workspace:
        result(f"workspace member {member} is in the build context", in_context(member + "/Cargo.toml"))
    for rel in ["Cargo.toml", "Cargo.lock"]:
        result(f"{rel} is in the build context", in_context(rel))
    for rel in embedded_files():
        result(f"embedded file {rel} is in the build context", in_context(rel))
    for rel in ["target", ".git", ".services", "web/node_modules"]:
        result(f".dockerignore keeps {rel} out", ignored(rel, pats))

    build, runtime = stages[0], stages[-1]
    runs = " ".join(a for _, w, _, a in build["instrs"] if w == "RUN")
    result("the build stage installs cmake (pingora)", re.search(r"apt-get install[^&]*\bcmake\b", runs), runs[:200])
    result("the build stage builds both binaries, --release --locked",
           "--release" in runs and "--locked" in runs and "-p atrium-node" in runs and "-p atrium-router" in runs)
    copies = [a for _, w, f, a in runtime["instrs"] if w == "COPY"]
    chart = "\n".join(p.read_text() for p in (ROOT / "k8s" / "helm" / "atrium" / "templates").glob("*.yaml"))
    for binary in ("atrium-node", "atrium-router"):
        result(f"the runtime stage has /usr/local/bin/{binary}",
               any(binary in c and c.split()[-1].rstrip("/") in ("/usr/local/bin", f"/usr/local/bin/{binary}")
                   for c in copies))
        result(f"the chart starts /usr/local/bin/{binary}", f'"/usr/local/bin/{binary}"' in chart)
    users = [a for _, w, _, a in runtime["instrs"] if w == "USER"]
    result("the runtime stage runs as a non-root numeric user",
           users and re.fullmatch(r"[1-9][0-9]*(:[0-9]+)?", users[-1]), users)
    values_uid = re.search(r"runAsUser:\s*(\d+)", (ROOT / "k8s/helm/atrium/values.yaml").read_text())
    result("the image's user is the chart's runAsUser",
           users and values_uid and users[-1].split(":")[0] == values_uid.group(1))
    entry = [a for _, w, _, a in runtime["instrs"] if w == "ENTRYPOINT"]
    try:
        ok = entry and isinstance(json.loads(entry[-1]), list)
    except json.JSONDecodeError:
        ok = False
    result("ENTRYPOINT in exec form (signals reach the process)", ok, entry)
    runtime_image = runtime_from = [a for n, w, _, a in instrs if w == "FROM"][-1]
    result("the runtime image is not the build image", "RUST" not in runtime_from.upper(), runtime_image)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
