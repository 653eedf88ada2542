"""docker-compose.yml, the Dockerfile and deploy/k8s: no Docker engine runs here, so every reference
is resolved by reading the files: build contexts, commands (real `teamlore` subcommands with
options they accept), health checks, volumes, env files, config maps and secrets, and every
setting the code reads documented in .env.example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
import yaml

from teamlore.cli import app
from teamlore.config import Settings

from .test_settings_documented import documented_variables

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
MANIFESTS = [
    (path.name, doc)
    for path in sorted((ROOT / "deploy" / "k8s").glob("*.yaml"))
    for doc in yaml.safe_load_all(path.read_text())
    if doc
]
TEAMLORE_IMAGE = "teamlore:latest"


def teamlore_command(args: list[str]):
    """Resolve args to the teamlore subcommand they run and parse its options; raises if either
    is not real."""
    current = typer.main.get_command(app)
    rest = list(args)
    while hasattr(current, "commands"):  # a command group
        assert rest, f"{args}: names a command group, not a command"
        sub = current.commands.get(rest[0])
        assert sub is not None, f"{args}: `teamlore {rest[0]}` is not a command"
        current, rest = sub, rest[1:]
    current.make_context(current.name or "", rest)  # raises on an unknown option or a bad value
    return current


def _teamlore_services() -> dict[str, dict]:
    return {name: s for name, s in COMPOSE["services"].items() if s.get("image") == TEAMLORE_IMAGE}


def test_the_compose_file_runs_every_part_of_the_pipeline():
    services = COMPOSE["services"]
    assert {"redis", "weaviate", "mongodb", "api", "worker", "beat"} <= set(services)
    assert {"slack", "discord", "teams", "mattermost"} <= {
        name for name, s in services.items() if s.get("profiles")
    }
    assert "--appendonly" in services["redis"]["command"]
    assert services["redis"]["command"][services["redis"]["command"].index("--appendonly") + 1] == "yes"


@pytest.mark.parametrize("name", sorted(_teamlore_services()))
def test_every_teamlore_service_builds_from_the_repository_and_runs_a_real_command(name):
    service = COMPOSE["services"][name]
    context = ROOT / service["build"]["context"]
    assert (context / service["build"].get("dockerfile", "Dockerfile")).is_file()
    teamlore_command(service["command"])


@pytest.mark.parametrize("name", sorted(COMPOSE["services"]))
def test_every_service_has_a_health_check_that_resolves(name):
    service = COMPOSE["services"][name]
    test = service["healthcheck"]["test"]
    assert test[0] == "CMD" and len(test) > 1
    if test[1] == "teamlore":
        teamlore_command(test[2:])


@pytest.mark.parametrize("name", sorted(COMPOSE["services"]))
def test_volumes_and_env_files_resolve(name):
    service = COMPOSE["services"][name]
    declared = set(COMPOSE.get("volumes") or {})
    for volume in service.get("volumes", []):
        source = volume.split(":", 1)[0]
        if source.startswith((".", "/")):
            assert (ROOT / source).exists(), f"{name}: bind mount {source} does not exist"
        else:
            assert source in declared, f"{name}: volume {source} is not declared"
    for env_file in service.get("env_file", []):
        path = env_file if isinstance(env_file, str) else env_file["path"]
        # .env holds the secrets and is not in the repository; its template is.
        assert (ROOT / path).exists() or (ROOT / f"{path}.example").exists(), path
    for variable in service.get("environment", {}):
        if variable.startswith("TEAMLORE_"):
            assert variable in documented_variables(), f"{name}: {variable} is not a documented setting"


def test_the_dockerfile_is_multi_stage_and_runs_as_a_non_root_user():
    text = (ROOT / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", text, re.MULTILINE)) >= 2
    users = re.findall(r"^USER (\S+)", text, re.MULTILINE)
    assert users and users[-1] not in {"root", "0"}
    entry = re.search(r'^ENTRYPOINT \["teamlore"\]', text, re.MULTILINE)
    cmd = re.search(r"^CMD (\[.*\])", text, re.MULTILINE)
    assert entry and cmd
    teamlore_command(yaml.safe_load(cmd.group(1)))


def _containers(doc: dict) -> list[dict]:
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    return spec.get("containers", [])


@pytest.mark.parametrize(
    ("file", "doc"),
    [(f, d) for f, d in MANIFESTS if d["kind"] in {"Deployment", "StatefulSet"}],
    ids=lambda v: v if isinstance(v, str) else v["metadata"]["name"],
)
def test_every_workload_runs_a_real_command_with_resolvable_config(file, doc):
    names = {(d["kind"], d.get("metadata", {}).get("name")) for _, d in MANIFESTS}
    example_secrets = {
        d["metadata"]["name"]
        for d in yaml.safe_load_all((ROOT / "deploy/k8s/secret.example.yaml").read_text())
        if d
    }
    volumes = {v["name"] for v in doc["spec"]["template"]["spec"].get("volumes", [])}
    volumes |= {t["metadata"]["name"] for t in doc["spec"].get("volumeClaimTemplates", [])}
    for container in _containers(doc):
        if container["image"] == TEAMLORE_IMAGE:
            teamlore_command(container["args"])
            for probe in ("livenessProbe", "readinessProbe"):
                command = container.get(probe, {}).get("exec", {}).get("command")
                if command and command[0] == "teamlore":
                    teamlore_command(command[1:])
        for source in container.get("envFrom", []):
            if "configMapRef" in source:
                assert ("ConfigMap", source["configMapRef"]["name"]) in names
            if "secretRef" in source:
                assert source["secretRef"]["name"] in example_secrets
        for mount in container.get("volumeMounts", []):
            assert mount["name"] in volumes, f"{file}: volume {mount['name']} is not defined"


def test_autoscalers_target_workloads_that_exist_and_watch_real_queues():
    from teamlore.workers.celery_app import ADMIN, INGEST, MAINTENANCE

    names = {(d["kind"], d.get("metadata", {}).get("name")) for _, d in MANIFESTS}
    scalers = [d for _, d in MANIFESTS if d["kind"] in {"ScaledObject", "HorizontalPodAutoscaler"}]
    assert any(d["kind"] == "ScaledObject" for d in scalers)
    for doc in scalers:
        target = doc["spec"]["scaleTargetRef"]
        assert (target.get("kind", "Deployment"), target["name"]) in names
        for trigger in doc["spec"].get("triggers", []):
            assert trigger["metadata"]["listName"] in {INGEST, MAINTENANCE, ADMIN}


def test_the_config_map_holds_only_documented_settings_and_kustomize_lists_every_file():
    config = next(d for _, d in MANIFESTS if d["kind"] == "ConfigMap")
    assert set(config["data"]) <= documented_variables()
    listed = set(next(d for _, d in MANIFESTS if d["kind"] == "Kustomization")["resources"])
    on_disk = {p.name for p in (ROOT / "deploy/k8s").glob("*.yaml")}
    assert listed == on_disk - {"kustomization.yaml", "secret.example.yaml"}


def test_no_teamlore_workload_needs_a_shared_volume_or_a_node_of_its_own():
    """The server stack keeps nothing on disk (issue 18): every Teamlore pod's /data is a scratch
    emptyDir, no pod is tied to another's node, and the hash secret comes from the Secret."""
    assert not [d for _, d in MANIFESTS if d["kind"] == "PersistentVolumeClaim"]
    workloads = [
        d
        for _, d in MANIFESTS
        if d["kind"] in {"Deployment", "StatefulSet"} and _containers(d)[0]["image"] == TEAMLORE_IMAGE
    ]
    assert workloads
    for doc in workloads:
        spec = doc["spec"]["template"]["spec"]
        assert "affinity" not in spec, doc["metadata"]["name"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        data = next(m for m in _containers(doc)[0]["volumeMounts"] if m["mountPath"] == "/data")
        assert volumes[data["name"]] == {"name": data["name"], "emptyDir": {}}
        refs = [e.get("secretRef", {}).get("name") for e in _containers(doc)[0]["envFrom"]]
        assert "teamlore-secrets" in refs
    secret = yaml.safe_load((ROOT / "deploy/k8s/secret.example.yaml").read_text())
    assert "TEAMLORE_HASH_SECRET" in secret["stringData"]
    # Stateful services keep their claims (templates of their own, not a volume Teamlore shares).
    kept = {d["metadata"]["name"] for _, d in MANIFESTS if d["kind"] == "StatefulSet"}
    assert {"redis", "mongodb", "weaviate"} <= kept


# ---- The manifests as `kubectl apply -k deploy/k8s` would send them, checked against the schemas ----

KUSTOMIZATION = yaml.safe_load((ROOT / "deploy/k8s/kustomization.yaml").read_text())
K8S_VERSION = "1.33"  # a release every current cluster provider offers
CUSTOM_KINDS = {"ScaledObject"}  # KEDA's; no Kubernetes schema: checked field by field below
CLUSTER_KINDS = {"Namespace", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding"}


def _image_name(image: str) -> str:
    return image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image


def rendered() -> list[dict]:
    """What kustomize renders: every listed resource, in the kustomization's namespace, with its
    `images:` applied (kubectl kustomize is not available here)."""
    images = {entry["name"]: entry for entry in KUSTOMIZATION.get("images", [])}
    objects = []
    for resource in KUSTOMIZATION["resources"]:
        for doc in yaml.safe_load_all((ROOT / "deploy/k8s" / resource).read_text()):
            if not doc:
                continue
            if doc["kind"] not in CLUSTER_KINDS:
                doc["metadata"]["namespace"] = KUSTOMIZATION["namespace"]
            for container in _containers(doc):
                entry = images.get(_image_name(container["image"]))
                if entry:
                    container["image"] = f"{entry['newName']}:{entry['newTag']}"
            objects.append(doc)
    return objects


RENDERED = rendered()


def _by_kind(kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in RENDERED if d["kind"] == kind}


@pytest.mark.parametrize(
    "doc",
    [d for d in RENDERED if d["kind"] not in CUSTOM_KINDS],
    ids=lambda d: f"{d['kind']}/{d['metadata']['name']}",
)
def test_every_rendered_object_validates_against_the_kubernetes_schema(doc):
    import kubernetes_validate

    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)  # raises on any unknown or bad field


def test_the_schema_check_catches_a_misspelt_field():  # the control: validation is not a no-op
    import kubernetes_validate

    doc = next(d for d in RENDERED if d["kind"] == "StatefulSet")
    broken = {**doc, "spec": {**doc["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_the_kustomization_pins_the_image_the_docs_build_and_push():
    import tomllib

    [entry] = KUSTOMIZATION["images"]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert entry["newTag"] == version and "/" in entry["newName"]  # a registry, not a local name
    pulled = {
        c["image"] for d in RENDERED for c in _containers(d) if _image_name(c["image"]) == entry["newName"]
    }
    teamlore_workloads = {
        d["metadata"]["name"] for d in RENDERED if any(c["image"] in pulled for c in _containers(d))
    }
    assert pulled == {f"{entry['newName']}:{version}"}
    assert teamlore_workloads == {"api", "worker", "beat", "mcp", "slack", "discord", "teams", "mattermost"}
    docs = (ROOT / "docs/deployment.md").read_text()
    assert f"docker build -t {entry['newName']}:{version} ." in docs
    assert f"docker push {entry['newName']}:{version}" in docs


def test_every_statefulset_names_a_headless_service_that_selects_its_pods():
    services = _by_kind("Service")
    for name, sts in _by_kind("StatefulSet").items():
        service = services[sts["spec"]["serviceName"]]
        assert service["spec"].get("clusterIP") == "None", name
        assert service["spec"]["selector"].items() <= sts["spec"]["template"]["metadata"]["labels"].items()


def test_keda_reaches_redis_by_its_full_service_name():
    namespace = KUSTOMIZATION["namespace"]
    services = _by_kind("Service")
    for scaler in _by_kind("ScaledObject").values():
        assert scaler["apiVersion"] == "keda.sh/v1alpha1"
        assert {"scaleTargetRef", "minReplicaCount", "maxReplicaCount", "triggers"} <= set(scaler["spec"])
        for trigger in scaler["spec"]["triggers"]:
            host, port = trigger["metadata"]["address"].rsplit(":", 1)
            service, rest = host.split(".", 1)
            assert rest == f"{namespace}.svc.cluster.local", host  # KEDA runs in a namespace of its own
            assert int(port) in {p["port"] for p in services[service]["spec"]["ports"]}


def test_probes_run_the_cheap_doctor_and_every_command_probe_has_an_explicit_timeout():
    for doc in RENDERED:
        for container in _containers(doc):
            for kind in ("livenessProbe", "readinessProbe"):
                probe = container.get(kind, {})
                command = probe.get("exec", {}).get("command")
                if not command:
                    continue
                name = f"{doc['metadata']['name']} {kind}"
                assert "timeoutSeconds" in probe, f"{name}: Kubernetes' 1 s default"
                if command[0] == "teamlore":
                    assert command == ["teamlore", "doctor", "--liveness"], name
                    assert probe["timeoutSeconds"] >= 10, name


def test_the_liveness_doctor_makes_no_network_call_and_answers_within_the_probe_timeout(tmp_path):
    import os
    import subprocess
    import sys
    import time

    timeout = min(
        c["livenessProbe"]["timeoutSeconds"]
        for d in RENDERED
        for c in _containers(d)
        if c.get("livenessProbe", {}).get("exec", {}).get("command", [""])[0] == "teamlore"
    )
    # Addresses that would hang a client until its own timeout (TEST-NET-1, never routed).
    unreachable = {
        "TEAMLORE_REDIS_URL": "redis://192.0.2.1:6379/0",
        "TEAMLORE_MONGO_URL": "mongodb://192.0.2.1:27017/?directConnection=true",
        "TEAMLORE_WEAVIATE_URL": "http://192.0.2.1:8080",
        "TEAMLORE_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "teamlore.cli", "doctor", "--liveness", "--json"],
        env={**os.environ, **unreachable},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert {c["name"] for c in yaml.safe_load(done.stdout)} == {"configuration", "data folder"}
    # subprocess.run above already fails past the timeout; this names the figure to correct.
    assert elapsed < timeout, f"{elapsed:.1f} s: raise timeoutSeconds and the figure in docs/deployment.md"


# ---- The settings a pod or container really gets, following docs/deployment.md literally ----


def env_file(path: Path) -> dict[str, str]:
    """`kubectl create secret --from-env-file` and compose's env_file: KEY=VALUE lines, literal."""
    pairs = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value
    return pairs


DOT_ENV = env_file(ROOT / ".env.example")  # `cp .env.example .env`, secrets filled in later


def k8s_environment(doc: dict, container: dict) -> dict[str, str]:
    """A container's environment: envFrom sources in order (a later one wins), then `env`."""
    config_maps = _by_kind("ConfigMap")
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "secretRef" in source:
            env.update(DOT_ENV)  # kubectl -n teamlore create secret generic ... --from-env-file=.env
        if "configMapRef" in source:
            env.update(config_maps[source["configMapRef"]["name"]]["data"])
    env.update({item["name"]: item["value"] for item in container.get("env", [])})
    return env


def compose_environment(service: dict) -> dict[str, str]:
    env = {}
    for _ in service.get("env_file", []):
        env.update(DOT_ENV)
    env.update({k: str(v) for k, v in (service.get("environment") or {}).items()})
    return env


def settings_from(env: dict[str, str], monkeypatch) -> Settings:
    import os

    for name in list(os.environ):
        if name.startswith("TEAMLORE_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings(_env_file=None)


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname or ""


# Connectors that take HTTP from outside their container or pod.
LISTENING = {"slack": "slack_host", "teams": "teams_host"}


def _check_environment(name: str, env: dict[str, str], services: set[str], mounts: set[str], monkeypatch):
    from .test_settings_documented import variables_the_code_reads

    missing = {v for v in variables_the_code_reads() if not v.startswith("TEAMLORE_TEST_")} - set(env)
    assert not missing, f"{name}: not set (nor deliberately defaulted): {sorted(missing)}"
    settings = settings_from(env, monkeypatch)
    for url in (settings.redis_url, settings.mongo_url, settings.weaviate_url):
        assert url and _host(url) in services, f"{name}: {url!r} names no service (embedded mode by mistake)"
    assert str(settings.data_dir) in mounts, (
        f"{name}: data folder {settings.data_dir} is not a mounted volume"
    )
    if name in LISTENING:
        assert getattr(settings, LISTENING[name]) == "0.0.0.0", f"{name} listens only inside its container"


@pytest.mark.parametrize(
    ("doc", "container"),
    [(d, c) for d in RENDERED for c in _containers(d) if "/teamlore:" in c["image"]],
    ids=lambda v: v["metadata"]["name"] if "metadata" in v else v["name"],
)
def test_a_pod_made_as_the_docs_say_uses_redis_mongodb_and_weaviate(doc, container, monkeypatch):
    services = set(_by_kind("Service"))
    mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
    _check_environment(
        doc["metadata"]["name"], k8s_environment(doc, container), services, mounts, monkeypatch
    )


@pytest.mark.parametrize("name", sorted(_teamlore_services()))
def test_a_compose_service_made_as_the_docs_say_uses_redis_mongodb_and_weaviate(name, monkeypatch):
    service = COMPOSE["services"][name]
    mounts = {volume.split(":")[1] for volume in service.get("volumes", [])}
    env = compose_environment(service)
    _check_environment(name, env, set(COMPOSE["services"]), mounts, monkeypatch)


def test_a_blank_secret_value_would_have_blanked_the_url_if_the_secret_came_last(monkeypatch):
    """The control for the test above: with the secret after the config map (as it was), a secret
    made from .env empties the service URLs and the pod silently runs the embedded default."""
    api = _by_kind("Deployment")["api"]
    container = _containers(api)[0]
    reversed_order = {**container, "envFrom": list(reversed(container["envFrom"]))}
    settings = settings_from(k8s_environment(api, reversed_order), monkeypatch)
    assert settings.redis_url == settings.mongo_url == settings.weaviate_url == ""
