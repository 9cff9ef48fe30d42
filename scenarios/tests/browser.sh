#!/usr/bin/env bash
# Browser check of `percsim report`: for each safety ablation, find a failing
# capsule with a short campaign, render its report, load it in headless
# Chromium, and check that the page ran its script without errors and shows
# the violation; save a screenshot next to each report.
#
#   scenarios/tests/browser.sh [OUT_DIR]      (default target/browser-reports)
#
# Needs Debian's `chromium` (apt-get install chromium); without it the check
# says so and skips (exit 0). Not part of `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/browser-reports}"
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
    echo "browser check skipped: chromium is not installed (apt-get install chromium)"
    exit 0
fi
unset RUSTFLAGS
cargo build --release --quiet --bin percsim
percsim=target/release/percsim
mkdir -p "$out"
# Absolute, so that the browser finds the pages whatever OUT_DIR was given as.
out="$(cd "$out" && pwd)"

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --virtual-time-budget=5000)

# Render one report and check it in the browser. Args: NAME CAPSULE.
check_report() {
    local name="$1" capsule="$2" html="$out/$1.html" dom="$out/$1.dom.html" log="$out/$1.log"
    "$percsim" report "$capsule" -o "$html" > /dev/null
    local profile; profile="$(mktemp -d)"
    "$browser" "${flags[@]}" --user-data-dir="$profile" --enable-logging=stderr --v=0 \
        --dump-dom "file://$html" > "$dom" 2> "$log" || true
    rm -rf "$profile"; profile="$(mktemp -d)"
    "$browser" "${flags[@]}" --user-data-dir="$profile" --window-size=1200,1100 \
        --screenshot="$out/$name.png" "file://$html" > /dev/null 2>&1 || true
    rm -rf "$profile"
    local problems=()
    grep -q 'data-rendered="ok"' "$dom" || problems+=("the page's script did not finish")
    grep -q 'data-script-error=' "$dom" && problems+=("script error: $(grep -o 'data-script-error="[^"]*"' "$dom")")
    grep -q 'Uncaught' "$log" && problems+=("console: $(grep -m1 Uncaught "$log")")
    grep -q 'class="finding violation"' "$dom" || problems+=("no violation is shown")
    grep -q 'class="txn [a-z]* flagged"' "$dom" || problems+=("no transaction is highlighted on the timeline")
    [ -s "$out/$name.png" ] || problems+=("no screenshot")
    # Open the first highlighted transaction's details (as a click does).
    local first; first="$(grep -o 'id="t[0-9]*" class="txn [a-z]* flagged"' "$dom" | head -1 | grep -o 't[0-9]*' | head -1 | tr -d t)"
    if [ -n "$first" ]; then
        profile="$(mktemp -d)"
        "$browser" "${flags[@]}" --user-data-dir="$profile" --dump-dom "file://$html#T$first" \
            > "$out/$name.panel.html" 2> /dev/null || true
        rm -rf "$profile"
        # A transaction history's panel lists the cells touched; a stream
        # history's, the transaction's markers in the partition logs.
        grep -q "<h3>T$first (" "$out/$name.panel.html" \
            && grep -q "cells touched\|its markers in the partition logs" "$out/$name.panel.html" \
            || problems+=("the details of T$first do not open")
    fi
    if [ ${#problems[@]} -gt 0 ]; then
        printf 'FAIL  %s (%s): %s\n' "$name" "$capsule" "${problems[*]}"
        return 1
    fi
    printf 'ok    %-32s %s violations shown, %s\n' "$name" \
        "$(grep -o 'data-violations="[0-9]*"' "$dom" | tr -dc 0-9)" "$out/$name.png"
}

# Find the first safety failure under ablation NAME (of SYSTEM) in a short
# campaign and check its report. Args: NAME SYSTEM.
check_ablation() {
    local a="$1" system="$2" dir="$out/capsules/$1" capsule=""
    rm -rf "$dir"
    "$percsim" fuzz --system "$system" --ablate "$a" --count 100 --out "$dir" --quiet \
        --shrink-budget 0 > /dev/null || true
    # Capsules are named <system>-seed-N.json; the lowest seed first.
    for c in $(cd "$dir" 2> /dev/null && ls -v -- *-seed-*.json 2> /dev/null); do
        if grep -q '"verdict": "safety"' "$dir/$c"; then capsule="$dir/$c"; break; fi
    done
    if [ -z "$capsule" ]; then
        echo "FAIL  $a: no safety failure in 100 seeds"
        return 1
    fi
    check_report "$a" "$capsule"
}

failed=0
ablations=(get-ignores-locks no-write-conflict-check prewrite-ignores-locks
           commit-without-lock-check secondaries-first rollback-without-primary-check
           roll-forward-reader-ts no-rollback-record oracle-forgets wall-clock-start-ts
           observer-ignores-ack notify-cleared-early)
for a in "${ablations[@]}"; do
    check_ablation "$a" percolator || failed=1
done
# Pulsar's ablations: their capsules hold stream histories.
for a in marker-by-producer-epoch replay-ignores-aborted no-max-read-position \
         pending-ack-not-durable commit-before-log-durable timeout-races-commit; do
    check_ablation "$a" pulsar || failed=1
done
exit "$failed"
