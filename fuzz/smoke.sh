#!/usr/bin/env bash
# Fuzz smoke test for CI: build every cargo-fuzz target on stable (-s none), replay the saved
# reproducers of past findings, then fuzz each target briefly. Fails on any crash or oracle
# disagreement. Usage: fuzz/smoke.sh [seconds per target, default 30]
#
# Environment:
#   SMOKE_SECONDS        seconds per target (default 30; CI passes 6)
#   SMOKE_REGRESSIONS=0  skip replaying fuzz/regressions/ (on by default)
set -euo pipefail

cd "$(dirname "$0")"
seconds="${1:-${SMOKE_SECONDS:-30}}"
targets=(extract_line index_file log_bytes log_ops session_log query_requests export_state search_requests transcript_claude transcript_codex transcript_pi transcript_text transcript_index_file statusline_input usage_snapshot status_file price_table usage_args transcript_copilot transcript_gemini transcript_qwen opencode_message opencode_part transcript_kimi)

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

start=$(date +%s)
cargo fuzz build -s none
triple="$(rustc -vV | sed -n 's/^host: //p')"
bin_dir="target/${triple}/release"

failed=0
if [[ "${SMOKE_REGRESSIONS:-1}" != 0 ]]; then
    for t in "${targets[@]}"; do
        [[ -d "regressions/$t" ]] || continue
        for input in "regressions/$t"/*; do
            [[ -f "$input" ]] || continue
            if "$bin_dir/$t" -runs=1 "$input" >"/tmp/agentlog-smoke-$t.log" 2>&1; then
                echo "regression ok:     $input"
            else
                echo "REGRESSION FAILED: $input (output: /tmp/agentlog-smoke-$t.log)"
                tail -n 30 "/tmp/agentlog-smoke-$t.log" | grep -v '^\s*[0-9]*: \|^\s*at ' || true
                failed=1
            fi
        done
    done
fi

for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    seeds=()
    [[ -d "seeds/$t" ]] && seeds=("seeds/$t")
    extra=()
    case "$t" in
        extract_line | log_bytes | search_requests) extra=(-dict=dict/json.dict) ;;
        session_log | query_requests) extra=(-dict=dict/session.dict) ;;
        log_ops) extra=(-max_len=4096) ;;
        transcript_claude | transcript_codex | transcript_pi | transcript_copilot | transcript_kimi | transcript_text | statusline_input) extra=(-dict=dict/transcripts.dict) ;;
        # redb's debug-only page walk can loop on a file damaged into a cycle (out of memory);
        # release builds do not run it, so those inputs are skipped, not failures.
        transcript_index_file) extra=(-fork=1 -ignore_ooms=1) ;;
    esac
    echo "== fuzzing $t for ${seconds}s"
    if ! cargo fuzz run -s none "$t" "corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$seconds" -timeout=60 -print_final_stats=1 "${extra[@]}" \
        >"/tmp/agentlog-smoke-$t.log" 2>&1; then
        echo "FUZZ FAILURE in $t (full output: /tmp/agentlog-smoke-$t.log):"
        grep -v '^\s*[0-9]*: \|^\s*at \|^#[0-9]' "/tmp/agentlog-smoke-$t.log" | tail -n 40 || true
        failed=1
    else
        grep -E 'stat::number_of_executed_units|Done [0-9]+ runs' "/tmp/agentlog-smoke-$t.log" || true
    fi
done

echo "smoke finished in $(( $(date +%s) - start ))s"
exit "$failed"
