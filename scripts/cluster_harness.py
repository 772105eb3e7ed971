"""A cluster on loopback for the figure scripts: one etcd member and `shardlog serve`
nodes of one shard each (the given binary), with the keys a script adds, and the helpers
every script needs (free ports, waiting for a listener, pacing a producer, percentiles).

    from cluster_harness import Cluster, pct
    c = Cluster(binary, extra="follower.replication.throttled.rate=1000000\\n")
    c.start(1); c.start(2); c.start(3)
    ... c.bootstrap ... c.stop_all()
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


class Cluster:
    def __init__(self, binary, extra="", prefix="cluster-"):
        self.binary, self.extra = binary, extra
        self.data = tempfile.mkdtemp(prefix=prefix)
        self.nodes = {}
        port, peer = free_port(), free_port()
        self.etcd = subprocess.Popen(
            ["etcd", "--data-dir", os.path.join(self.data, "etcd"),
             "--listen-client-urls", f"http://127.0.0.1:{port}",
             "--advertise-client-urls", f"http://127.0.0.1:{port}",
             "--listen-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"default=http://127.0.0.1:{peer}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.etcd_port = port
        time.sleep(1.5)

    def start(self, i):
        """Starts node `i` (again, on the same ports and data, after a kill)."""
        d = os.path.join(self.data, f"n{i}")
        os.makedirs(d, exist_ok=True)
        if i not in self.nodes:
            self.nodes[i] = {"kafka": free_port(), "native": free_port()}
        n = self.nodes[i]
        cfg = os.path.join(self.data, f"n{i}.properties")
        with open(cfg, "w") as f:
            f.write(f"cluster.etcd.endpoints=http://127.0.0.1:{self.etcd_port}\nbroker.id={i}\n"
                    f"kafka.listen=127.0.0.1:{n['kafka']}\nshards=1\n"
                    "broker.session.timeout.ms=3000\nbroker.heartbeat.interval.ms=200\n"
                    + self.extra)
        log = open(os.path.join(self.data, f"n{i}.log"), "a")
        n["proc"] = subprocess.Popen(
            [self.binary, "serve", "--data-dir", d, "--listen", f"127.0.0.1:{n['native']}",
             "--config", cfg], stdout=log, stderr=log)
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", n["kafka"]), 0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"node {i} did not start")

    @property
    def bootstrap(self):
        return ",".join(f"127.0.0.1:{n['kafka']}" for n in self.nodes.values())

    def native(self, i):
        return f"127.0.0.1:{self.nodes[i]['native']}"

    def stop_all(self):
        for n in self.nodes.values():
            if n["proc"].poll() is None:
                n["proc"].send_signal(signal.SIGCONT)
                n["proc"].send_signal(signal.SIGTERM)
        for n in self.nodes.values():
            n["proc"].wait(30)
        self.etcd.terminate()
        self.etcd.wait()
        shutil.rmtree(self.data, ignore_errors=True)
