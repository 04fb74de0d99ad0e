"""deploy/kubernetes/: every manifest valid against the Kubernetes API schemas (the ``kubernetes-validate``
package, offline, strict: an unknown field is an error) for the versions the manifests support, and
wired as docs/operations.md says: 2 replicas with liveness on /healthz and readiness on /readyz, a
migration Job that runs ``agent-bot db upgrade``, settings and secrets that the bot really reads."""

from __future__ import annotations

import copy
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate
import pytest
import yaml

from bot.cli import build_parser
from bot.config import Settings
from bot.roles import Role, RolesFile
from tests.deploy.deploy_files import IMAGE, KUBERNETES, setting_variables

KUBERNETES_VERSIONS = ("1.30", "1.37")
"""The oldest version the manifests need (the preStop ``sleep`` action, on by default from 1.30) and
the newest whose schemas kubernetes-validate ships."""
MANIFESTS = sorted(KUBERNETES.rglob("*.yaml"))


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def resources() -> dict[tuple[str, str], dict[str, Any]]:
    """Every resource of deploy/kubernetes (the example Secret too), by (kind, name)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in MANIFESTS:
        for document in documents(path):
            key = (document["kind"], document["metadata"]["name"])
            assert key not in found, f"{key} twice"
            found[key] = document
    return found


RESOURCES = resources()
DEPLOYMENT = RESOURCES["Deployment", "agent-bot"]
JOB = RESOURCES["Job", "agent-bot-db-upgrade"]
SECRET = RESOURCES["Secret", "agent-bot-secrets"]


def test_the_manifests_are_the_ones_documented():
    assert sorted(RESOURCES) == [
        ("ConfigMap", "agent-bot-roles"),
        ("ConfigMap", "agent-bot-settings"),
        ("Deployment", "agent-bot"),
        ("Job", "agent-bot-db-upgrade"),
        ("PodDisruptionBudget", "agent-bot"),
        ("Secret", "agent-bot-secrets"),
        ("Service", "agent-bot"),
    ]
    # `kubectl apply -f deploy/kubernetes/` does not descend into folders: the example Secret is not applied
    assert [p.relative_to(KUBERNETES).as_posix() for p in MANIFESTS if p.parent != KUBERNETES] == ["example-secret/secret.yaml"]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.relative_to(KUBERNETES).as_posix())
def test_every_manifest_is_valid_for_the_kubernetes_versions_supported(path, version):
    for document in documents(path):
        assert kubernetes_validate.validate(document, version, strict=True) == version


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["spec"].update(replica=2),  # a misspelt field
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"].update(port=[3000]),
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["env"].append({"value": "x"}),  # no name
    ],
)
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_validation_refuses_a_broken_deployment(change, version):
    broken = copy.deepcopy(DEPLOYMENT)
    change(broken)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)


def pod_spec(resource: dict[str, Any]) -> dict[str, Any]:
    return resource["spec"]["template"]["spec"]


def only_container(resource: dict[str, Any]) -> dict[str, Any]:
    (container,) = pod_spec(resource)["containers"]
    return container


def test_the_deployment_runs_2_replicas_of_agent_bot_serve():
    assert DEPLOYMENT["spec"]["replicas"] == 2
    container = only_container(DEPLOYMENT)
    assert container["image"] == IMAGE
    args = build_parser().parse_args(container["command"][1:])
    assert (container["command"][0], args.command, args.host) == ("agent-bot", "serve", "0.0.0.0")
    assert container["ports"] == [{"name": "http", "containerPort": args.port}]
    assert DEPLOYMENT["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_liveness_is_healthz_and_readiness_is_readyz_on_the_serve_port():
    container = only_container(DEPLOYMENT)
    probes = {kind: container[kind]["httpGet"] for kind in ("livenessProbe", "readinessProbe", "startupProbe")}
    assert probes == {
        "livenessProbe": {"path": "/healthz", "port": "http"},
        "readinessProbe": {"path": "/readyz", "port": "http"},
        "startupProbe": {"path": "/healthz", "port": "http"},
    }
    # /readyz waits up to 2 s for the database, then up to 2 s for the Agent API (bot.app.READY_TIMEOUT)
    from bot.app import READY_TIMEOUT

    assert container["readinessProbe"]["timeoutSeconds"] > 2 * READY_TIMEOUT


def test_the_migration_job_runs_db_upgrade_with_the_same_image():
    container = only_container(JOB)
    assert container["command"] == ["agent-bot", "db", "upgrade"]
    args = build_parser().parse_args(container["command"][1:])
    assert (args.command, args.db_command) == ("db", "upgrade")
    assert container["image"] == only_container(DEPLOYMENT)["image"]
    assert pod_spec(JOB)["restartPolicy"] == "Never"


def test_service_and_disruption_budget_select_the_deployments_pods():
    labels = DEPLOYMENT["spec"]["template"]["metadata"]["labels"]
    assert DEPLOYMENT["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = RESOURCES["Service", "agent-bot"]["spec"]
    assert service["selector"].items() <= labels.items()
    assert [p["targetPort"] for p in service["ports"]] == ["http"]
    budget = RESOURCES["PodDisruptionBudget", "agent-bot"]["spec"]
    assert budget["selector"]["matchLabels"].items() <= labels.items()
    assert budget["minAvailable"] == 1 < DEPLOYMENT["spec"]["replicas"]
    # the Job's pods are not the server's: the Service never sends them requests
    assert not service["selector"].items() <= JOB["spec"]["template"]["metadata"]["labels"].items()


def environment_of(resource: dict[str, Any]) -> dict[str, str]:
    """The container's environment as the kubelet builds it: the ConfigMaps of ``envFrom``, then ``env``."""
    container = only_container(resource)
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(RESOURCES["ConfigMap", source["configMapRef"]["name"]]["data"])
    for entry in container.get("env", []):
        env[entry["name"]] = entry["value"]
    return env


@pytest.mark.parametrize("resource", [DEPLOYMENT, JOB], ids=["deployment", "job"])
def test_every_variable_the_manifests_set_is_a_setting(resource):
    assert sorted(set(environment_of(resource)) - setting_variables()) == []


def mounted_files(resource: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]]]:
    """Each file of a mounted Secret or ConfigMap: its path in the container -> (kind, the key's content)."""
    volumes = {v["name"]: v for v in pod_spec(resource)["volumes"]}
    files: dict[str, tuple[str, dict[str, str]]] = {}
    for mount in only_container(resource)["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "secret" in volume:
            kind, source, data = "Secret", volume["secret"], SECRET["stringData"]
            assert source["secretName"] == SECRET["metadata"]["name"]
        elif "configMap" in volume:
            source = volume["configMap"]
            kind, data = "ConfigMap", RESOURCES["ConfigMap", source["name"]]["data"]
        else:
            continue
        items = source.get("items") or [{"key": key, "path": key} for key in data]
        for item in items:
            files[str(PurePosixPath(mount["mountPath"]) / item["path"])] = (kind, data[item["key"]])
    return files


@pytest.mark.parametrize("resource", [DEPLOYMENT, JOB], ids=["deployment", "job"])
def test_the_manifests_settings_load_as_the_bot_loads_them(resource, tmp_path, monkeypatch):
    """The container's environment, with every mounted file where the kubelet puts it (under tmp_path):
    ``Settings()`` reads the secrets from the Secret's files and the roles file parses."""
    files = mounted_files(resource)
    for variable in setting_variables():
        monkeypatch.delenv(variable, raising=False)
    for path, (_kind, content) in files.items():
        local = tmp_path / path.lstrip("/")
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_text(content)
    environment = environment_of(resource)
    for name, value in environment.items():
        local = tmp_path / value.lstrip("/")
        if name.endswith("_FILE") or name == "AGENT_BOT_CONFIG":
            assert value in files, f"{name}={value} is not a mounted file"
            value = str(local)
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    settings = Settings()
    secret = SECRET["stringData"]
    assert settings.database_url == secret["database-url"]
    assert settings.auto_upgrade is False
    if resource is DEPLOYMENT:
        assert (settings.slack_bot_token, settings.slack_signing_secret, settings.agent_api_key) == (
            Settings(slack_bot_token=secret["slack-bot-token"]).slack_bot_token,
            Settings(slack_signing_secret=secret["slack-signing-secret"]).slack_signing_secret,
            Settings(agent_api_key=secret["agent-api-key"]).agent_api_key,
        )
        assert settings.missing("slack_bot_token", "slack_signing_secret", "agent_api_url", "agent_api_key") == []
        assert settings.log_format == "json"
        assert RolesFile.load(settings.config_file).roles == {Role.owner: ["alice@example.com"], Role.manager: ["bob@example.com"]}
    else:  # the Job gets the database URL only
        assert {kind for kind, _ in files.values()} == {"Secret"} and len(files) == 1


def test_pods_run_without_privileges_and_without_service_links():
    for resource in (DEPLOYMENT, JOB):
        spec = pod_spec(resource)
        assert spec["enableServiceLinks"] is False  # no <SERVICE>_PORT=tcp://... variables from the namespace
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        context = only_container(resource)["securityContext"]
        assert context == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
