"""Issue 22's figures, against a server this script starts (release build):

  python scripts/security_figures.py BINARY [LOADGEN]

1. produce and fetch MB/s of one confluent-kafka client over PLAINTEXT, SSL and SASL_SSL
   (SCRAM-SHA-256), same run, same topic size (1 KB records);
2. connection set-up p50/p99 over 300 fresh connections each: TCP connect + ApiVersions
   (PLAINTEXT, the floor), + TLS handshake (SSL), + TLS + SaslHandshake + the two SCRAM
   round trips (SASL_SSL; the client's PBKDF2 is computed once and reused, so the figure
   is the server's and the network's part, not the client's key derivation).
3. with LOADGEN (target/release/loadgen): `loadgen write` MB/s (512 MiB, 1 KiB records, 2
   connections, acks=1, shard-aware) on the native listener over PLAINTEXT and SASL_SSL
   (`native.security.protocol`, SCRAM-SHA-256; loadgen's -X), servers alternated A B A B.
The certificates (a CA and a server certificate for 127.0.0.1) are minted with the
`openssl` command. Prints one line per figure.
"""
import base64
import hashlib
import hmac
import os
import shutil
import signal
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

binary = sys.argv[1]
data = tempfile.mkdtemp(prefix="security-figures-")
PLAIN, SSL_PORT, SASL_SSL = "127.0.0.1:29692", "127.0.0.1:29693", "127.0.0.1:29694"
NATIVE = "127.0.0.1:29611"
USER, PASSWORD = "bench", "bench-password"

def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=data)


ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=figures CA")
openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
with open(os.path.join(data, "san.ext"), "w") as f:
    f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
keystore = os.path.join(data, "keystore.pem")
with open(keystore, "w") as f:
    for name in ["server.pem", "ca.pem", "server.key"]:
        f.write(open(os.path.join(data, name)).read())
ca_file = os.path.join(data, "ca.pem")
config = os.path.join(data, "server.properties")
with open(config, "w") as f:
    f.write(f"listeners=PLAINTEXT://{PLAIN},SSL://{SSL_PORT},SASL_SSL://{SASL_SSL}\n")
    f.write(f"ssl.keystore.type=PEM\nssl.keystore.location={keystore}\n")


def start():
    d = os.path.join(data, "d")
    users = subprocess.run([binary, "users", "set", "--data-dir", d, "--user", USER,
                            "--mechanism", "SCRAM-SHA-256", "--password-stdin"],
                           input=PASSWORD + "\n", text=True, capture_output=True)
    assert users.returncode == 0, users.stderr
    log = open(os.path.join(data, "server.log"), "a")
    p = subprocess.Popen([binary, "serve", "--data-dir", d, "--listen", NATIVE,
                          "--config", config], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            AdminClient({"bootstrap.servers": PLAIN}).list_topics(timeout=1)
            return p
        except Exception:
            time.sleep(0.05)
    raise SystemExit("server did not start")


def client_conf(protocol):
    addr = {"PLAINTEXT": PLAIN, "SSL": SSL_PORT, "SASL_SSL": SASL_SSL}[protocol]
    conf = {"bootstrap.servers": addr, "security.protocol": protocol}
    if protocol != "PLAINTEXT":
        conf["ssl.ca.location"] = ca_file
    if protocol == "SASL_SSL":
        conf.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": USER,
                     "sasl.password": PASSWORD})
    return conf


N, SIZE = 100_000, 1000


def produce_rate(protocol, topic):
    p = Producer({**client_conf(protocol), "linger.ms": 5})
    value = b"x" * SIZE
    failed = []
    def delivered(err, _msg):
        if err is not None:
            failed.append(err)
    started = time.perf_counter()
    for i in range(N):
        while True:
            try:
                p.produce(topic, value=value, partition=i % 2, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.01)
    left = p.flush(120)
    assert left == 0 and not failed, (left, failed[:3])
    return N * SIZE / (time.perf_counter() - started) / 1e6


def fetch_rate(protocol, topic):
    c = Consumer({**client_conf(protocol), "group.id": f"fig-{protocol}",
                  "enable.auto.commit": False, "fetch.max.bytes": 8 << 20})
    c.assign([TopicPartition(topic, p, 0) for p in range(2)])
    got, started = 0, time.perf_counter()
    while got < N:
        for m in c.consume(10000, 1.0):
            if not m.error():
                got += 1
    took = time.perf_counter() - started
    c.close()
    return N * SIZE / took / 1e6


def frame(key, version, cid, body):
    header = struct.pack(">hhih", key, version, cid, 3) + b"fig"
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def read_frame(sock):
    def exactly(n):
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out
    size = struct.unpack(">i", exactly(4))[0]
    return exactly(size)[4:]


def kbytes(b):
    return struct.pack(">i", len(b)) + b


def read_auth_bytes(body):
    error = struct.unpack(">h", body[:2])[0]
    assert error == 0, f"SaslAuthenticate error {error}"
    msg_len = struct.unpack(">h", body[2:4])[0]
    at = 4 + max(msg_len, 0)
    n = struct.unpack(">i", body[at:at + 4])[0]
    return body[at + 4:at + 4 + n]


SALTED = {}


def scram_login(sock):
    sock.sendall(frame(17, 1, 2, struct.pack(">h", 13) + b"SCRAM-SHA-256"))
    assert struct.unpack(">h", read_frame(sock)[:2])[0] == 0
    cnonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n={USER},r={cnonce}"
    sock.sendall(frame(36, 0, 3, kbytes(f"n,,{first_bare}".encode())))
    server_first = read_auth_bytes(read_frame(sock)).decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    salt, iterations = base64.b64decode(attrs["s"]), int(attrs["i"])
    key = (salt, iterations)
    if key not in SALTED:
        SALTED[key] = hashlib.pbkdf2_hmac("sha256", PASSWORD.encode(), salt, iterations)
    salted = SALTED[key]
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored = hashlib.sha256(client_key).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored, auth, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    final = f"{without_proof},p={base64.b64encode(proof).decode()}"
    sock.sendall(frame(36, 0, 4, kbytes(final.encode())))
    assert read_auth_bytes(read_frame(sock)).startswith(b"v=")


def connect_time(protocol, n=300):
    addr = {"PLAINTEXT": PLAIN, "SSL": SSL_PORT, "SASL_SSL": SASL_SSL}[protocol]
    host, port = addr.split(":")
    context = ssl.create_default_context(cafile=ca_file)
    times = []
    for _ in range(n):
        started = time.perf_counter()
        sock = socket.create_connection((host, int(port)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if protocol != "PLAINTEXT":
            sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
        sock.sendall(frame(18, 0, 1, b""))
        read_frame(sock)
        if protocol == "SASL_SSL":
            scram_login(sock)
        times.append((time.perf_counter() - started) * 1e6)
        sock.close()
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def native_server(protocol, n):
    """A fresh server whose native listener speaks `protocol` (its Kafka listener off)."""
    d = os.path.join(data, f"native-{n}")
    users = subprocess.run([binary, "users", "set", "--data-dir", d, "--user", USER,
                            "--mechanism", "SCRAM-SHA-256", "--password-stdin"],
                           input=PASSWORD + "\n", text=True, capture_output=True)
    assert users.returncode == 0, users.stderr
    conf = os.path.join(data, f"native-{n}.properties")
    with open(conf, "w") as f:
        f.write(f"native.security.protocol={protocol}\nkafka.listen=off\n")
        f.write(f"ssl.keystore.location={keystore}\n")
    log = open(os.path.join(data, "server.log"), "a")
    p = subprocess.Popen([binary, "serve", "--data-dir", d, "--listen", NATIVE, "--config", conf],
                         stdout=log, stderr=subprocess.STDOUT)
    host, port = NATIVE.split(":")
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            time.sleep(0.5)
            return p
        except OSError:
            time.sleep(0.05)
    raise SystemExit("server did not start")


def loadgen_rate(loadgen, protocol, n):
    import re
    args = [loadgen, "write", "--bootstrap", NATIVE, "--topic", f"lg-{n}", "--create",
            "--total-bytes", "512MiB", "--record-size", "1KiB", "--connections", "2"]
    if protocol == "SASL_SSL":
        for kv in ["security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-256",
                   f"sasl.username={USER}", f"sasl.password={PASSWORD}", f"ssl.ca.location={ca_file}"]:
            args += ["-X", kv]
    out = subprocess.run(args, capture_output=True, text=True)
    m = re.search(r"write\s+([\d.]+) MB/s", out.stdout)
    assert m, out.stdout + out.stderr
    return float(m.group(1))


def loadgen_figures(loadgen):
    rates = {"PLAINTEXT": [], "SASL_SSL": []}
    n = 0
    for _ in range(2):
        for protocol in ["PLAINTEXT", "SASL_SSL"]:
            n += 1
            p = native_server(protocol, n)
            try:
                rates[protocol].append(loadgen_rate(loadgen, protocol, n))
            finally:
                p.send_signal(signal.SIGTERM)
                p.wait()
    base = statistics.median(rates["PLAINTEXT"])
    for protocol, rs in rates.items():
        med = statistics.median(rs)
        print(f"loadgen write, native {protocol}: {med:.0f} MB/s ({med / base:.2f}x; runs "
              f"{', '.join(f'{r:.0f}' for r in rs)}), 1 KiB records, 2 connections, acks=1",
              flush=True)


server = start()
try:
    admin = AdminClient({"bootstrap.servers": PLAIN})
    rates = {}
    for protocol in ["PLAINTEXT", "SSL", "SASL_SSL"]:
        topic = f"fig-{protocol.lower()}"
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
        rates[protocol] = (produce_rate(protocol, topic), fetch_rate(protocol, topic))
    base_p, base_f = rates["PLAINTEXT"]
    for protocol, (p, f) in rates.items():
        print(f"{protocol}: produce {p:.0f} MB/s ({p / base_p:.2f}x), fetch {f:.0f} MB/s "
              f"({f / base_f:.2f}x), 1 KB records, one confluent-kafka client", flush=True)
    for protocol in ["PLAINTEXT", "SSL", "SASL_SSL"]:
        p50, p99 = connect_time(protocol)
        print(f"connection set-up {protocol}: p50 {p50:.0f} us, p99 {p99:.0f} us", flush=True)
finally:
    server.send_signal(signal.SIGTERM)
    server.wait()
    if len(sys.argv) > 2:
        loadgen_figures(sys.argv[2])
    if not os.environ.get("KEEP"):
        shutil.rmtree(data, ignore_errors=True)
    else:
        print("kept", data, flush=True)
