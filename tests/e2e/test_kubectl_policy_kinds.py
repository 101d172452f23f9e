"""Real kubectl with the kinds that set policy in a namespace: LimitRanges and ResourceQuotas (get with Kubernetes'
columns, create, describe) and what their admission plugins refuse."""

from __future__ import annotations

import re

LIMIT_RANGE = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bounds"},
               "spec": {"limits": [{"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "1"}}]}}


async def test_limit_ranges_print_name_and_created_at_and_refuse_pods_outside_them(kubectl) -> None:
    await kubectl("apply", "-f", kubectl.manifest("range.yaml", LIMIT_RANGE))
    listed = await kubectl("get", "limits")
    assert listed.rows[0] == ["NAME", "CREATED AT"]
    assert listed.rows[1][0] == "bounds" and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", listed.rows[1][1])
    described = await kubectl("describe", "limitrange", "bounds")
    assert re.search(r"Container\s+cpu\s+100m\s+1\s+1\s+1\s+-", described.out), described.out
    refused = await kubectl("run", "tiny", "--image=busybox", "--overrides",
                            '{"spec":{"containers":[{"name":"tiny","image":"busybox",'
                            '"resources":{"requests":{"cpu":"50m"}}}]}}', ok=False)
    assert refused.code != 0
    assert 'pods "tiny" is forbidden: minimum cpu usage per Container is 100m, but request is 50m' in refused.err


async def test_kubectl_create_quota_and_get_shows_request_and_limit_columns(http, kubectl) -> None:
    await kubectl("create", "quota", "small", "--hard=pods=1,requests.cpu=2,limits.cpu=4")
    status, created = await http.get("/api/v1/namespaces/default/resourcequotas/small")
    assert status == 200 and created["spec"]["hard"] == {"pods": "1", "requests.cpu": "2", "limits.cpu": "4"}
    created["status"] = {"hard": created["spec"]["hard"], "used": {"pods": "0", "requests.cpu": "0",
                                                                   "limits.cpu": "0"}}
    assert (await http.put("/api/v1/namespaces/default/resourcequotas/small/status", created))[0] == 200
    listed = await kubectl("get", "quota")
    assert listed.rows[0] == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert listed.rows[1][0] == "small"
    assert listed.rows[1][2:] == ["pods: 0/1, requests.cpu: 0/2", "limits.cpu: 0/4"]
    first = await kubectl("run", "first", "--image=busybox", "--overrides",
                          '{"spec":{"containers":[{"name":"first","image":"busybox",'
                          '"resources":{"limits":{"cpu":"1"}}}]}}')
    assert first.code == 0
    second = await kubectl("run", "second", "--image=busybox", "--overrides",
                           '{"spec":{"containers":[{"name":"second","image":"busybox",'
                           '"resources":{"limits":{"cpu":"1"}}}]}}', ok=False)
    assert second.code != 0
    assert ('pods "second" is forbidden: exceeded quota: small, requested: pods=1, used: pods=1, limited: pods=1'
            in second.err)
    bare = await kubectl("run", "bare", "--image=busybox", ok=False)
    assert 'pods "bare" is forbidden: failed quota: small: must specify limits.cpu,requests.cpu' in bare.err
