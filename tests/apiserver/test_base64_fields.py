"""[]byte fields (Secret data, ConfigMap binaryData) take base64 as Kubernetes' decoder does: line breaks (a
certificate pasted from a file) are skipped, the value is stored and read back in canonical base64 on one line,
and what Go cannot decode is refused with its error."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import ApiHttp

NS = "/api/v1/namespaces/default"
PEM_LIKE = bytes(range(256)) * 3


def wrapped(data: bytes, newline: str = "\n") -> str:
    """``data`` in base64 at 76 columns, as `base64` and PEM files write it."""
    return base64.encodebytes(data).decode().replace("\n", newline)


async def test_secret_data_with_line_breaks_is_stored_and_read_back_on_one_line(http: ApiHttp) -> None:
    status, created = await http.post(f"{NS}/secrets", {"metadata": {"name": "tls"}, "data": {
        "tls.crt": wrapped(PEM_LIKE), "tls.key": wrapped(b"key bytes", "\r\n")}})
    assert status == 201, created
    expected = {"tls.crt": base64.b64encode(PEM_LIKE).decode(), "tls.key": base64.b64encode(b"key bytes").decode()}
    assert created["data"] == expected
    assert (await http.get(f"{NS}/secrets/tls"))[1]["data"] == expected


async def test_config_map_binary_data_with_line_breaks_is_accepted_on_create_update_and_patch(http: ApiHttp) -> None:
    status, created = await http.post(f"{NS}/configmaps", {"metadata": {"name": "bin"},
                                                           "binaryData": {"blob": wrapped(PEM_LIKE)}})
    assert (status, created["binaryData"]) == (201, {"blob": base64.b64encode(PEM_LIKE).decode()})
    created["binaryData"]["other"] = "b3Ro\nZXI="
    status, updated = await http.put(f"{NS}/configmaps/bin", created)
    assert (status, updated["binaryData"]["other"]) == (200, "b3RoZXI=")
    for content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        status, patched = await http.patch(f"{NS}/configmaps/bin", {"binaryData": {"third": "dGhp\r\ncmQ="}},
                                           content_type)
        assert (status, patched["binaryData"]["third"]) == (200, "dGhpcmQ="), content_type
    status, patched = await http.patch(f"{NS}/configmaps/bin", [
        {"op": "add", "path": "/binaryData/fourth", "value": "Zm91\ncnRo"}], "application/json-patch+json")
    assert (status, patched["binaryData"]["fourth"]) == (200, "Zm91cnRo")


async def test_server_side_apply_of_wrapped_secret_data_stores_it_canonical(http: ApiHttp) -> None:
    config = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\ndata:\n  ca.crt: |\n'
    config += "".join(f"    {line}\n" for line in wrapped(PEM_LIKE).splitlines())
    status, applied = await http.call("PATCH", f"{NS}/secrets/applied", data=config.encode(),
                                      content_type="application/apply-patch+yaml", params={"fieldManager": "t"})
    assert (status, applied["data"]["ca.crt"]) == (201, base64.b64encode(PEM_LIKE).decode())


async def test_base64_go_cannot_decode_is_refused_with_its_error(http: ApiHttp) -> None:
    status, refused = await http.post(f"{NS}/secrets", {"metadata": {"name": "bad"}, "data": {"a": "not base64!"}})
    assert (status, refused["reason"]) == (400, "BadRequest")
    assert refused["message"] == 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at ' \
                                 'input byte 3'
    assert (await http.post(f"{NS}/secrets", {"metadata": {"name": "good"}, "data": {"a": "YQ=="}}))[0] == 201
    status, refused = await http.patch(f"{NS}/secrets/good", {"data": {"a": "YWJjZA"}})
    assert (status, refused["reason"]) == (422, "Invalid")
    assert refused["details"]["causes"][0]["field"] == "patch"
    assert refused["details"]["causes"][0]["message"].endswith(": illegal base64 data at input byte 4")
    assert (await http.get(f"{NS}/secrets/good"))[1]["data"] == {"a": "YQ=="}
