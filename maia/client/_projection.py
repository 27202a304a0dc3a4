"""The SDK's methods, projected from the operation registry (never a hand-written list).

Every registered op becomes a method under its dotted ID: `client.node.status()`,
`client.session.create(title=...)`, `client.turn.queue.list(session_id=...)`. A method takes
either an instance of the op's input class, or keyword arguments that build one (Python
names), checks it locally, sends its JSON form, and decodes the answer into the op's output
class. `client.call(op_id, ...)` is the same by name.

A mutation whose `commandId` is its idempotency key gets a fresh one when the caller gives
none, as the CLI does; to retry a call safely, pass the `command_id` of the first attempt
(its receipt names it) explicitly. Where `commandId` is a look-up key (`receipt.get`), none
is ever invented.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from typing import Any

import attrs

from maia import __version__
from maia.core import FieldSpec, new_id
from maia.protocol import PROTOCOL_VERSION, REGISTRY, MaiaError, OperationDescriptor, check, to_json


def registry_mismatch(sent: Mapping[str, Any], answer: Mapping[str, Any]) -> MaiaError:
    """`protocol_incompatible` for a Node whose `node.hello` answer said (`registryMatch`
    false) that the registry digest the hello `sent` is not its own: both digests."""
    client, node = sent.get("registryDigest"), answer.get("registryDigest")
    return MaiaError(
        "protocol_incompatible",
        f"this SDK's operation registry {client} is not the Node's {node}: they were built"
        " on other registries (upgrade both)",
        {"client": client, "node": node},
    )


def hello_params(options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The params of this SDK's `node.hello`: its protocol version and registry digest,
    with `options` (wire names) over them; an option set to None sends no such field."""
    params = {
        "protocol": PROTOCOL_VERSION,
        "registryDigest": REGISTRY.digest,
        "clientName": "maia.client",
        "clientVersion": __version__,
    }
    if options:
        params.update(options)
        params = {key: value for key, value in params.items() if value is not None}
    return params


def descriptor_of(op_id: str) -> OperationDescriptor:
    """Raises `MaiaError(unknown_method)` for an op this SDK does not know."""
    descriptor = REGISTRY.get(op_id)
    if descriptor is None:
        raise MaiaError("unknown_method", f"no operation named {op_id}", {"method": op_id})
    return descriptor


def _wire_of(attribute: Any) -> str:
    """The field's wire name: its spec's own, else the camelCase of the Python name."""
    specs = [v for v in attribute.metadata.values() if isinstance(v, FieldSpec)]
    if specs and specs[0].wire:
        return str(specs[0].wire)
    name: str = attribute.name
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _check_keywords(input_type: type, fields: Mapping[str, Any]) -> None:
    """Refuse an unknown keyword, then a missing required one, naming it as the API does.

    Raises `MaiaError(validation_failed)` with `details.path` the unknown keyword as given,
    or the missing field's wire name (`projectId`)."""
    known = [a for a in attrs.fields(input_type) if a.init]
    names = {a.name for a in known}
    for name in fields:
        if name not in names:
            raise MaiaError("validation_failed", f"{name}: is not a field of this operation",
                            {"path": name})  # fmt: skip
    for attribute in known:
        if attribute.default is attrs.NOTHING and attribute.name not in fields:
            wire = _wire_of(attribute)
            raise MaiaError("validation_failed", f"{wire}: is required", {"path": wire})


def encode_params(
    descriptor: OperationDescriptor, params: Any, fields: Mapping[str, Any]
) -> dict[str, Any]:
    """The wire params for `descriptor` from an input instance, a wire dict, or fields.

    Raises `MaiaError(validation_failed)` when they do not make a valid input.
    """
    input_type = descriptor.input_type
    if params is not None and fields:
        raise MaiaError(
            "validation_failed",
            "params: pass an input object or keyword fields, not both",
            {"path": "params"},
        )
    generate = _generates_command_id(descriptor)
    if params is None:
        if generate and "command_id" not in fields:
            fields = {**fields, "command_id": new_id("command")}
        if input_type is None or not attrs.has(input_type):
            return dict(fields)
        _check_keywords(input_type, fields)
        try:
            params = input_type(**fields)
        except TypeError as error:
            raise MaiaError("validation_failed", f"params: {error}", {"path": "params"}) from error
    if isinstance(params, Mapping):
        wire = dict(params)
        if generate and "commandId" not in wire:
            wire["commandId"] = new_id("command")
    elif input_type is not None and isinstance(params, input_type):
        wire = to_json(params)
    else:
        raise MaiaError(
            "validation_failed",
            f"params: expected {getattr(input_type, '__name__', 'a mapping')}",
            {"path": "params"},
        )
    if input_type is not None and attrs.has(input_type):
        check(input_type, wire)  # refuse locally what the Node would refuse
    return wire


def _generates_command_id(descriptor: OperationDescriptor) -> bool:
    input_type = descriptor.input_type
    return (
        descriptor.idempotency == "required"
        and input_type is not None
        and attrs.has(input_type)
        and any(field.name == "command_id" for field in attrs.fields(input_type))
    )


def decode_result(descriptor: OperationDescriptor, result: Any) -> Any:
    """The op's output instance. Raises `MaiaError(validation_failed)` on a foreign shape."""
    output_type = descriptor.output_type
    if output_type is None or not attrs.has(output_type):
        return result
    return check(output_type, result)


def _tree() -> dict[str, Any]:
    root: dict[str, Any] = {}
    for operation_id in REGISTRY.ids():  # IDs only: no op module is imported for this
        node = root
        for part in operation_id.split("."):
            node = node.setdefault(part, {})
        node[""] = operation_id
    return root


OPERATION_TREE: dict[str, Any] = _tree()


class Namespace:
    """A dotted prefix of op IDs; calling it calls the op of that exact ID."""

    def __init__(self, client: Any, node: dict[str, Any], prefix: str) -> None:
        self._client = client
        self._node = node
        self._prefix = prefix

    def __getattr__(self, name: str) -> Namespace:
        key = name[:-1] if name.endswith("_") and keyword.iskeyword(name[:-1]) else name
        child = self._node.get(key)
        if child is None or key == "":
            raise AttributeError(f"no operation under {self._prefix}.{name}")
        return Namespace(self._client, child, f"{self._prefix}.{key}")

    def __dir__(self) -> list[str]:
        return [name for name in self._node if name]

    async def __call__(self, params: Any = None, /, **fields: Any) -> Any:
        op_id = self._node.get("")
        if op_id is None:
            raise MaiaError("unknown_method", f"no operation named {self._prefix}", {})
        return await self._client.call(op_id, params, **fields)
