"""The API's refusals of a malformed envelope, at a real Node process: typed, the
connection and the Node still serving, and naming the field at fault in `details.path`,
as every `validation_failed` does (the charter: a clear, typed error naming the field)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from maia.core import MaiaError
from maia.observe import parse_subscribe
from tests.maia.node.conftest import NodeProcess

from ._wire import RawApi

STATUS = {"method": "node.status", "params": {}}

ENVELOPES = [
    pytest.param({"id": 3, **STATUS, "extra": 1}, "extra", id="unknown-envelope-field"),
    pytest.param({"id": -1, **STATUS}, "id", id="negative-id"),
    pytest.param({"id": 1.5, **STATUS}, "id", id="float-id"),
    pytest.param({"id": "", **STATUS}, "id", id="empty-id"),
    pytest.param({"method": "node.status", "params": {}}, "id", id="missing-id"),
    pytest.param({"id": 7, "params": {}}, "method", id="missing-method"),
    pytest.param({"id": 8, "method": 5, "params": {}}, "method", id="non-string-method"),
]


def _still_serves(connection: RawApi) -> None:
    answer = connection.ask({"id": 99, **STATUS})
    assert answer["ok"] is True, answer


@pytest.mark.parametrize(("request_", "path"), ENVELOPES)
def test_envelope_refusals_are_typed_and_leave_the_connection_serving(
    node_process: NodeProcess, request_: dict[str, Any], path: str
) -> None:
    """Each malformed envelope gets `invalid_request` (not retryable, `details` an object)
    and the same connection then answers node.status."""
    with RawApi(node_process.port, node_process.token) as connection:
        connection.hello()
        answer = connection.ask(request_)
        assert answer["ok"] is False
        assert answer["error"]["code"] == "invalid_request"
        assert answer["error"]["retryable"] is False
        assert isinstance(answer["error"]["details"], dict)
        assert path in answer["error"]["message"]
        _still_serves(connection)


@pytest.mark.parametrize(("request_", "path"), ENVELOPES)
def test_envelope_refusals_name_the_field_in_details_path(
    node_process: NodeProcess, request_: dict[str, Any], path: str
) -> None:
    """The refusal's `details.path` is the envelope field at fault (`extra`, `id`,
    `method`)."""
    with RawApi(node_process.port, node_process.token) as connection:
        connection.hello()
        answer = connection.ask(request_)
        assert answer["error"]["code"] == "invalid_request"
        assert answer["error"]["details"].get("path") == path, answer["error"]


@pytest.mark.parametrize(
    ("request_", "path"),
    [
        ({"id": 5, "method": "node.status", "params": None}, "params"),
        ({"id": 6, "method": "node.status", "params": []}, "params"),
        ({"id": 10, "method": "session.show", "params": {}}, "sessionId"),
        ({"id": 11, "method": "session.show", "params": {"sessionId": 5}}, "sessionId"),
        ({"id": 13, "method": "session.list", "params": {"labels": ["ok", 5]}}, "labels[1]"),
        ({"id": 14, "method": "turn.show", "params": {"turnId": 5}}, "turnId"),
    ],
)
def test_params_refusals_name_the_field(
    node_process: NodeProcess, request_: dict[str, Any], path: str
) -> None:
    """`validation_failed` names the params field (wire name, `[i]` for list items) in the
    message and in `details.path`, and the connection goes on serving."""
    with RawApi(node_process.port, node_process.token) as connection:
        connection.hello()
        answer = connection.ask(request_)
        assert answer["error"]["code"] == "validation_failed", answer
        assert answer["error"]["details"]["path"] == path
        assert answer["error"]["message"].startswith(f"{path}: ")
        _still_serves(connection)


@pytest.mark.parametrize(
    ("request_", "path"),
    [param for param in ENVELOPES if param.values[1] != "method"],  # its own unknown_method
)
def test_the_observation_socket_names_the_envelope_field_too(
    request_: dict[str, Any], path: str
) -> None:
    """The observation socket's parser refuses the same envelopes `invalid_request` with
    the field at fault in `details.path`."""
    with pytest.raises(MaiaError) as raised:
        parse_subscribe(orjson.dumps(request_))
    assert raised.value.code == "invalid_request"
    assert raised.value.details["path"] == path
