"""The `maia` CLI's wall time beside a minimal stdlib WebSocket client, in the same run.

One real Node (`python -m maia.node start`) runs on 127.0.0.1 in a temporary home holding
a few Sessions. Each sample is one fresh process, timed from spawn to exit:
  * `maia session list --json` and `maia node status` (the installed console script);
  * a minimal client (`python -c`, standard library only: a socket, a hand-written
    WebSocket handshake and framing) that reads the discovery file and the token as the
    CLI does, checks the Node's pid, sends `node.hello` with the registry digest, makes
    the same call, prints the result and closes.
The four kinds alternate inside each round (a load swing hits all alike), after a warm-up;
figures are medians. `vs_minimal` is the minimal client's time over Maia's (higher is
better; 0.333 is the goal's 3x), the worse of the two commands. The interpreter's own start
(`python -c pass`), `maia --help` and `maia session list --schema` are reported beside.

`--baseline DIR` (a source tree of another revision, e.g. `git archive REV | tar -x -C DIR`,
bytecode compiled there as `./dev` does here) also times that revision's two commands,
interleaved in the same rounds, against a second Node started from DIR (its registry may
differ): `session_list_ms_baseline`, `node_status_ms_baseline`, `vs_minimal_baseline`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._node import start_node
from bench._report import Report, log, parse_args

# The minimal client: what any program needs to ask a Node one question, and nothing more.
MINIMAL_CLIENT = r"""
import base64, hashlib, json, os, socket, struct, sys

method, digest = sys.argv[1], sys.argv[2]
home = os.environ["MAIA_HOME"]
with open(os.path.join(home, "node.json"), "rb") as f:
    record = json.load(f)
os.kill(record["pid"], 0)  # the Node is alive
with open(record["tokenPath"], "rb") as f:
    token = f.read().strip().decode("ascii")
hostport, _, path = record["url"][len("ws://"):].partition("/")
host, _, port = hostport.rpartition(":")
sock = socket.create_connection((host, int(port)), timeout=10)
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall((
    f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
    f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
    f"Authorization: Bearer {token}\r\n\r\n"
).encode())
buffer = b""
while b"\r\n\r\n" not in buffer:
    chunk = sock.recv(65536)
    if not chunk:
        sys.exit("closed during the upgrade")
    buffer += chunk
head, _, buffer = buffer.partition(b"\r\n\r\n")
accept = base64.b64encode(
    hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()
)
if not head.startswith(b"HTTP/1.1 101") or accept not in head:
    sys.exit(head.decode("latin-1"))

def read(n):
    global buffer
    while len(buffer) < n:
        chunk = sock.recv(65536)
        if not chunk:
            sys.exit("connection lost")
        buffer += chunk
    out, buffer = buffer[:n], buffer[n:]
    return out

def send(opcode, payload):
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 65536:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big"))
    sock.sendall(header + mask + masked.to_bytes(n, "big"))

def receive():
    parts = []
    while True:
        first, second = read(2)
        n = second & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", read(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", read(8))
        payload = read(n)
        opcode = first & 0x0F
        if opcode == 0x9:
            send(0xA, payload)
            continue
        if opcode == 0x8:
            sys.exit("closed by the Node")
        parts.append(payload)
        if first & 0x80:
            return json.loads(b"".join(parts))

def call(request_id, name, params):
    send(0x1, json.dumps({"id": request_id, "method": name, "params": params}).encode())
    answer = receive()
    if answer.get("ok") is not True:
        sys.exit(json.dumps(answer))
    return answer["result"]

call(1, "node.hello", {"protocol": "maia.protocol/v1alpha1", "registryDigest": digest})
result = call(2, method, {})
send(0x8, struct.pack("!H", 1000))
sock.close()
sys.stdout.write(json.dumps(result) + "\n")
"""


def maia_command() -> list[str]:
    """The installed console script beside this interpreter, else `python -m maia`."""
    script = Path(sys.executable).parent / "maia"
    return [str(script)] if script.exists() else [sys.executable, "-m", "maia"]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall milliseconds of one process, from spawn to exit. Raises on a non-zero exit."""
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    elapsed = (time.perf_counter() - began) * 1000
    if done.returncode != 0:
        raise SystemExit(
            f"bench/cli.py: {' '.join(argv)} exited {done.returncode}: {done.stderr[-400:]!r}"
        )
    return elapsed


def baseline_dir(argv: list[str]) -> Path | None:
    """`--baseline DIR` taken out of `argv` (the shared flags parse the rest)."""
    if "--baseline" not in argv:
        return None
    index = argv.index("--baseline")
    folder = Path(argv[index + 1]).resolve()
    del argv[index : index + 2]
    if not (folder / "maia" / "cli").is_dir():
        raise SystemExit(f"bench/cli.py: {folder} is not a Maia source tree")
    return folder


def main() -> None:
    argv = sys.argv[1:]
    baseline = baseline_dir(argv)
    args = parse_args(__doc__ or "cli", argv)
    runs, warmup, sessions = (8, 2, 3) if args.quick else (20, 3, 10)
    load_before = os.getloadavg()[0]
    report = Report("cli")
    maia = maia_command()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        project = Path(folder) / "project"
        project.mkdir()
        env = {**os.environ, "MAIA_HOME": str(home)}
        env.pop("MAIA_NODE", None)
        node = start_node(home, "bench/cli.py", env=env, cwd=home.parent)
        old_node = None
        old_env = dict(env)
        old_maia = [sys.executable, "-c", "import sys; from maia.cli import main; sys.exit(main())"]
        try:
            for index in range(sessions):
                timed([*maia, "session", "create", "--title", f"bench {index}"], env, project)
            if baseline is not None:
                old_env["MAIA_HOME"] = str(Path(folder) / "home-baseline")
                old_env["PYTHONPATH"] = str(baseline)
                old_home = Path(old_env["MAIA_HOME"])
                old_node = start_node(old_home, "bench/cli.py", env=old_env, cwd=old_home.parent)
                for index in range(sessions):
                    timed([*old_maia, "session", "create", "--title", f"bench {index}"],
                          old_env, project)  # fmt: skip
            from maia.protocol import REGISTRY

            digest = REGISTRY.digest  # what the CLI would send: the registry it was built on
            kinds = {
                "session_list": [*maia, "session", "list", "--json"],
                "node_status": [*maia, "node", "status"],
                "minimal_list": [sys.executable, "-c", MINIMAL_CLIENT, "session.list", digest],
                "minimal_status": [sys.executable, "-c", MINIMAL_CLIENT, "node.status", digest],
                "interpreter": [sys.executable, "-c", "pass"],
                "help": [*maia, "--help"],
                "schema": [*maia, "session", "list", "--schema"],
            }
            envs = dict.fromkeys(kinds, env)
            if baseline is not None:
                kinds["session_list_baseline"] = [*old_maia, "session", "list", "--json"]
                kinds["node_status_baseline"] = [*old_maia, "node", "status"]
                kinds["session_list_python_c"] = [*old_maia, "session", "list", "--json"]
                envs.update(session_list_baseline=old_env, node_status_baseline=old_env,
                            session_list_python_c=env)  # fmt: skip
            samples: dict[str, list[float]] = {kind: [] for kind in kinds}
            log(f"cli: {len(kinds)} commands, {warmup} warm-up + {runs} runs each, interleaved")
            for round_number in range(warmup + runs):
                for kind, command in kinds.items():
                    elapsed = timed(command, envs[kind], project)
                    if round_number >= warmup:
                        samples[kind].append(elapsed)
        finally:
            for running in (node, old_node):
                if running is not None:
                    running.terminate()
                    running.wait(timeout=30)
    median = {kind: statistics.median(values) for kind, values in samples.items()}
    report.figures["session_list_ms"] = round(median["session_list"], 1)
    report.figures["node_status_ms"] = round(median["node_status"], 1)
    report.figures["minimal_client_ms"] = round(median["minimal_list"], 1)
    report.figures["minimal_status_ms"] = round(median["minimal_status"], 1)
    report.figures["interpreter_ms"] = round(median["interpreter"], 1)
    report.figures["help_ms"] = round(median["help"], 1)
    report.figures["schema_ms"] = round(median["schema"], 1)
    report.figures["load_avg_1m_before"] = round(load_before, 2)
    report.figures["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    list_ratio = median["minimal_list"] / median["session_list"]
    status_ratio = median["minimal_status"] / median["node_status"]
    report.ratios["vs_minimal"] = round(min(list_ratio, status_ratio), 3)
    report.ratios["vs_minimal_session_list"] = round(list_ratio, 3)
    report.ratios["vs_minimal_node_status"] = round(status_ratio, 3)
    if baseline is not None:
        report.figures["session_list_ms_baseline"] = round(median["session_list_baseline"], 1)
        report.figures["node_status_ms_baseline"] = round(median["node_status_baseline"], 1)
        report.figures["session_list_ms_python_c"] = round(median["session_list_python_c"], 1)
        report.ratios["vs_minimal_baseline"] = round(
            min(median["minimal_list"] / median["session_list_baseline"],
                median["minimal_status"] / median["node_status_baseline"]), 3
        )  # fmt: skip
    bytecode = "off" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    report.notes = (
        f"wall time of fresh processes, median of {runs} after {warmup} warm-up, interleaved; "
        f"{sessions} Sessions in the home; minimal = python -c, stdlib socket WebSocket, "
        f"hello + the same call; vs_minimal = minimal/Maia, the worse of list and status; "
        f"maia = {shutil.which(maia[0]) or maia[0]}; PYTHONDONTWRITEBYTECODE "
        f"{'set' if bytecode == 'off' else 'unset'}"
        + (f"; baseline = {baseline} (python -c, PYTHONPATH), its own Node; session_list_ms_"
           f"python_c = this tree the same way" if baseline is not None else "")
    )  # fmt: skip
    report.emit(args.json)


if __name__ == "__main__":
    main()
