//! One test per rule of the three formats (docs/TRANSCRIPTS.md), with hand-computed answers;
//! each also checks that the naive oracle agrees.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/transcript_oracle.rs"]
mod oracle;

use agentlog::transcript::{BoundaryKind, Format, Money, Summary, Tally, Usage, fold_bytes};
use serde_json::{Value, json};

fn bytes(lines: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        match line {
            // A raw line, written as is.
            Value::String(raw) => out.extend_from_slice(raw.as_bytes()),
            other => out.extend_from_slice(other.to_string().as_bytes()),
        }
        out.push(b'\n');
    }
    out
}

/// Folds the lines, checks the oracle agrees, and returns the summary.
fn fold(format: Format, lines: &[Value]) -> Summary {
    let bytes = bytes(lines);
    let fold = fold_bytes(format, &bytes);
    let observed = oracle::observed(fold.summary(), fold.buckets().map(|(k, t)| (k, *t)));
    assert_eq!(
        observed,
        oracle::expected(format, &bytes),
        "the oracle disagrees"
    );
    fold.summary().clone()
}

fn assistant(id: Option<&str>, request: Option<&str>, sidechain: bool, usage: [u64; 4]) -> Value {
    let mut line = json!({
        "type": "assistant",
        "isSidechain": sidechain,
        "timestamp": "2026-02-12T20:30:28.504Z",
        "message": {
            "model": "claude-opus-4-6",
            "usage": {
                "input_tokens": usage[0],
                "output_tokens": usage[1],
                "cache_creation_input_tokens": usage[2],
                "cache_read_input_tokens": usage[3],
            }
        }
    });
    if let Some(id) = id {
        line["message"]["id"] = json!(id);
    }
    if let Some(request) = request {
        line["requestId"] = json!(request);
    }
    line
}

fn main_line(id: &str, request: &str, usage: [u64; 4]) -> Value {
    assistant(Some(id), Some(request), false, usage)
}

/// A tally in the normalised fields: input, output, cache creation, cache read, reasoning.
fn tally(usage: [u64; 5], messages: u64) -> Tally {
    let [input, output, cache_creation, cache_read, reasoning] = usage;
    Tally {
        usage: Usage {
            input,
            output,
            cache_creation,
            cache_read,
            reasoning,
            cache_creation_1h: 0,
        },
        messages,
        ..Tally::default()
    }
}

/// Claude Code's fields are the normalised ones.
fn claude(tokens: [u64; 4], messages: u64) -> Tally {
    let [input, output, cache_creation, cache_read] = tokens;
    tally([input, output, cache_creation, cache_read, 0], messages)
}

fn boundary(uuid: &str, trigger: &str, pre: u64) -> Value {
    json!({"type":"system","subtype":"compact_boundary","uuid":uuid,"compactMetadata":{"trigger":trigger,"preTokens":pre}})
}

fn summary_line(uuid: &str) -> Value {
    json!({"type":"user","isCompactSummary":true,"uuid":uuid,"message":{"role":"user","content":"continued"}})
}

#[test]
fn claude_streaming_partials_count_the_largest_line_first_on_a_tie() {
    let s = fold(
        Format::ClaudeCode,
        &[
            main_line("msg_a", "req_1", [3, 10, 100, 1000]),
            main_line("msg_a", "req_1", [3, 299, 100, 1000]),
            // The largest, not the last.
            main_line("msg_b", "req_2", [1, 500, 0, 0]),
            main_line("msg_b", "req_2", [1, 20, 0, 0]),
            // A tie: the first line stays.
            main_line("msg_c", "req_3", [5, 10, 0, 0]),
            main_line("msg_c", "req_3", [10, 5, 0, 0]),
        ],
    );
    assert_eq!(
        s.lifetime,
        claude([3 + 1 + 5, 299 + 500 + 10, 100, 1000], 3)
    );
    assert_eq!(s.diagnostics.duplicate_lines, 3);
}

#[test]
fn claude_a_sidechain_replay_is_the_same_message_and_the_main_chain_line_wins() {
    let s = fold(
        Format::ClaudeCode,
        &[
            main_line("msg_a", "req_1", [1, 100, 0, 0]),
            // A /btw side question replays the parent message under a new request id.
            assistant(Some("msg_a"), Some("req_btw"), true, [1, 900, 0, 0]),
            // Seen first on a sidechain, then on the main chain: the main chain line wins.
            assistant(Some("msg_b"), Some("req_2"), true, [2, 700, 0, 0]),
            main_line("msg_b", "req_3", [2, 50, 0, 0]),
            // Sidechain messages of their own are messages.
            assistant(Some("msg_c"), Some("req_4"), true, [4, 4, 0, 0]),
        ],
    );
    assert_eq!(s.lifetime, claude([1 + 2 + 4, 100 + 50 + 4, 0, 0], 3));
}

#[test]
fn claude_lines_without_request_id_are_keyed_with_none() {
    let s = fold(
        Format::ClaudeCode,
        &[
            assistant(Some("msg_a"), None, false, [1, 10, 0, 0]),
            assistant(Some("msg_a"), None, false, [1, 30, 0, 0]),
            // The same message id with a request id is another key: another message.
            main_line("msg_a", "req_1", [1, 5, 0, 0]),
        ],
    );
    assert_eq!(s.lifetime, claude([2, 35, 0, 0], 2));
}

#[test]
fn claude_lines_without_message_id_are_never_merged() {
    let line = assistant(None, Some("req_1"), false, [1, 10, 0, 0]);
    let empty = assistant(Some(""), Some("req_1"), false, [1, 10, 0, 0]);
    let s = fold(Format::ClaudeCode, &[line.clone(), line, empty]);
    assert_eq!(s.lifetime, claude([3, 30, 0, 0], 3));
    assert_eq!(s.diagnostics.messages_without_id, 3);
    assert_eq!(s.unkeyed, s.lifetime);
}

#[test]
fn claude_a_replay_after_a_compaction_counts_once_in_its_first_generation() {
    let s = fold(
        Format::ClaudeCode,
        &[
            main_line("msg_a", "req_1", [1, 10, 0, 0]),
            boundary("b1", "auto", 1000),
            summary_line("s1"),
            main_line("msg_a", "req_1", [1, 10, 0, 0]),
            main_line("msg_b", "req_2", [2, 20, 0, 0]),
            // A later, larger line of the replayed message updates generation 0.
            main_line("msg_a", "req_1", [1, 40, 0, 0]),
        ],
    );
    assert_eq!(
        s.generations,
        vec![claude([1, 40, 0, 0], 1), claude([2, 20, 0, 0], 1)]
    );
    assert_eq!(s.since_compaction(), claude([2, 20, 0, 0], 1));
    assert_eq!(s.lifetime, claude([3, 60, 0, 0], 2));
    assert_eq!(s.diagnostics.replayed_lines, 2);
}

#[test]
fn claude_boundaries_with_and_without_a_summary() {
    let s = fold(
        Format::ClaudeCode,
        &[
            main_line("msg_a", "req_1", [1, 1, 0, 0]),
            boundary("b1", "manual", 15808),
            // Its summary: the same boundary.
            summary_line("s1"),
            main_line("msg_b", "req_2", [1, 1, 0, 0]),
            // A summary with no boundary line before it (older versions): a boundary of its own.
            summary_line("s2"),
            main_line("msg_c", "req_3", [1, 1, 0, 0]),
            // microcompact_boundary is not a compaction.
            json!({"type":"system","subtype":"microcompact_boundary","uuid":"m1","microcompactMetadata":{"trigger":"auto","preTokens":5}}),
            main_line("msg_d", "req_4", [1, 1, 0, 0]),
            // A boundary line replayed with its uuid is not a new one.
            boundary("b1", "manual", 15808),
            summary_line("s2"),
        ],
    );
    let kinds: Vec<BoundaryKind> = s.boundaries.iter().map(|b| b.kind).collect();
    assert_eq!(
        kinds,
        vec![
            BoundaryKind::CompactBoundary,
            BoundaryKind::CompactSummaryWithoutBoundary
        ]
    );
    assert_eq!(s.boundaries[0].line, 2);
    assert_eq!(s.boundaries[0].trigger.as_deref(), Some("manual"));
    assert_eq!(s.boundaries[0].pre_tokens, Some(15808));
    assert_eq!(
        (
            s.boundaries[1].line,
            s.boundaries[1].trigger.clone(),
            s.boundaries[1].pre_tokens
        ),
        (5, None, None)
    );
    assert_eq!(
        s.generations.iter().map(|g| g.messages).collect::<Vec<_>>(),
        vec![1, 1, 2]
    );
    assert_eq!(s.diagnostics.replayed_boundaries, 2);
    // The context: the latest main-chain line's prompt, 0 after the replayed boundary line.
    assert_eq!(s.context, Some(0));
}

#[test]
fn claude_usage_outside_assistant_message_usage_is_never_counted() {
    let s = fold(
        Format::ClaudeCode,
        &[
            json!({"type":"progress","data":{"message":{"type":"assistant","message":{"id":"msg_p","usage":{"input_tokens":99,"output_tokens":99}}}}}),
            json!({"type":"user","toolUseResult":{"usage":{"input_tokens":77,"output_tokens":77}},"message":{"role":"user","content":"x"}}),
            json!({"type":"assistant","usage":{"input_tokens":55},"message":{"id":"msg_x"}}),
            main_line("msg_a", "req_1", [1, 2, 3, 4]),
        ],
    );
    assert_eq!(s.lifetime, claude([1, 2, 3, 4], 1));
    assert_eq!(s.diagnostics.missing_usage, 1);
}

#[test]
fn claude_odd_values_are_counted_diagnostics_never_failures() {
    let s = fold(
        Format::ClaudeCode,
        &[
            json!({"type":"assistant","message":{"id":"m1","usage":{"input_tokens":"12","output_tokens":3.0,"cache_creation_input_tokens":null,"cache_read_input_tokens":-4}}}),
            json!({"type":"assistant","message":{"id":"m2","usage":"lots"}}),
            // Cannot carry usage, so never parsed: nothing to count.
            json!({"type":"assistant","message":"not an object"}),
            json!({"type":"assistant","requestId":17,"message":{"id":"m3","usage":{"input_tokens":1,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}),
            Value::String(
                r#"{"type":"assistant","message":{"id":"m4","usage":{"input_tokens":5"#.to_owned(),
            ),
            Value::String("not json \"usage\" at all".to_owned()),
        ],
    );
    assert_eq!(s.lifetime, claude([13, 4, 0, 0], 2));
    let d = &s.diagnostics;
    // "12" and 3.0 truncated; null and -4 rejected, as is the requestId 17.
    assert_eq!(
        (d.coerced_values, d.missing_fields, d.invalid_values),
        (2, 0, 3)
    );
    assert_eq!((d.missing_usage, d.invalid_lines), (1, 2));
    assert_eq!(d.invalid_timestamps, 2);
}

fn token_count(totals: [u64; 5]) -> Value {
    json!({"timestamp":"2026-02-24T09:50:57.088Z","type":"event_msg","payload":{"type":"token_count","info":{
        "total_token_usage":{"input_tokens":totals[0],"cached_input_tokens":totals[1],"output_tokens":totals[2],"reasoning_output_tokens":totals[3],"total_tokens":totals[4]},
        "last_token_usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":940_499}}}})
}

/// Codex's own figures (input with its cached input in it, cached input, output with its
/// reasoning in it, reasoning, total) in the normalised fields.
fn codex_tally(native: [u64; 5], events: u64) -> Tally {
    let [input, cached, output, reasoning, _] = native;
    tally([input - cached, output, 0, cached, reasoning], events)
}

#[test]
fn codex_usage_is_the_difference_of_cumulative_totals_and_repeats_add_nothing() {
    let s = fold(
        Format::Codex,
        &[
            json!({"timestamp":"t","type":"session_meta","payload":{"id":"x"}}),
            json!({"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}),
            json!({"timestamp":"t","type":"turn_context","payload":{"model":"gpt-5-codex"}}),
            token_count([100, 50, 10, 5, 110]),
            token_count([100, 50, 10, 5, 110]),
            token_count([300, 60, 30, 5, 330]),
            token_count([300, 60, 30, 5, 330]),
        ],
    );
    assert_eq!(s.lifetime, codex_tally([300, 60, 30, 5, 330], 2));
    assert_eq!(s.diagnostics.null_info, 1);
    assert_eq!(s.models, vec!["gpt-5-codex".to_owned()]);
}

#[test]
fn codex_a_compacted_line_and_its_event_are_one_boundary_a_lone_event_another() {
    let compacted = json!({"timestamp":"t","type":"compacted","payload":{"message":"","replacement_history":[]}});
    let event = json!({"timestamp":"t","type":"event_msg","payload":{"type":"context_compacted","tokens_before":250_000}});
    let bare_event =
        json!({"timestamp":"t","type":"event_msg","payload":{"type":"context_compacted"}});
    let s = fold(
        Format::Codex,
        &[
            token_count([100, 0, 10, 0, 110]),
            compacted.clone(),
            token_count([100, 0, 10, 0, 110]),
            event,
            token_count([200, 0, 20, 0, 220]),
            bare_event.clone(),
            token_count([250, 0, 25, 0, 275]),
            compacted,
            token_count([300, 0, 30, 0, 330]),
            // Usage came between: this event is a compaction of its own.
            bare_event,
        ],
    );
    let found: Vec<(BoundaryKind, u64, Option<u64>)> = s
        .boundaries
        .iter()
        .map(|b| (b.kind, b.line, b.pre_tokens))
        .collect();
    assert_eq!(
        found,
        vec![
            (BoundaryKind::Compacted, 2, Some(250_000)),
            (BoundaryKind::ContextCompacted, 6, None),
            (BoundaryKind::Compacted, 8, None),
            (BoundaryKind::ContextCompacted, 10, None),
        ]
    );
    let totals: Vec<u64> = s.generations.iter().map(|g| g.usage.total()).collect();
    assert_eq!(totals, vec![110, 110, 55, 55, 0]);
}

#[test]
fn codex_a_restarted_counter_counts_its_new_total_and_odd_fields_are_counted() {
    let s = fold(
        Format::Codex,
        &[
            token_count([1000, 0, 100, 0, 1100]),
            token_count([200, 0, 20, 0, 220]),
            // One field goes down while the total grows.
            token_count([250, 0, 10, 0, 260]),
        ],
    );
    // The last event's fields add up to 50 while its recorded total grew by 40: the fields'
    // sum is counted, and the mismatch is reported.
    assert_eq!(s.lifetime.usage.total(), 1100 + 220 + 50);
    assert_eq!(s.lifetime.usage.input, 1000 + 200 + 50);
    assert_eq!(s.lifetime.usage.output, 100 + 20);
    let d = &s.diagnostics;
    assert_eq!(
        (d.counter_resets, d.counter_decreases, d.total_mismatches),
        (1, 1, 1)
    );
}

#[test]
fn codex_input_excludes_its_cached_input_and_parts_never_exceed_their_wholes() {
    let s = fold(
        Format::Codex,
        &[
            json!({"timestamp":"t","type":"turn_context","payload":{"model":"gpt-5-codex"}}),
            // input 1000 of which 900 cached; output 50 of which 20 reasoning.
            token_count([1000, 900, 50, 20, 1050]),
            // Cached input above input, reasoning above output: cut to the whole.
            token_count([1100, 1100, 60, 40, 1160]),
        ],
    );
    assert_eq!(
        s.lifetime,
        tally([1100 - 1000, 60, 0, 1000, 30], 2),
        "{:?}",
        s.lifetime
    );
    assert_eq!(s.lifetime.usage.total(), 1160);
    let d = &s.diagnostics;
    assert_eq!((d.unbalanced_values, d.total_mismatches), (2, 0));
}

#[test]
fn claude_one_hour_cache_writes_and_long_prompts_are_kept_apart() {
    let line = |id: &str, cache_read: u64, one_hour: Value| {
        let mut l = main_line(id, &format!("r{id}"), [10, 5, 100, cache_read]);
        l["message"]["usage"]["cache_creation"] =
            json!({"ephemeral_5m_input_tokens": 60, "ephemeral_1h_input_tokens": one_hour});
        l
    };
    let s = fold(
        Format::ClaudeCode,
        &[
            line("m1", 1000, json!(40)),
            // A prompt of 10 + 100 + 199,890 = 200,000 tokens is not long; one more is.
            line("m2", 199_890, json!(0)),
            line("m3", 199_891, json!(500)),
            main_line("m4", "r4", [1, 1, 0, 0]),
        ],
    );
    let u = &s.lifetime.usage;
    // m3's 1-hour writes (500) exceed its writes (100): cut to them.
    assert_eq!(u.cache_creation_1h, 40 + 100);
    assert_eq!(s.diagnostics.unbalanced_values, 1);
    assert_eq!(s.lifetime.long_prompt.cache_read, 199_891);
    assert_eq!(s.lifetime.long_prompt.total(), 10 + 5 + 100 + 199_891);
    assert_eq!(s.lifetime.long_prompt.cache_creation_1h, 100);
    assert_eq!(s.context, Some(1));
}

#[test]
fn pi_costs_add_up_exactly() {
    let lines: Vec<Value> = (0..10)
        .map(|i| pi_assistant(&format!("e{i}"), 1, 1, &json!(0.1)))
        .collect();
    let s = fold(Format::Pi, &lines);
    // Ten float additions of 0.1 are not 1.0; ten picodollar amounts are.
    assert_eq!(s.lifetime.cost, Money::from_dollars(1.0).unwrap());
    assert_eq!(s.lifetime.cost.picodollars(), 1_000_000_000_000);
}

fn pi_assistant(id: &str, input: u64, output: u64, cost: &Value) -> Value {
    json!({"type":"message","id":id,"parentId":"p","timestamp":"2026-02-03T22:03:11.727Z","message":{
        "role":"assistant","model":"claude-opus-4-5","usage":{"input":input,"output":output,"cacheRead":0,"cacheWrite":0,"totalTokens":input + output,"cost":{"total":cost}}}})
}

#[test]
fn pi_entries_count_once_on_every_branch() {
    let a = pi_assistant("a1", 100, 10, &json!(0.5));
    let s = fold(
        Format::Pi,
        &[
            json!({"type":"session","version":3,"id":"s","cwd":"/"}),
            a.clone(),
            // Two branches from one parent: both count, in file order.
            pi_assistant("b1", 200, 20, &json!("0.25")),
            pi_assistant("b2", 300, 30, &json!(0.125)),
            // A cloned entry counts once.
            a,
            json!({"type":"compaction","id":"c1","parentId":"b2","summary":"…","firstKeptEntryId":"b1","tokensBefore":50000}),
            json!({"type":"compaction","id":"c1","parentId":"b2","summary":"…","firstKeptEntryId":"b1","tokensBefore":50000}),
            pi_assistant("d1", 1, 1, &Value::Null),
            json!({"type":"message","id":"u1","message":{"role":"user","content":"hi"}}),
        ],
    );
    assert_eq!(s.boundaries.len(), 1);
    assert_eq!(
        (s.boundaries[0].kind, s.boundaries[0].pre_tokens),
        (BoundaryKind::Compaction, Some(50000))
    );
    assert_eq!(
        s.generations,
        vec![
            Tally {
                cost: Money::from_dollars(0.875).unwrap(),
                ..tally([600, 60, 0, 0, 0], 3)
            },
            tally([1, 1, 0, 0, 0], 1),
        ]
    );
    let d = &s.diagnostics;
    // "0.25" read as a plain decimal; a null cost is not an amount.
    assert_eq!(
        (
            d.duplicate_lines,
            d.replayed_boundaries,
            d.coerced_values,
            d.invalid_values
        ),
        (2, 1, 1, 1)
    );
}
