#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need, then runs them.
#
#   scripts/test.sh           everything: both crates, every test binary, the doc tests
#   scripts/test.sh --quick   the fast tier: the tidy rules, unit tests and the engine,
#                             server, kafka and security binaries, without the slow tier
#
# The integration tests are grouped by floor into one binary each (tests/<group>/main.rs):
# one link of the crate per group instead of one per file. The slow tier is the `slow`
# binary (the idle soak, the crash loop, the Python client and transaction suites, tiered
# storage on S3, the offsets integrity kills) and the tests named `*real_clients*`, which
# drive full client sessions through every listener.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
if [[ "${1:-}" == "--quick" ]]; then
  quick=true
  shift
fi

scripts/install-test-deps.sh
if $quick; then
  # The house rules first: they take seconds and say the most.
  cargo test -p shardlog --test tidy "$@"
  cargo test -p shardlog --lib --bins --test engine --test server --test kafka --test security \
    "$@" -- --skip real_clients
  cargo test -p loadgen "$@"
else
  cargo test --no-fail-fast "$@"
fi
