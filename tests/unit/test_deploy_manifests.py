"""deploy/kubernetes: the manifests parse and agree with the app (port, health path, upload size).

No cluster here: this checks what a reader could get wrong by hand, not what the API server accepts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # PyYAML comes with transformers / huggingface_hub

ROOT = Path(__file__).resolve().parents[2]
KUBE = ROOT / "deploy" / "kubernetes"


def _load(name: str) -> dict:
    docs = list(yaml.safe_load_all((KUBE / name).read_text(encoding="utf-8")))
    assert len(docs) == 1
    return docs[0]


def test_kustomization_lists_every_manifest():
    listed = set(_load("kustomization.yaml")["resources"])
    assert listed == {p.name for p in KUBE.glob("*.yaml")} - {"kustomization.yaml"}


def test_deployment_probes_the_health_endpoint_on_the_images_port():
    exposed = re.search(r"^EXPOSE (\d+)", (ROOT / "Dockerfile").read_text(encoding="utf-8"), re.M)
    (container,) = _load("deployment.yaml")["spec"]["template"]["spec"]["containers"]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"http": int(exposed.group(1))}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/_stcore/health", "port": "http"}
    assert container["resources"]["requests"]["cpu"] == container["resources"]["limits"]["cpu"] == "1"


def test_service_and_ingress_reach_the_deployment():
    deployment, service, ingress = _load("deployment.yaml"), _load("service.yaml"), _load("ingress.yaml")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    backends = [p["backend"]["service"] for r in ingress["spec"]["rules"] for p in r["http"]["paths"]]
    assert backends == [{"name": service["metadata"]["name"], "port": {"name": "http"}}]


def test_ingress_pins_a_browser_and_lets_websockets_and_uploads_through():
    notes = _load("ingress.yaml")["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert notes[prefix + "affinity"] == "cookie"
    assert int(notes[prefix + "proxy-read-timeout"]) >= 3600
    config = (ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8")
    upload_mb = int(re.search(r"^maxUploadSize = (\d+)", config, re.M).group(1))
    assert int(notes[prefix + "proxy-body-size"].rstrip("m")) > upload_mb


def test_every_replica_reads_the_class_store_url_from_a_secret():
    """Rooms and answers must be one database for all pods (app/store): AP_DATABASE_URL, required, from a Secret."""
    (container,) = _load("deployment.yaml")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    ref = env["AP_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert ref["name"] == "attention-playground" and ref["key"] == "database-url"
    assert not ref.get("optional", False)
    assert "value" not in env["AP_DATABASE_URL"]  # never a password written into the manifest
