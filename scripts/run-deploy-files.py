#!/usr/bin/env python3
"""Runs what the deploy files ship, the way a container runtime would, with the real binary.

No Docker engine or cluster is needed. For every kustomization under deploy/kubernetes
(rendered with `kubectl kustomize`) and for each compose project (docker-compose.yml, and
with docker-compose.replicas.yml over it), each pod or service becomes a process in its own
network namespace, joined to the others by a bridge, with the names of the Services (or
compose services) in its /etc/hosts. Each runs its effective command line: the image's
ENTRYPOINT and CMD (from the Dockerfile) as the manifest's command/args or the compose
entrypoint/command replace them, with the image's ENV under the file's env, as the image's
or the file's user, on a read-only root with its volumes and tmpfs mounts empty and writable.
`larder` is the binary given, mounted at /usr/local/bin/larder as the image installs it;
`redis:` images run this machine's redis-server, and the OpenTelemetry Collector image an
OTLP/HTTP receiver (scripts/otlp_receiver.py). Compose runs once with the tracing profile
(and OTEL_EXPORTER_OTLP_ENDPOINT set as its comment says), once without it.

Then every probe (Kubernetes startup, liveness, readiness) and every compose healthcheck
must pass, a few requests check that the pieces found each other, and every process must
exit 0 on its stop signal. Usage: run-deploy-files.py LARDER_BINARY KUBECTL (as root).
"""
import base64
import glob
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRIDGE_NS = "larder-deploy-switch"
SUBNET = "10.213.0"


def fail(message):
    print(f"run-deploy-files: {message}", file=sys.stderr)
    sys.exit(1)


# ---- the image ------------------------------------------------------------------------------

def image_from_dockerfile(path):
    """ENV, USER, ENTRYPOINT, CMD and HEALTHCHECK of the Dockerfile's last stage."""
    text = open(path).read().replace("\\\n", " ")
    stage = re.split(r"(?m)^FROM ", text)[-1]
    image = {"env": {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
             "user": "0:0", "entrypoint": [], "cmd": [], "healthcheck": None, "workdir": "/"}
    for line in stage.splitlines():
        word, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if word == "ENV":
            for item in shlex.split(rest):
                name, _, value = item.partition("=")
                image["env"][name] = value
        elif word == "WORKDIR":
            image["workdir"] = rest
        elif word == "USER":
            image["user"] = rest
        elif word == "ENTRYPOINT":
            image["entrypoint"] = json.loads(rest)
        elif word == "CMD":
            image["cmd"] = json.loads(rest)
        elif word == "HEALTHCHECK":
            image["healthcheck"] = json.loads(rest.split(" CMD ", 1)[1])
    if not image["entrypoint"]:
        fail(f"{path}: no ENTRYPOINT in the last stage")
    return image


# ---- what runs --------------------------------------------------------------------------------

class Unit:
    """One process as the runtime would start it: a pod's container or a compose service."""

    def __init__(self, name, argv, env, user, mounts, hostnames, workdir):
        self.name, self.argv, self.env, self.user, self.workdir = name, argv, env, user, workdir
        self.mounts = mounts          # writable empty paths (volumes, emptyDirs, tmpfs)
        self.hostnames = hostnames    # names that resolve to this unit
        self.checks = []              # (description, argv run inside the unit) that must exit 0
        self.depends = []             # units started (and healthy) before this one (compose depends_on)
        self.files = {}               # read-only folders (configMap, secret): path -> {name: text}
        self.file_folders = {}        # path -> the folder on this machine that shows those files
        self.address = None
        self.process = None


# What the redis image's Dockerfile says: its entrypoint runs the command given, in /data.
REDIS_IMAGE = {"entrypoint": ["docker-entrypoint.sh"], "cmd": ["redis-server"], "user": "0:0", "healthcheck": None, "workdir": "/data"}


# The OpenTelemetry Collector image's stand-in: an OTLP/HTTP receiver on its port 4318 that
# shows what it got at GET /spans (scripts/otlp_receiver.py, with the tools venv's python, as
# root: that python is a link into root's own folder).
COLLECTOR_IMAGE = {"entrypoint": [sys.executable, os.path.join(ROOT, "scripts/otlp_receiver.py"), "--listen", "0.0.0.0:4318"],
                   "cmd": [], "user": "0:0", "healthcheck": None, "workdir": "/"}


def larder_or_redis(image, name):
    if image.startswith("larder:"):
        return "larder"
    if image.startswith("redis:"):
        return "redis"
    if image.startswith("otel/opentelemetry-collector:"):
        return "collector"
    fail(f"{name}: no stand-in for image {image}")


def collector_config_takes_otlp_http(project, service, name):
    """The collector's configuration (a compose config) receives OTLP/HTTP on 4318 for its traces pipeline."""
    targets = {c["target"]: project["configs"][c["source"]]["content"] for c in service.get("configs", [])}
    config = yaml.safe_load(targets.get("/etc/otelcol/config.yaml") or "{}")
    endpoint = (((config.get("receivers") or {}).get("otlp") or {}).get("protocols") or {}).get("http", {}).get("endpoint", "")
    traces = ((config.get("service") or {}).get("pipelines") or {}).get("traces") or {}
    if not endpoint.endswith(":4318") or "otlp" not in traces.get("receivers", []):
        fail(f"{name}: its /etc/otelcol/config.yaml does not receive OTLP/HTTP on 4318 for traces")


def projected_files(volume, documents, namespace):
    """The files a configMap or secret volume shows: the rendered object's data, or for a
    Secret the operator makes (not in the rendered output) a random value per item."""
    if "configMap" in volume:
        kind, name = "ConfigMap", volume["configMap"]["name"]
    elif "secret" in volume:
        kind, name = "Secret", volume["secret"]["secretName"]
    else:
        fail(f"volume {volume['name']}: only emptyDir, configMap and secret are modelled")
    found = [d for d in documents if d["kind"] == kind and d["metadata"]["name"] == name
             and d["metadata"].get("namespace", "default") == namespace]
    if found:
        data = dict(found[0].get("data") or {})
        if kind == "Secret":
            data = {k: base64.b64decode(v).decode() for k, v in data.items()}
    elif kind == "Secret":
        items = (volume["secret"].get("items") or [])
        if not items:
            fail(f"secret {name} is made by the operator: its volume must list the items it needs")
        data = {item["key"]: secrets.token_hex(32) for item in items}
    else:
        fail(f"volume {volume['name']}: ConfigMap {name} is not in the rendered output")
    items = (volume.get("configMap") or volume.get("secret")).get("items")
    return {item["path"]: data[item["key"]] for item in items} if items else data


def kubernetes_units(documents, image):
    """A unit per container of every Deployment, named by the Services that select its pod."""
    services = [d for d in documents if d["kind"] == "Service"]
    units = []
    for deployment in (d for d in documents if d["kind"] == "Deployment"):
        namespace = deployment["metadata"].get("namespace", "default")
        pod = deployment["spec"]["template"]
        labels = pod["metadata"].get("labels", {})
        names = []
        for service in services:
            selector = service["spec"].get("selector", {})
            if selector and all(labels.get(k) == v for k, v in selector.items()):
                # Names only: a Service whose port differs from its target (Larder's, 80 to
                # 8080) is not called by anything here.
                n = service["metadata"]["name"]
                names += [n, f"{n}.{namespace}", f"{n}.{namespace}.svc", f"{n}.{namespace}.svc.cluster.local"]
        spec = pod["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for container in spec["containers"]:
            kind = larder_or_redis(container["image"], container["name"])
            base = image if kind == "larder" else {**REDIS_IMAGE, "env": {"PATH": image["env"]["PATH"]}}
            # Kubernetes: command replaces ENTRYPOINT (and drops CMD), args replace CMD.
            if "command" in container:
                argv = container["command"] + container.get("args", [])
            else:
                argv = base["entrypoint"] + container.get("args", base["cmd"])
            env = dict(base["env"])
            for variable in container.get("env", []):
                if "value" not in variable:
                    fail(f"{container['name']}: env {variable['name']} has no literal value")
                env[variable["name"]] = str(variable["value"])
            context = {**spec.get("securityContext", {}), **container.get("securityContext", {})}
            uid, gid = base["user"].split(":")
            user = f"{context.get('runAsUser', uid)}:{context.get('runAsGroup', gid)}"
            mounts, files = [], {}
            for mount in container.get("volumeMounts", []):
                volume = volumes[mount["name"]]
                if "emptyDir" in volume:
                    mounts.append(mount["mountPath"])
                else:
                    files[mount["mountPath"]] = projected_files(volume, documents, namespace)
            unit = Unit(f"{deployment['metadata']['name']}/{container['name']}", argv, env, user, mounts, names, base["workdir"])
            unit.files = files
            ports = {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                get = container.get(probe, {}).get("httpGet")
                if get:
                    port = ports.get(get["port"], get["port"])
                    unit.checks.append((f"{probe} {get['path']}", ["curl", "-fsS", "-o", "/dev/null", "--max-time", "2",
                                                                   f"http://{{address}}:{port}{get['path']}"]))
                tcp = container.get(probe, {}).get("tcpSocket")
                if tcp:
                    port = ports.get(tcp["port"], tcp["port"])
                    unit.checks.append((f"{probe} tcp {port}", ["python3", "-c", "import socket, sys; "
                                                                f"socket.create_connection((sys.argv[1], {port}), 2)", "{address}"]))
                exec_probe = container.get(probe, {}).get("exec")
                if exec_probe:
                    unit.checks.append((f"{probe} exec", exec_probe["command"]))
            units.append(unit)
    return units


def interpolate(value, given):
    """Compose interpolation with only `given` set in the environment: `${VAR:-default}` is
    VAR's value when given and not empty, else default."""
    if isinstance(value, str):
        return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}", lambda m: given.get(m.group(1)) or m.group(2) or "", value)
    if isinstance(value, list):
        return [interpolate(v, given) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, given) for k, v in value.items()}
    return value


def merge(base, override):
    """Compose's merge of an override file: mappings merge, everything else is replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = merge(base[key], value) if key in base else value
        return merged
    return override


def compose_units(paths, image, profiles=(), given=None):
    """The services `docker compose --profile P… up` starts, with `given` in the environment."""
    project = {}
    for path in paths:
        project = merge(project, yaml.safe_load(open(os.path.join(ROOT, path))))
    project = interpolate(project, given or {})
    units = []
    for name, service in project["services"].items():
        if service.get("profiles") and not set(service["profiles"]) & set(profiles):
            continue
        kind = larder_or_redis(service["image"], name)
        stand_in = {"redis": REDIS_IMAGE, "collector": COLLECTOR_IMAGE}.get(kind)
        base = image if kind == "larder" else {**stand_in, "env": {"PATH": image["env"]["PATH"]}}
        if kind == "collector":
            collector_config_takes_otlp_http(project, service, name)
        # Compose: entrypoint replaces ENTRYPOINT and drops CMD; command replaces CMD.
        entrypoint = service.get("entrypoint", base["entrypoint"])
        cmd = service.get("command", [] if "entrypoint" in service else base["cmd"])
        argv = (entrypoint if isinstance(entrypoint, list) else shlex.split(entrypoint)) + (cmd if isinstance(cmd, list) else shlex.split(cmd))
        env = dict(base["env"])
        env.update({k: str(v) for k, v in (service.get("environment") or {}).items()})
        user = service.get("user", base.get("user", image["user"]))
        if ":" not in user:
            user = f"{user}:{user}"
        mounts = [v.split(":")[1] for v in service.get("volumes", [])] + [t.split(":")[0] for t in service.get("tmpfs", [])]
        if not service.get("read_only"):
            fail(f"{name}: not read_only")
        unit = Unit(name, argv, env, user, mounts, [name], base["workdir"])
        test = (service.get("healthcheck") or {}).get("test") or (["CMD"] + base["healthcheck"] if base.get("healthcheck") else None)
        if test:
            if test[0] != "CMD":
                fail(f"{name}: healthcheck {test[0]} is not modelled")
            unit.checks.append(("healthcheck " + " ".join(test[1:]), test[1:]))
        unit.depends = list(service.get("depends_on") or [])
        units.append(unit)
    return units


# ---- running ----------------------------------------------------------------------------------

def run(*argv, check=True, **kwargs):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kwargs)


def namespace_name(index):
    return f"larder-deploy-{index}"


def set_up_network(units):
    run("ip", "netns", "add", BRIDGE_NS)
    run("ip", "-n", BRIDGE_NS, "link", "add", "br0", "type", "bridge")
    run("ip", "-n", BRIDGE_NS, "link", "set", "br0", "up")
    for index, unit in enumerate(units):
        ns = namespace_name(index)
        run("ip", "netns", "add", ns)
        run("ip", "link", "add", f"ld{index}", "type", "veth", "peer", "name", f"ld{index}b")
        run("ip", "link", "set", f"ld{index}", "netns", ns)
        run("ip", "link", "set", f"ld{index}b", "netns", BRIDGE_NS)
        run("ip", "-n", BRIDGE_NS, "link", "set", f"ld{index}b", "master", "br0")
        run("ip", "-n", BRIDGE_NS, "link", "set", f"ld{index}b", "up")
        unit.address = f"{SUBNET}.{index + 2}"
        run("ip", "-n", ns, "addr", "add", f"{unit.address}/24", "dev", f"ld{index}")
        run("ip", "-n", ns, "link", "set", f"ld{index}", "up")
        run("ip", "-n", ns, "link", "set", "lo", "up")


def tear_down_network(count):
    for index in range(count):
        run("ip", "netns", "del", namespace_name(index), check=False)
    run("ip", "netns", "del", BRIDGE_NS, check=False)


def sandbox_script(unit, binary, hosts, argv):
    """Shell run in the unit's own mount namespace: its files, then `argv` as its user."""
    uid, gid = unit.user.split(":")
    lines = ["set -e", "mount --make-rprivate /"]
    # The binary where the image installs it, and the names of the others in /etc/hosts.
    lines.append("mount -t tmpfs -o mode=0755 tmpfs /usr/local/bin")
    lines.append(": > /usr/local/bin/larder && mount --bind -o ro %s /usr/local/bin/larder" % shlex.quote(binary))
    if unit.argv and unit.argv[0] == "docker-entrypoint.sh":
        # The redis image's entrypoint runs its arguments; its redis-server is built with
        # protected mode off (the image's own patch), so other containers may connect.
        lines.append("r=\"$(command -v redis-server)\"")
        lines.append("printf '#!/bin/sh\\nif [ \"$1\" = redis-server ]; then shift; exec %s \"$@\" --protected-mode no; fi\\nexec \"$@\"\\n' \"$r\" "
                     "> /usr/local/bin/docker-entrypoint.sh && chmod 755 /usr/local/bin/docker-entrypoint.sh")
    lines.append("mount --bind -o ro %s /etc/hosts" % shlex.quote(hosts))
    # configMap and secret folders first: their sources may sit under a path mounted below.
    # A missing mount point (/etc/larder) is made in a tmpfs laid over its nearest existing
    # parent, which keeps that parent's entries (/etc/hosts above) by binding each one back.
    for path, folder in unit.file_folders.items():
        lines.append(f'p={shlex.quote(path)}; a="$p"; while [ ! -d "$a" ]; do a=$(dirname "$a"); done; '
                     'if [ "$a" != "$p" ]; then o=$(mktemp -d); mount --rbind "$a" "$o"; mount -t tmpfs -o mode=0755 tmpfs "$a"; '
                     'for e in "$o"/* "$o"/.[!.]*; do [ -e "$e" ] || [ -L "$e" ] || continue; n="$a/${e##*/}"; '
                     'if [ -L "$e" ]; then cp -P "$e" "$n"; elif [ -d "$e" ]; then mkdir -p "$n"; mount --rbind "$e" "$n"; '
                     'else : > "$n"; mount --bind "$e" "$n"; fi; done; mkdir -p "$p"; fi')
        lines.append(f"mount --bind -o ro {shlex.quote(folder)} {shlex.quote(path)}")
    for path in unit.mounts:
        # A path the host lacks gets an empty tmpfs on its nearest existing parent first.
        lines.append(f'p={shlex.quote(path)}; a="$p"; while [ ! -d "$a" ]; do a=$(dirname "$a"); done; '
                     f'[ "$a" = "$p" ] || {{ mount -t tmpfs tmpfs "$a"; mkdir -p "$p"; }}')
        lines.append(f"mount -t tmpfs -o uid={uid},gid={gid},mode=0755 tmpfs {shlex.quote(path)}")
    # Read-only root (readOnlyRootFilesystem, read_only): only the mounts above are writable.
    lines.append("mount --bind / / 2>/dev/null || true; mount -o remount,bind,ro / ")
    env = " ".join(shlex.quote(f"{k}={v}") for k, v in unit.env.items())
    command = " ".join(shlex.quote(a) for a in argv)
    lines.append(f"cd {shlex.quote(unit.workdir)} && exec setpriv --reuid={uid} --regid={gid} --clear-groups env -i {env} {command}")
    return "\n".join(lines)


def kubelet_folder(folder, files):
    """A configMap or secret volume laid out as kubelet does: the files in a timestamped
    folder, `..data` a symbolic link to it, and each name a link through `..data`."""
    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.0000000001")
    os.makedirs(os.path.join(folder, stamp))
    for name, text in files.items():
        with open(os.path.join(folder, stamp, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(folder, stamp, name), 0o644)
        os.symlink(os.path.join("..data", name), os.path.join(folder, name))
    os.symlink(stamp, os.path.join(folder, "..data"))
    os.chmod(folder, 0o755)
    os.chmod(os.path.join(folder, stamp), 0o755)
    return folder


def start(unit, index, binary, hosts, log):
    script = sandbox_script(unit, binary, hosts, unit.argv)
    unit.process = subprocess.Popen(["ip", "netns", "exec", namespace_name(index), "unshare", "-m", "sh", "-c", script],
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def run_inside(unit, index, binary, hosts, argv, timeout=10):
    argv = [a.replace("{address}", unit.address) for a in argv]
    script = sandbox_script(unit, binary, hosts, argv)
    return subprocess.run(["ip", "netns", "exec", namespace_name(index), "unshare", "-m", "sh", "-c", script],
                          capture_output=True, text=True, timeout=timeout)


def wait_for_checks(unit, index, binary, hosts, deadline):
    for description, argv in unit.checks:
        while True:
            if unit.process.poll() is not None:
                return f"{unit.name} exited with status {unit.process.returncode} before {description} passed"
            result = run_inside(unit, index, binary, hosts, argv)
            if result.returncode == 0:
                print(f"  {unit.name}: {description} passed")
                break
            if time.monotonic() > deadline:
                return f"{unit.name}: {description} did not pass: {(result.stdout + result.stderr).strip()[-300:]}"
            time.sleep(0.2)
    return None


def stop(unit):
    """The stop signal (SIGTERM for every image here) to the unit's process; it must exit 0."""
    if unit.process.poll() is None:
        os.killpg(unit.process.pid, signal.SIGTERM)
    try:
        status = unit.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(unit.process.pid, signal.SIGKILL)
        unit.process.wait()
        return f"{unit.name} did not stop within 15 s of SIGTERM"
    return None if status == 0 else f"{unit.name} exited {status} on SIGTERM"


def exercise(title, units, binary, extra_checks):
    """Starts every unit, waits for its checks, runs `extra_checks`, stops them all."""
    print(f"== {title}: {', '.join(u.name for u in units)}")
    problems = []
    work = tempfile.mkdtemp(prefix="larder-deploy-")
    set_up_network(units)
    try:
        hosts = os.path.join(work, "hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n")
            for unit in units:
                f.write(f"{unit.address} {' '.join(dict.fromkeys(unit.hostnames))}\n")
        os.chmod(work, 0o755)
        os.chmod(hosts, 0o644)
        for index, unit in enumerate(units):
            for number, (path, files) in enumerate(unit.files.items()):
                unit.file_folders[path] = kubelet_folder(os.path.join(work, f"volume-{index}-{number}"), files)
        logs = {}
        # In rounds: a unit starts once every unit it depends on passed its checks.
        healthy = set()
        while len(healthy) < len(units) and not problems:
            round_ = [u for u in units if u.name not in healthy and set(u.depends) <= healthy]
            if not round_:
                problems.append("depends_on names a service that never starts")
                break
            for unit in round_:
                index = units.index(unit)
                logs[unit.name] = open(os.path.join(work, f"{index}.log"), "w+")
                start(unit, index, binary, hosts, logs[unit.name])
            deadline = time.monotonic() + 30
            for unit in round_:
                problem = wait_for_checks(unit, units.index(unit), binary, hosts, deadline)
                if problem:
                    problems.append(problem)
                healthy.add(unit.name)
        if not problems:
            for check in extra_checks:
                problem = check(units, lambda unit, argv: run_inside(unit, units.index(unit), binary, hosts, argv))
                if problem:
                    problems.append(problem)
                else:
                    print(f"  {check.__doc__.splitlines()[0].strip()}: yes")
        for unit in units:
            if unit.process:
                problem = stop(unit)
                if problem:
                    problems.append(problem)
        if problems:
            for unit in units:
                if unit.name not in logs:
                    continue
                logs[unit.name].seek(0)
                print(f"-- log of {unit.name}:\n{logs[unit.name].read()[-3000:]}")
    finally:
        for unit in units:
            if unit.process and unit.process.poll() is None:
                os.killpg(unit.process.pid, signal.SIGKILL)
        tear_down_network(len(units))
    return problems


def larder_units(units):
    return [u for u in units if u.argv[:2] in (["larder", "serve"], ["larder"])]


def readiness_names_redis(units, inside):
    """With Redis in the file, every replica reaches it by its name: readiness checks it and
    passes (within 10 s: a replica that started before Redis connects again by itself)."""
    for unit in larder_units(units):
        port = unit.env.get("LARDER_PORT", "8080")
        deadline = time.monotonic() + 10
        while True:
            result = inside(unit, ["curl", "-sS", f"http://127.0.0.1:{port}/readyz"])
            try:
                redis = json.loads(result.stdout)["checks"].get("redis") or []
            except (ValueError, KeyError, AttributeError):
                return f"{unit.name}: /readyz is not health+json: {result.stdout[:200]}"
            if redis and redis[0].get("status") == "pass":
                break
            if time.monotonic() > deadline:
                return f"{unit.name}: the redis check does not pass: {redis}"
            time.sleep(0.3)
    return None


def weather_reaches_simulator(units, inside):
    """Compose's Larder asks the simulator service by its name: a weather answer comes back."""
    for unit in larder_units(units):
        port = unit.env.get("LARDER_PORT", "8080")
        result = inside(unit, ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                               f"http://127.0.0.1:{port}/weather?lat=52.52&lon=13.41"])
        if result.stdout != "200":
            return f"{unit.name}: /weather answered {result.stdout or result.stderr} (the upstream simulator is not reached)"
    return None


def traces_reach_collector(units, inside):
    """With the tracing profile, Larder's spans reach the collector by its name (within its 5 s export interval)."""
    collector = next(u for u in units if u.argv[:1] == COLLECTOR_IMAGE["entrypoint"][:1])
    deadline = time.monotonic() + 12
    while True:
        result = inside(collector, ["curl", "-sS", "http://127.0.0.1:4318/spans"])
        try:
            spans = json.loads(result.stdout)
        except ValueError:
            spans = []
        if any(span["service"] == "larder" and span["kind"] == "server" for span in spans):
            return None
        if time.monotonic() > deadline:
            return f"no server span of larder reached the collector: {result.stdout[:300] or result.stderr[:300]}"
        time.sleep(0.5)


def configuration_of(unit):
    """The configuration file a unit reads (LARDER_CONFIG), parsed, or None."""
    path = unit.env.get("LARDER_CONFIG")
    files = unit.files.get(os.path.dirname(path or ""), {})
    if not path or os.path.basename(path) not in files:
        return None
    return yaml.safe_load(files[os.path.basename(path)]) or {}


def admin_listener_takes_the_secret(units, inside):
    """The admin listener, on the port of the ConfigMap's file, takes the Secret's token and
    refuses a request without it."""
    for unit in larder_units(units):
        settings = configuration_of(unit)
        if not settings or "admin-port" not in settings:
            continue
        token_file = settings["admin-token-file"]
        token = unit.files[os.path.dirname(token_file)][os.path.basename(token_file)].strip()
        url = f"http://127.0.0.1:{settings['admin-port']}/cache?target=%2Fweather"
        for header, wanted in ((f"Authorization: Bearer {token}", ("200", "404")), ("X-None: 1", ("401",))):
            result = inside(unit, ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", header, url])
            if result.stdout not in wanted:
                return f"{unit.name}: the admin listener answered {result.stdout or result.stderr}, not {'/'.join(wanted)}"
    return None


def policy_admits_origins(documents):
    """Every origin port of the ConfigMap's routes (and of its commented example) is one the
    NetworkPolicy lets Larder reach, and the public Service does not expose the admin port."""
    problems = []
    policies = [d for d in documents if d["kind"] == "NetworkPolicy"]
    admitted = {port.get("port") for p in policies for rule in p["spec"].get("egress", [])
                for port in rule.get("ports", [])}
    for config in (d for d in documents if d["kind"] == "ConfigMap"):
        for name, text in (config.get("data") or {}).items():
            example = re.sub(r"(?m)^# ?(routes:|  .*)$", r"\1", text)
            for source in (text, example):
                routes = (yaml.safe_load(source) or {}).get("routes") or {}
                for prefix, route in routes.items():
                    url = urllib.parse.urlsplit(route["origin"])
                    port = url.port or {"http": 80, "https": 443}[url.scheme]
                    if port not in admitted:
                        problems.append(f"{name}: route {prefix} reaches port {port}, which the NetworkPolicy blocks")
    for service in (d for d in documents if d["kind"] == "Service" and d["metadata"]["name"] == "larder"):
        if any(p.get("targetPort") == "admin" for p in service["spec"]["ports"]):
            problems.append("the public larder Service exposes the admin listener")
    return problems


def main():
    if len(sys.argv) != 3:
        fail("usage: run-deploy-files.py LARDER_BINARY KUBECTL")
    binary, kubectl = os.path.abspath(sys.argv[1]), sys.argv[2]
    if os.geteuid() != 0:
        fail("needs root: it makes network and mount namespaces, as a container runtime does")
    image = image_from_dockerfile(os.path.join(ROOT, "Dockerfile"))
    problems = []
    for kustomization in sorted(glob.glob(os.path.join(ROOT, "deploy/kubernetes/**/kustomization.yaml"), recursive=True)):
        folder = os.path.dirname(kustomization)
        rendered = run(kubectl, "kustomize", folder, check=False)
        title = "kubectl kustomize " + os.path.relpath(folder, ROOT)
        if rendered.returncode != 0:
            problems.append(f"{title}: {rendered.stderr.strip()}")
            continue
        documents = [d for d in yaml.safe_load_all(rendered.stdout) if d]
        units = kubernetes_units(documents, image)
        has_redis = any(u.argv and "redis-server" in " ".join(u.argv) for u in units)
        problems += [f"{title}: {p}" for p in policy_admits_origins(documents)]
        checks = [admin_listener_takes_the_secret] + ([readiness_names_redis] if has_redis else [])
        problems += exercise(title, units, binary, checks)
    # The tracing profile as its comment says to start it; the replicas without it (tracing off).
    tracing = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector:4318"}
    for files, profiles, given in ((["docker-compose.yml"], ["tracing"], tracing),
                                   (["docker-compose.yml", "docker-compose.replicas.yml"], [], {})):
        units = compose_units(files, image, profiles, given)
        checks = [weather_reaches_simulator] + ([readiness_names_redis] if len(files) > 1 else []) \
            + ([traces_reach_collector] if profiles else [])
        title = "compose " + " + ".join(files) + "".join(f" --profile {p}" for p in profiles)
        problems += exercise(title, units, binary, checks)
    if problems:
        for problem in problems:
            print(f"FAILED: {problem}", file=sys.stderr)
        sys.exit(1)
    print("deploy files: every kustomization renders; every pod and compose service starts from its effective command, "
          "passes its probes or healthcheck, and exits 0 on SIGTERM")


if __name__ == "__main__":
    main()
