#!/usr/bin/env bash
# Installs what the tests need beyond Rust, idempotently (CI runs it on a fresh machine):
# - e2fsprogs and mount: the full-disk test formats and loop-mounts an ext4 image;
# - kcat, and a Python virtual environment with confluent-kafka, kafka-python and aiokafka
#   (at target/kafka-venv): the real Kafka clients tests/slow/kafka_clients_e2e.rs drives;
# - s3s-fs (an S3 server over a directory, from crates.io, at target/test-tools): the object
#   store of the tiered-storage tests (tests/slow/tiered_e2e.rs). Pinned to 0.14.1, the newest
#   release whose minimum Rust (1.92) this toolchain meets; it honours conditional writes
#   (If-None-Match, If-Match), ranged GETs and multipart uploads, which shardlog relies on;
# - etcd (Debian's etcd-server): the consensus store of cluster mode; the cluster tests
#   (tests/slow/cluster_e2e.rs) start their own member on free loopback ports;
# - iptables: the cluster's partition test cuts nodes (run as their own users) off from
#   each other on loopback with owner-match rules (tests/common/firewall.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v mount >/dev/null || need+=(mount)
command -v kcat >/dev/null || need+=(kcat)
command -v etcd >/dev/null || need+=(etcd-server)
command -v iptables >/dev/null || need+=(iptables)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if ((${#need[@]})); then
  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"
fi

venv=target/kafka-venv
if ! "$venv/bin/python" -c 'import confluent_kafka, kafka, aiokafka, snappy, lz4, zstandard, cramjam' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/kafka_clients/requirements.txt
fi

s3s_version=0.14.1
if ! target/test-tools/bin/s3s-fs --version 2>/dev/null | grep -q "$s3s_version"; then
  cargo install s3s-fs --version "$s3s_version" --features binary --locked --root target/test-tools
fi
