#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need, then runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
cargo test "$@"
