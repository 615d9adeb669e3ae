"""A real ``redis-server`` for the tests: its own loopback port and temp dir.

``.ci/run`` installs the Debian package when it is missing.  Without
``redis-server`` (or the ``redis`` Python package) the Redis tests fail under
CI (``CI=true``) and are skipped, with the reason, elsewhere.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

#: seconds redis-server may take to answer PING after it was started
START_TIMEOUT = 10.0
#: a fetch lease's life in the lease tests: renewed every third of it, a loop held for two
#: thirds by a loaded machine loses it (0.3 s did, once, in CI)
LEASE = 1.0


def require_redis() -> None:
    """Skip (locally) or fail (under CI) when Redis cannot be used."""
    missing = []
    if shutil.which("redis-server") is None:
        missing.append("redis-server (apt-get install redis-server)")
    try:
        import redis  # noqa: F401
    except ImportError:
        missing.append("the redis package (pip install -e '.[test,redis]')")
    if not missing:
        return
    message = "Redis tests need " + " and ".join(missing)
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        pytest.fail(message + "; .ci/run installs both", pytrace=False)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process; ``stop()`` (or ``kill()``) ends it.

    ``persistent=True``: an append-only file fsynced on every write, so that
    ``start()`` after ``kill()`` brings the same data back on the same port
    (what a restarted server of a real deployment keeps)."""

    def __init__(self, workdir: Path, persistent: bool = False) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.persistent = persistent
        self.port = _free_port()
        self.log = workdir / "redis.log"
        self._proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        durability = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        self._proc = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                *durability,
                "--dir", str(self.workdir),
                "--logfile", str(self.log),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._wait_until_up()

    def _wait_until_up(self) -> None:
        """Wait for the started server to answer PING (it is killed if it does not)."""
        assert self._proc is not None
        deadline = time.monotonic() + START_TIMEOUT
        while not _ping(self.port):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"redis-server did not start on port {self.port}; see {self.log}")
            time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self):
        """A synchronous client, for the test's own look at the keys."""
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, db=0, socket_timeout=5)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def freeze(self, frozen: bool = True) -> None:
        """SIGSTOP (SIGCONT): the server keeps its connections open and stops answering, as a
        host that hangs (and comes back)."""
        import signal

        assert self._proc is not None
        self._proc.send_signal(signal.SIGSTOP if frozen else signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: the server vanishes as in a crash."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait(10)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)


#: seconds a cluster may take to be created and report ``cluster_state:ok``
CLUSTER_TIMEOUT = 30.0
#: a master unreachable this long (ms) is marked failed and its replica promoted
NODE_TIMEOUT_MS = 1000


def require_redis_cluster() -> None:
    """As :func:`require_redis`, and ``redis-cli`` (Debian's redis-tools, which redis-server depends on)."""
    require_redis()
    if shutil.which("redis-cli") is None:
        message = "Redis Cluster tests need redis-cli (apt-get install redis-tools)"
        if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
            pytest.fail(message + "; the redis-server package brings it", pytrace=False)
        pytest.skip(message)


def _free_cluster_port() -> int:
    """A free port whose cluster bus port (10,000 higher, at most 65,535) is free too."""
    for _ in range(200):
        port = _free_port()
        if port > 55535:
            continue
        try:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a Redis Cluster node")


class ClusterNode(RedisServer):
    """A ``redis-server`` with ``--cluster-enabled yes`` (its own config file in its dir)."""

    def __init__(self, workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.persistent = False
        self.port = _free_cluster_port()
        self.log = workdir / "redis.log"
        self._proc = None
        self.start()

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                "--repl-diskless-sync-delay", "0",  # a replica syncs at once (5 s by default)
                "--dir", str(self.workdir),
                "--logfile", str(self.log),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._wait_until_up()

    def client(self):
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)


def cluster_nodes(node: ClusterNode) -> list[dict]:
    """``CLUSTER NODES`` as ``node`` sees it: one dict per node (``port``, ``flags``,
    ``slots`` as ``[low, high]`` pairs)."""
    nodes = node.client().cluster("nodes")
    return [{**known, "port": int(address.rsplit(":", 1)[1])} for address, known in nodes.items()]


class RedisCluster:
    """A Redis Cluster on loopback: ``masters`` masters with ``replicas`` replicas each,
    on ephemeral ports, created with ``redis-cli --cluster create``; ``stop()`` ends it."""

    def __init__(self, workdir: Path, masters: int = 3, replicas: int = 0) -> None:
        self.nodes: list[ClusterNode] = []
        try:
            for i in range(masters * (1 + replicas)):
                self.nodes.append(ClusterNode(workdir / f"node{i}"))
            created = subprocess.run(
                [
                    "redis-cli", "--cluster", "create",
                    *(f"127.0.0.1:{node.port}" for node in self.nodes),
                    "--cluster-replicas", str(replicas),
                    "--cluster-yes",
                ],
                capture_output=True, text=True, timeout=CLUSTER_TIMEOUT,
            )  # fmt: skip
            if created.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout}{created.stderr}")
            self.wait_until_ok(len(self.nodes), masters)
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        """The store's URL: any node will do (the first one)."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    @property
    def running(self) -> list[ClusterNode]:
        return [node for node in self.nodes if node.running]

    def wait_until_ok(self, nodes: int | None = None, masters: int | None = None) -> None:
        """Until every running node says ``cluster_state:ok`` (``CLUSTER INFO``), knows
        ``nodes`` nodes and sees ``masters`` masters with slots (``CLUSTER NODES``)."""
        deadline = time.monotonic() + CLUSTER_TIMEOUT
        while True:
            try:
                running = self.running
                ports = {node.port for node in running}
                if all(self._settled(node, nodes, masters, ports) for node in running):
                    return
            except Exception:  # noqa: BLE001 - a node still starting: ask again
                pass
            if time.monotonic() > deadline:
                states = {node.port: self._describe(node) for node in self.running}
                raise RuntimeError(f"the Redis Cluster did not settle within {CLUSTER_TIMEOUT:g} s: {states}")
            time.sleep(0.1)

    @staticmethod
    def _settled(node: ClusterNode, nodes: int | None, masters: int | None, running: set[int]) -> bool:
        """``node`` says the cluster is ok, knows ``nodes`` live nodes, the slots are served
        by ``masters`` masters, all of them running (a killed one's slots taken over), and,
        when ``node`` is a replica, it has synced with its master."""
        if node.client().cluster("info").get("cluster_state") != "ok":
            return False
        live = [n for n in cluster_nodes(node) if "fail" not in n["flags"]]
        if nodes is not None and len(live) < nodes:
            return False
        serving = [n for n in live if "master" in n["flags"] and n["slots"]]
        if any(n["port"] not in running for n in serving):
            return False
        if masters is not None and len(serving) != masters:
            return False
        # a replica that never synced with its master cannot be promoted
        replication = node.client().info("replication")
        return replication.get("role") != "slave" or replication.get("master_link_status") == "up"

    @staticmethod
    def _describe(node: ClusterNode) -> str:
        try:
            return repr(cluster_nodes(node))
        except Exception as exc:  # noqa: BLE001
            return repr(exc)

    def client(self):
        """A synchronous cluster client, for the test's own look at the keys."""
        import redis

        node = self.running[0]
        return redis.RedisCluster(host="127.0.0.1", port=node.port, socket_timeout=5)

    def keys(self, pattern: str) -> list[bytes]:
        """Every key matching ``pattern`` on every master (the cluster client's ``KEYS``
        asks one node), sorted."""
        client = self.client()
        return sorted(client.keys(pattern, target_nodes=client.PRIMARIES))

    def master_of(self, key: str) -> ClusterNode:
        """The node that owns ``key``'s slot now."""
        node = self.running[0]
        slot = node.client().execute_command("CLUSTER KEYSLOT", key)
        for known in cluster_nodes(node):
            if "master" in known["flags"] and "fail" not in known["flags"]:
                if any(int(low) <= slot <= int(high) for low, high in known["slots"]):
                    return next(n for n in self.nodes if n.port == known["port"])
        raise LookupError(f"no master serves slot {slot} of {key!r}")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
