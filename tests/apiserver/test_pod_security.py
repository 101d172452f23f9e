"""Pod Security admission per namespace label: enforce refuses, warn answers with a Warning header, audit logs;
baseline and restricted as Kubernetes words their violations."""

from __future__ import annotations

import structlog
from aiohttp import ClientSession

from minik.cluster import Cluster
from minik.testing.namespaces import default_service_account, service_accounts_path
from tests.access import admin_session

NS = "/api/v1/namespaces"


def pod(name: str, container: dict | None = None, **spec: object) -> dict:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox", **(container or {})}],
                                                 **spec}}


RESTRICTED_OK = {"securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                     "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}


async def post(session: ClientSession, path: str, body: dict) -> tuple[int, dict, str | None]:
    async with session.post(path, json=body) as response:
        return response.status, await response.json(), response.headers.get("Warning")


async def namespace(session: ClientSession, name: str, **labels: str) -> None:
    """The namespace and its default service account (this cluster runs no service account controller)."""
    status, _, _ = await post(session, NS, {"metadata": {"name": name, "labels": {
        f"pod-security.kubernetes.io/{mode}": level for mode, level in labels.items()}}})
    assert status == 201
    status, _, _ = await post(session, service_accounts_path(name), default_service_account())
    assert status == 201


async def test_a_privileged_pod_is_refused_in_a_namespace_enforcing_baseline(cluster: Cluster) -> None:
    async with admin_session(cluster) as session:
        await namespace(session, "base", enforce="baseline")
        status, body, _ = await post(session, f"{NS}/base/pods", pod("p", {"securityContext": {"privileged": True}}))
        assert (status, body["reason"]) == (403, "Forbidden")
        assert body["message"] == ('pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged '
                                   '(container "c" must not set securityContext.privileged=true)')
        async with session.get(f"{NS}/base/pods/p") as response:
            assert response.status == 404
        status, body, _ = await post(session, f"{NS}/base/pods", pod(
            "h", {"ports": [{"containerPort": 80, "hostPort": 8080}]}, hostNetwork=True,
            volumes=[{"name": "root", "hostPath": {"path": "/"}}]))
        assert status == 403
        assert body["message"].endswith('"baseline:latest": host namespaces (hostNetwork=true), hostPath volumes '
                                        '(volume "root"), hostPort (container "c" uses hostPort 8080)')
        status, _, _ = await post(session, f"{NS}/base/pods", pod("plain"))
        assert status == 201
        status, _, _ = await post(session, f"{NS}/default/pods", pod("anywhere", {"securityContext": {
            "privileged": True}}))
        assert status == 201  # no label: privileged


async def test_restricted_refuses_a_plain_pod_and_takes_a_hardened_one(cluster: Cluster) -> None:
    async with admin_session(cluster) as session:
        await namespace(session, "strict", enforce="restricted")
        status, body, _ = await post(session, f"{NS}/strict/pods", pod("plain", {"securityContext": {
            "runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]}}}))
        assert status == 403
        assert body["message"] == (
            'pods "plain" is forbidden: violates PodSecurity "restricted:latest": non-default capabilities '
            '(container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add), '
            'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation'
            '=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]; '
            'container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add), runAsNonRoot != true '
            '(pod or container "c" must set securityContext.runAsNonRoot=true), runAsUser=0 (container "c" must not '
            'set runAsUser=0), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to '
            '"RuntimeDefault" or "Localhost")')
        status, body, warning = await post(session, f"{NS}/strict/pods", pod("hardened", RESTRICTED_OK))
        assert status == 201, body
        assert warning is None


async def test_warn_mode_answers_with_a_warning_header_and_audit_logs(cluster: Cluster) -> None:
    async with admin_session(cluster) as session:
        await namespace(session, "soft", warn="baseline", audit="restricted")
        with structlog.testing.capture_logs() as logs:
            status, _, warning = await post(session, f"{NS}/soft/pods", pod("p", {"securityContext": {
                "privileged": True}}))
        assert status == 201
        assert warning == ('299 - "would violate PodSecurity \\"baseline:latest\\": privileged (container \\"c\\" '
                           'must not set securityContext.privileged=true)"')
        audit = [entry for entry in logs if entry["event"] == "pod security audit"]
        assert len(audit) == 1
        assert audit[0]["pod-security.kubernetes.io/audit-violations"].startswith(
            'would violate PodSecurity "restricted:latest": privileged (container "c"')


async def test_workloads_are_warned_about_but_not_refused(cluster: Cluster) -> None:
    deployment = {"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": pod("x", {"securityContext": {"privileged": True}})["spec"]}}}
    async with admin_session(cluster) as session:
        await namespace(session, "apps", enforce="baseline", warn="baseline")
        status, _, warning = await post(session, "/apis/apps/v1/namespaces/apps/deployments", deployment)
        assert status == 201
        assert warning is not None and "would violate PodSecurity" in warning and "privileged" in warning


async def test_labelling_a_namespace_warns_about_existing_pods_and_bad_levels_are_refused(cluster: Cluster) -> None:
    async with admin_session(cluster) as session:
        await namespace(session, "later")
        await post(session, f"{NS}/later/pods", pod("old", {"securityContext": {"privileged": True}}))
        async with session.patch(f"{NS}/later", json={"metadata": {"labels": {
                "pod-security.kubernetes.io/enforce": "baseline"}}},
                headers={"Content-Type": "application/merge-patch+json"}) as response:
            assert response.status == 200
            assert response.headers["Warning"] == (
                '299 - "existing pods in namespace \\"later\\" violate the new PodSecurity enforce level '
                '\\"baseline:latest\\"", 299 - "old: privileged"')
        async with session.patch(f"{NS}/later/pods/old/status", json={"status": {"phase": "Running"}},
                                 headers={"Content-Type": "application/merge-patch+json"}) as response:
            assert response.status == 200  # status writes are not checked
        status, body, _ = await post(session, NS, {"metadata": {"name": "typo", "labels": {
            "pod-security.kubernetes.io/enforce": "strict"}}})
        assert status == 403
        assert body["message"].endswith('metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: '
                                        '"strict": must be one of privileged, baseline, restricted')
