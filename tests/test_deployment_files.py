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


def test_every_teamlore_workload_shares_the_one_sqlite_volume_on_one_node():
    claims = {d["metadata"]["name"] for _, d in MANIFESTS if d["kind"] == "PersistentVolumeClaim"}
    workloads = [
        d
        for _, d in MANIFESTS
        if d["kind"] in {"Deployment", "StatefulSet"} and _containers(d)[0]["image"] == TEAMLORE_IMAGE
    ]
    assert workloads
    for doc in workloads:
        spec = doc["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in spec["volumes"]}
        data = next(m for m in _containers(doc)[0]["volumeMounts"] if m["mountPath"] == "/data")
        assert volumes[data["name"]]["persistentVolumeClaim"]["claimName"] in claims
        term = spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        labels = doc["spec"]["template"]["metadata"]["labels"]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"]["matchLabels"].items() <= labels.items()
