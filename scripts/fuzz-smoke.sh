#!/usr/bin/env bash
# A short run of every fuzz target in fuzz/ (the seeds, then a few seconds of mutation each),
# for CI: it proves the targets still build against the crate and that nothing known crashes.
# Longer runs: `cargo fuzz run --sanitizer none TARGET fuzz/corpus/TARGET fuzz/seeds/TARGET`.
#
# Stable Rust is enough: cargo-fuzz instruments for coverage with stable -C flags, and only a
# sanitizer would need nightly. Without AddressSanitizer the runs find what safe Rust can do
# wrong: panics, aborts, stack overflows, hangs and runaway memory.
#
# The dev profile builds in half the CPU time of release (4 against 9 minutes here), and a
# few seconds per target need no speed. FUZZ_SECONDS sets the time per target (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-5}

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi

cargo fuzz build --dev --sanitizer none

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for target in $(cargo fuzz list); do
    corpus=fuzz/corpus/$target
    mkdir -p "$corpus"
    # New inputs go to the first directory (ignored by git); the seeds are only read.
    if ! cargo fuzz run --dev --sanitizer none "$target" "$corpus" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        >"$log" 2>&1; then
        cat "$log"
        echo "fuzz target $target failed; the input is in fuzz/artifacts/$target/" >&2
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "$target: ${runs:-?} runs in ${seconds}s"
done
