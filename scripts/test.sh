#!/usr/bin/env bash
# Runs the whole test suite: builds once and runs every test in parallel with cargo-nextest
# (plain `cargo test` where nextest is absent). Extra arguments go to the test runner.
set -euo pipefail
cd "$(dirname "$0")/.."

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --no-fail-fast "$@"
else
  cargo test --no-fail-fast "$@"
fi
