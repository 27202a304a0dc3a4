"""wss:// on the machine link with the Control Node's certificate pinned by the enrollment
token: self-signed certificates made here with the `openssl` CLI, everything on 127.0.0.1.
A matching pin enrolls and runs a placed turn over TLS; a mismatching one sends nothing
(not even the bearer) and says which fingerprints differ; a wss:// address without a pin,
or a pin over ws://, is refused before any connection."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
import trio

from maia.machines import ExecutionLink, TlsFilesInvalid, certificate_fingerprint, listener_tls
from maia.protocol import SystemClock

from ._nodes import NodeProc, enroll, link_of, stop_pair, wait_for
from .test_placement_e2e import _attempts, _ppid

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")
BOUND_S = 240
TOKEN = "mtok1.machine_" + "0" * 32 + ".1." + "A" * 43


def _certificate(folder: Path, name: str) -> tuple[Path, Path, str]:
    """A self-signed P-256 certificate for 127.0.0.1, its key, and the fingerprint openssl
    prints for it (colons dropped, lowercase): the figure a user compares."""
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", f"/CN={name}", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True,
                   timeout=60)  # fmt: skip
    shown = subprocess.run(["openssl", "x509", "-in", str(cert), "-noout", "-fingerprint",
                            "-sha256"], check=True, capture_output=True, text=True,
                           timeout=60).stdout  # fmt: skip
    return cert, key, shown.strip().split("=", 1)[1].replace(":", "").lower()


def test_listener_tls_fingerprint_is_the_one_openssl_prints(tmp_path: Path) -> None:
    """The fingerprint tokens carry is openssl's sha256 of the certificate; a key of
    another certificate is refused naming the key file."""
    cert, key, shown = _certificate(tmp_path, "control")
    _, other_key, _ = _certificate(tmp_path, "other")
    assert listener_tls(cert, key).fingerprint == shown
    with pytest.raises(TlsFilesInvalid, match="--machines-key"):
        listener_tls(cert, other_key)
    with pytest.raises(TlsFilesInvalid, match="no PEM certificate"):
        listener_tls(key, key)


async def _raw_tls_server(nursery: trio.Nursery, cert: Path, key: Path,
                          received: list[int]) -> int:  # fmt: skip
    """A TLS server on 127.0.0.1 that completes handshakes and counts, per connection, the
    application bytes it then receives (bounded: it reads at most 64 KiB each)."""
    context = listener_tls(cert, key).context
    [listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")

    async def serve(stream: trio.SSLStream[trio.SocketStream]) -> None:
        got = 0
        with trio.move_on_after(10):
            try:
                await stream.do_handshake()
                while got < 65_536 and (data := await stream.receive_some(4096)):
                    got += len(data)
            except trio.BrokenResourceError:
                pass
        received.append(got)
        await trio.aclose_forcefully(stream)

    async def accept() -> None:
        try:
            for _ in range(20):  # bounded, whatever the client does
                tcp = await listener.accept()
                nursery.start_soon(serve, trio.SSLStream(tcp, context, server_side=True))
        finally:
            await trio.aclose_forcefully(listener)

    nursery.start_soon(accept)
    port: int = listener.socket.getsockname()[1]
    return port


async def _link_until(link: ExecutionLink, phase: str) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(link.run)
            for _ in range(600):  # polled: the phase is a plain attribute
                if link.state.phase == phase:
                    break
                await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
    assert link.state.phase == phase, link.state


async def test_a_mismatching_certificate_gets_nothing(tmp_path: Path) -> None:
    """The token pins certificate B; the server at the address presents A: the Execution
    Node completes the TLS handshake, sends no byte after it (no upgrade, no bearer), and
    says which fingerprint it got and which it pinned; it enrolls nothing."""
    cert, key, presented = _certificate(tmp_path, "impostor")
    _, _, pinned = _certificate(tmp_path, "control")
    received: list[int] = []
    home = tmp_path / "execution"
    home.mkdir(mode=0o700)
    async with trio.open_nursery() as nursery:
        port = await _raw_tls_server(nursery, cert, key, received)
        link = ExecutionLink(home, f"wss://127.0.0.1:{port}", f"{TOKEN}.{pinned}", "node_x",
                             SystemClock())  # fmt: skip
        await _link_until(link, "pin_mismatch")
        for _ in range(200):
            if received:
                break
            await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    assert received[0] == 0  # the handshake only: nothing was sent
    assert link.state.refusal is not None
    assert presented in link.state.refusal
    assert pinned in link.state.refusal
    assert not (home / "machine.json").exists()
    print(f"\nrefused: {link.state.refusal}; bytes after the handshake: {received}")


@pytest.mark.parametrize(("scheme", "pinned"), [("wss", False), ("ws", True)])
async def test_a_pin_and_the_scheme_must_agree(tmp_path: Path, scheme: str, pinned: bool) -> None:
    """wss:// with a token that pins nothing, or a pinned token with ws://, is refused for
    good before any connection (the address is never dialled: port 9 is discard)."""
    token = f"{TOKEN}.{'a' * 64}" if pinned else TOKEN
    link = ExecutionLink(tmp_path, f"{scheme}://127.0.0.1:9", token, "node_x", SystemClock())
    await _link_until(link, "refused")
    assert link.state.refusal is not None
    assert ("no certificate fingerprint" if scheme == "wss" else "use wss://") in (
        link.state.refusal
    )
    assert link.state.connections == 0


async def _blocking(function: object, *args: object) -> object:
    return await trio.to_thread.run_sync(lambda: function(*args))  # type: ignore[operator]


def test_a_placed_turn_runs_over_pinned_wss(tmp_path: Path) -> None:
    """Control listens with a self-signed certificate; the token it prints ends with the
    fingerprint openssl shows; the Execution Node enrolls over wss://, keeps the pin in
    machine.json (0600) and runs a placed turn whose worker is its child."""
    cert, key, shown = _certificate(tmp_path, "control")
    home = tmp_path / "control"
    home.mkdir(mode=0o700)
    control = NodeProc(home, "--machines-listen", "127.0.0.1:0", "--machines-cert", str(cert),
                       "--machines-key", str(key)).start()  # fmt: skip
    execution: NodeProc | None = None
    try:
        wait_for(lambda: f"(certificate sha256 {shown})" in control.log(),
                 "the wss:// listener did not start", control)  # fmt: skip
        port = int(control.log().split("listening on wss://127.0.0.1:")[1].split("/")[0])
        token = enroll(control, "box")
        assert token.endswith(f".{shown}")
        token_file = tmp_path / "token.txt"
        token_file.write_text(token)
        execution = NodeProc(tmp_path / "execution", "--execution", "--control",
                             f"wss://127.0.0.1:{port}", "--enrollment-file",
                             str(token_file)).start()  # fmt: skip
        wait_for(lambda: link_of(control, "box").get("heartbeats", 0) >= 1,
                 "the Execution Node did not connect over wss://", control)  # fmt: skip
        stored = json.loads((execution.home / "machine.json").read_text())
        assert stored["controlFingerprint"] == shown
        assert (execution.home / "machine.json").stat().st_mode & 0o777 == 0o600
        project = tmp_path / "project"
        project.mkdir()
        project_id = control.call("project", "add", str(project))["project"]["projectId"]
        created = control.call("session", "create", "--project-id", project_id, "--machine",
                               "box")  # fmt: skip
        session_id = created["session"]["sessionId"]
        sent = control.maia("turn", "send", session_id, "hello over tls", "--wait",
                            "--timeout", "120s")  # fmt: skip
        assert "hello over tls" in sent.stdout
        [(_, pid)] = _attempts(control, session_id)
        assert _ppid(pid) == execution.pid
        assert ssl.PEM_cert_to_DER_cert(cert.read_text())  # the file is the one pinned
        assert certificate_fingerprint(ssl.PEM_cert_to_DER_cert(cert.read_text())) == shown
    finally:
        stop_pair(control, execution)
