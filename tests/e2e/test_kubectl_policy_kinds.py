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
