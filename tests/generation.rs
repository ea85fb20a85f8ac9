//! The current-generation contract, with the reference implementation's own cases ported:
//! every tier gives the same answer, and a generation label is given only when the log proves
//! it.
// Helpers here are part of the tests: a failed step fails the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agentlog::generation::{
    GenerationError, GenerationRequest, Tier, current_generation, current_generation_at,
    generations_at,
};
use agentlog::index::{Writer, WriterOptions};
use agentlog::log::SyncPolicy;
use common::{Agent, agent_molt, assert_tiers_match_oracle, lines, molt, tier_request, token};

const ALL: [Tier; 3] = [Tier::Index, Tier::ReverseScan, Tier::FullScan];

/// Runs `request` at every tier and checks they answer identically.
fn every_tier(agent: &Agent, expected: Option<u64>) -> agentlog::generation::CurrentGeneration {
    let mut answers =
        ALL.map(|tier| current_generation_at(&agent.paths, &tier_request(tier, expected)).unwrap());
    for answer in &answers[1..] {
        assert_eq!(answer.totals, answers[0].totals);
        assert_eq!(answer.boundary, answers[0].boundary);
        assert_eq!(answer.molt_count, answers[0].molt_count);
        assert_eq!(answer.verified, answers[0].verified);
    }
    assert_eq!(
        answers.each_ref().map(|a| a.tier),
        ALL,
        "each tier answered itself"
    );
    answers[0].stepped_aside.clear();
    answers.into_iter().next().unwrap()
}

fn mismatch_everywhere(agent: &Agent, expected: u64) -> Option<u64> {
    let found: Vec<Option<u64>> = ALL
        .iter()
        .map(|&tier| {
            match current_generation_at(&agent.paths, &tier_request(tier, Some(expected))) {
                Err(GenerationError::MoltMismatch {
                    expected: e,
                    found,
                    tier: t,
                    ..
                }) => {
                    assert_eq!(e, expected);
                    assert_eq!(t, tier);
                    found
                }
                other => panic!("{tier}: expected a mismatch, got {other:?}"),
            }
        })
        .collect();
    assert!(found.windows(2).all(|w| w[0] == w[1]), "{found:?}");
    found[0]
}

#[test]
fn reverse_and_full_scan_agree_after_molt() {
    let agent = Agent::with_log(&lines(&[
        token(1.0, 500, 10, 300),
        molt(2.0, 1, "agent"),
        token(3.0, 900, 10, 500),
        molt(4.0, 2, "agent"),
        token(5.0, 1000, 10, 700),
        token(6.0, 1000, 10, 700),
        token(7.0, 1000, 10, 700),
    ]));
    let s = every_tier(&agent, Some(2));
    assert_eq!(
        (
            s.totals.api_calls,
            s.totals.input_tokens,
            s.totals.cached_tokens
        ),
        (3, 3000, 2100)
    );
    assert_eq!(s.boundary_initiator(), "agent");
    assert!(s.verified);
}

#[test]
fn never_molted_agent_yields_boot_generation() {
    let agent = Agent::with_log(&lines(&[token(1.0, 500, 1, 0), token(2.0, 500, 1, 0)]));
    let s = every_tier(&agent, Some(0));
    assert_eq!((s.totals.api_calls, s.totals.input_tokens), (2, 1000));
    assert_eq!(s.boundary_initiator(), "boot");
    assert_eq!(s.boundary, None);
    assert_eq!((s.molt_count, s.verified), (Some(0), true));
}

#[test]
fn system_forced_molt_boundary_source() {
    let agent = Agent::with_log(&lines(&[
        token(1.0, 5, 1, 0),
        molt(2.0, 1, "system"),
        token(3.0, 1000, 1, 0),
    ]));
    let s = every_tier(&agent, Some(1));
    assert_eq!(s.boundary_initiator(), "system");
    assert_eq!(s.totals.input_tokens, 1000);
}

#[test]
fn all_three_tiers_agree() {
    let agent = Agent::with_log(&lines(&[
        token(1.0, 7000, 1, 6000),
        molt(2.0, 1, "agent"),
        token(3.0, 1234, 5, 800),
        token(4.0, 1234, 5, 800),
    ]));
    let s = every_tier(&agent, Some(1));
    assert_eq!(
        (
            s.totals.api_calls,
            s.totals.input_tokens,
            s.totals.cached_tokens
        ),
        (2, 2468, 1600)
    );
}

#[test]
fn stale_missing_and_malformed_boundaries_are_mismatches() {
    for (boundary, found) in [
        (molt(2.0, 1, "agent"), Some(1)),
        (
            "{\"type\": \"psyche_molt\", \"ts\": 2.0, \"initiator\": \"agent\"}\n".to_owned(),
            None,
        ),
        (
            "{\"type\": \"psyche_molt\", \"ts\": 2.0, \"molt_count\": \"2\"}\n".to_owned(),
            None,
        ),
        (
            "{\"type\": \"psyche_molt\", \"ts\": 2.0, \"molt_count\": 2.0}\n".to_owned(),
            None,
        ),
        (
            "{\"type\": \"psyche_molt\", \"ts\": 2.0, \"molt_count\": true}\n".to_owned(),
            None,
        ),
        (
            "{\"type\": \"psyche_molt\", \"ts\": 2.0, \"molt_count\": -2}\n".to_owned(),
            None,
        ),
    ] {
        let agent = Agent::with_log(&lines(&[
            token(1.0, 9, 1, 0),
            boundary.clone(),
            token(3.0, 1000, 1, 0),
        ]));
        assert_eq!(mismatch_everywhere(&agent, 2), found, "{boundary}");
    }
}

#[test]
fn matching_boundary_with_system_initiator_is_accepted() {
    let agent = Agent::with_log(&lines(&[molt(1.0, 2, "system"), token(2.0, 1000, 1, 0)]));
    let s = every_tier(&agent, Some(2));
    assert_eq!(
        (s.tier, s.boundary_initiator(), s.totals.input_tokens),
        (Tier::Index, "system", 1000)
    );
}

#[test]
fn nonzero_molt_count_without_any_boundary_is_a_mismatch() {
    let agent = Agent::with_log(&lines(&[token(1.0, 1000, 1, 0)]));
    assert_eq!(mismatch_everywhere(&agent, 2), None);
}

#[test]
fn stale_index_boundary_is_caught_up_to_the_log() {
    // The index knows only boundary 1; the log since gained boundary 2 and a token event.
    let agent = Agent::with_log(&lines(&[molt(1.0, 1, "agent"), token(2.0, 50, 1, 0)]));
    drop(agent.open_index());
    agent.append_raw(&lines(&[molt(3.0, 2, "agent"), token(4.0, 1000, 1, 0)]));
    // A small tail is folded in memory (nothing is written), a larger one committed: the
    // answer is the same.
    let s = current_generation(agent.path(), &GenerationRequest::expecting(2)).unwrap();
    assert_eq!(
        (s.tier, s.totals.api_calls, s.totals.input_tokens),
        (Tier::Index, 1, 1000)
    );
    assert!(
        matches!(
            s.index_outcome,
            Some(agentlog::index::IndexOutcome::ReadOnly {
                why: agentlog::index::ReadOnlyReason::SmallTail,
                tail_events: 2,
                ..
            })
        ),
        "{:?}",
        s.index_outcome
    );
    let mut request = GenerationRequest::expecting(2);
    request.index.max_memory_tail = 0;
    let s = current_generation(agent.path(), &request).unwrap();
    assert_eq!(
        (s.tier, s.totals.api_calls, s.totals.input_tokens),
        (Tier::Index, 1, 1000)
    );
    assert!(matches!(
        s.index_outcome,
        Some(agentlog::index::IndexOutcome::CaughtUp { events: 2, .. })
    ));
}

#[test]
fn missing_log_is_a_typed_error() {
    let agent = Agent::new();
    for tier in ALL {
        match current_generation_at(&agent.paths, &tier_request(tier, Some(0))) {
            Err(GenerationError::NoLog { path }) => assert_eq!(path, agent.paths.log),
            other => panic!("{tier}: {other:?}"),
        }
    }
}

#[test]
fn reverse_scan_defers_to_full_scan_when_boundary_beyond_bound() {
    let mut parts = vec![molt(1.0, 1, "agent")];
    parts.extend((0..50).map(|i| token(2.0 + f64::from(i), 10, 1, 0)));
    let agent = Agent::with_log(&lines(&parts));
    let mut request = tier_request(Tier::ReverseScan, Some(1));
    request.reverse_scan_bytes = 200;
    let s = current_generation_at(&agent.paths, &request).unwrap();
    assert_eq!((s.tier, s.totals.api_calls), (Tier::FullScan, 50));
    assert_eq!(s.stepped_aside.len(), 1);
    assert_eq!(s.stepped_aside[0].tier, Tier::ReverseScan);
    assert!(
        s.stepped_aside[0]
            .reason
            .contains("no boundary in the last 200 bytes")
    );
}

#[test]
fn since_molt_excludes_earlier_generations() {
    let agent = Agent::with_log(&lines(&[
        token(1.0, 9_000_000, 1, 0),
        agent_molt(2.0, 1),
        token(3.0, 1000, 1, 700),
        token(4.0, 1000, 1, 700),
    ]));
    let s = every_tier(&agent, Some(1));
    assert_eq!(
        (
            s.totals.api_calls,
            s.totals.input_tokens,
            s.totals.cached_tokens
        ),
        (2, 2000, 1400)
    );
    assert_eq!(s.boundary.as_ref().map(|b| b.before_tokens), Some(171_234));
}

#[test]
fn crash_between_manifest_bump_and_boundary_append_is_a_mismatch() {
    // The reference's scan-tier bug: the manifest says 2, the log's latest boundary is still 1.
    let agent = Agent::with_log(&lines(&[molt(1.0, 1, "agent"), token(2.0, 100, 1, 0)]));
    agent.write_manifest(2);
    assert_eq!(mismatch_everywhere(&agent, 2), Some(1));
}

#[test]
fn index_lagging_within_the_generation_never_undercounts() {
    let agent = Agent::with_log(&lines(&[molt(1.0, 1, "agent"), token(2.0, 100, 1, 0)]));
    drop(agent.open_index());
    agent.append_raw(&lines(&[token(3.0, 100, 1, 0), token(4.0, 100, 1, 0)]));
    let s = every_tier(&agent, Some(1));
    assert_eq!(s.totals.api_calls, 3);
}

#[test]
fn torn_line_is_terminated_before_the_next_append_and_never_merges() {
    let agent = Agent::with_log(&lines(&[molt(1.0, 1, "agent"), token(2.0, 100, 1, 0)]));
    agent.append_raw(br#"{"type": "llm_response", "input_tokens": 400"#);
    let mut writer = Writer::open(
        &agent.paths,
        WriterOptions {
            sync: SyncPolicy::Fsync,
            ..WriterOptions::default()
        },
    )
    .unwrap();
    writer
        .append_json(token(3.0, 100, 1, 0).trim().as_bytes())
        .unwrap();
    writer.close().unwrap();
    let s = every_tier(&agent, Some(1));
    // The torn event is lost (it was never complete); the new one counts.
    assert_eq!((s.totals.api_calls, s.totals.input_tokens), (2, 200));
    assert_eq!(s.diagnostics.invalid_lines, 1);
}

#[test]
fn external_append_onto_a_torn_line_merges_and_all_tiers_agree() {
    // A plain `>>` writer has no repair: the two events become one invalid line.
    let agent = Agent::with_log(&lines(&[molt(1.0, 1, "agent")]));
    agent.append_raw(br#"{"type": "llm_response", "input_tokens": 400"#);
    agent.append_raw(token(3.0, 100, 1, 0).as_bytes());
    let s = every_tier(&agent, Some(1));
    assert_eq!(s.totals.api_calls, 0);
    assert_tiers_match_oracle(&agent.paths, Some(1), 8 << 20);
}

#[test]
fn clock_skew_across_a_boundary_does_not_change_the_answer() {
    let agent = Agent::with_log(&lines(&[
        molt(10.0, 1, "agent"),
        token(5.0, 100, 1, 0),
        token(11.0, 200, 1, 0),
    ]));
    let s = every_tier(&agent, Some(1));
    assert_eq!((s.totals.api_calls, s.totals.input_tokens), (2, 300));
}

#[test]
fn numeric_coercion_is_the_same_in_every_tier() {
    let agent = Agent::with_log(&lines(&[
        molt(1.0, 1, "agent"),
        "{\"type\": \"llm_response\", \"input_tokens\": \"12.7\", \"output_tokens\": 3.9, \"cached_tokens\": null, \"thinking_tokens\": true}\n".to_owned(),
        "{\"type\": \"llm_response\", \"input_tokens\": -5, \"output_tokens\": \"7\", \"cached_tokens\": 9007199254740993, \"thinking_tokens\": \"1e3\"}\n".to_owned(),
        // Absent fields count 0 without a diagnostic.
        "{\"type\": \"llm_response\", \"input_tokens\": 4}\n".to_owned(),
    ]));
    let s = every_tier(&agent, Some(1));
    let t = s.totals;
    assert_eq!(
        (
            t.input_tokens,
            t.output_tokens,
            t.cached_tokens,
            t.thinking_tokens,
            t.api_calls
        ),
        (16, 10, 0, 0, 3)
    );
    assert_eq!(s.diagnostics.token_values_truncated, 3);
    // null, true, -5, 2^53+1 and "1e3"; not the three fields the last event leaves out.
    assert_eq!(s.diagnostics.token_values_zeroed, 5);
}

#[test]
fn never_molted_log_over_the_scan_bound_falls_to_full_scan() {
    let parts: Vec<String> = (0..200).map(|i| token(f64::from(i), 10, 1, 0)).collect();
    let agent = Agent::with_log(&lines(&parts));
    let mut request = tier_request(Tier::ReverseScan, Some(0));
    request.reverse_scan_bytes = 1000;
    let s = current_generation_at(&agent.paths, &request).unwrap();
    assert_eq!(
        (s.tier, s.totals.api_calls, s.boundary_initiator()),
        (Tier::FullScan, 200, "boot")
    );
    // The index answers it directly.
    let s = current_generation_at(&agent.paths, &tier_request(Tier::Index, Some(0))).unwrap();
    assert_eq!((s.tier, s.totals.api_calls), (Tier::Index, 200));
}

#[test]
fn legacy_and_daemon_lines_are_read() {
    let agent = Agent::with_log(&lines(&[
        "{\"event\": \"daemon_start\", \"ts\": \"2026-08-08T09:00:00Z\"}\n".to_owned(),
        "{\"type\": \"llm_response\", \"address\": \"agent-alice\", \"ts\": 1786000004.512, \"input_tokens\": 48213, \"output_tokens\": 912, \"thinking_tokens\": 384, \"cached_tokens\": 45056}\n".to_owned(),
        "{\"type\": \"psyche_molt\", \"ts\": 1786000060.25, \"before_tokens\": 171234, \"after_tokens\": 9120, \"molt_count\": 4}\n".to_owned(),
        "{\"event\": \"llm_response\", \"ts\": \"2026-08-08T09:00:01Z\", \"input_tokens\": 7}\n".to_owned(),
    ]));
    let s = every_tier(&agent, Some(4));
    assert_eq!(
        (
            s.boundary_initiator(),
            s.totals.api_calls,
            s.totals.input_tokens
        ),
        ("agent", 1, 7)
    );
    let ts = s.boundary.as_ref().and_then(|b| b.time).unwrap();
    assert_eq!(ts.as_micros(), 1_786_000_060_250_000);
}

#[test]
fn legacy_boundary_without_molt_count_is_trusted_only_on_request() {
    let agent = Agent::with_log(&lines(&[
        "{\"type\": \"psyche_molt\", \"ts\": 1.0}\n".to_owned(),
        token(2.0, 100, 1, 0),
    ]));
    assert_eq!(mismatch_everywhere(&agent, 3), None);
    for tier in ALL {
        let mut request = tier_request(tier, Some(3));
        request.trust_unverifiable_boundaries = true;
        let s = current_generation_at(&agent.paths, &request).unwrap();
        assert_eq!(
            (s.molt_count, s.verified, s.totals.api_calls),
            (Some(3), false, 1)
        );
    }
}

#[test]
fn without_an_expectation_the_latest_generation_is_reported_unverified() {
    let agent = Agent::with_log(&lines(&[molt(1.0, 7, "agent"), token(2.0, 100, 1, 0)]));
    let s = every_tier(&agent, None);
    assert_eq!((s.molt_count, s.verified), (Some(7), false));
    let agent = Agent::with_log(&lines(&[token(2.0, 100, 1, 0)]));
    let s = every_tier(&agent, None);
    assert_eq!((s.molt_count, s.verified), (Some(0), false));
}

#[test]
fn empty_log_is_generation_zero_with_zero_totals() {
    let agent = Agent::with_log(b"");
    let s = every_tier(&agent, Some(0));
    assert_eq!(
        (s.molt_count, s.totals.api_calls, s.boundary_initiator()),
        (Some(0), 0, "boot")
    );
}

#[test]
fn generations_split_the_lifetime_totals() {
    let agent = Agent::with_log(&common::synthetic(3000, 11));
    let found = generations_at(&agent.paths, &GenerationRequest::latest()).unwrap();
    assert!(found.generations.len() > 5);
    assert_eq!(found.generations[0].ordinal, 0);
    assert_eq!(found.generations[0].initiator(), "boot");
    assert!(found.generations.iter().any(|g| g.initiator() == "system"));
    assert!(found.generations.iter().any(|g| g.initiator() == "agent"));
    assert_tiers_match_oracle(&agent.paths, None, 8 << 20);
    let mut request = GenerationRequest::latest();
    request.start_tier = Tier::FullScan;
    let scanned = generations_at(&agent.paths, &request).unwrap();
    assert_eq!(scanned.generations, found.generations);
    assert_eq!(scanned.tier, Tier::FullScan);
}

#[test]
fn writer_state_answers_in_process_like_every_tier() {
    let agent = Agent::new();
    let mut writer = Writer::open(
        &agent.paths,
        WriterOptions {
            sync: SyncPolicy::None,
            ..WriterOptions::default()
        },
    )
    .unwrap();
    for part in [
        token(1.0, 100, 1, 0),
        molt(2.0, 1, "system"),
        token(3.0, 40, 1, 0),
    ] {
        writer.append_json(part.trim().as_bytes()).unwrap();
    }
    let live =
        agentlog::generation::from_state(writer.state(), &GenerationRequest::expecting(1)).unwrap();
    writer.close().unwrap();
    let s = every_tier(&agent, Some(1));
    assert_eq!(live.totals, s.totals);
    assert_eq!(live.boundary, s.boundary);
}

#[test]
fn reverse_scan_never_reads_the_partial_first_line_of_its_window() {
    // The middle line is invalid as a whole, but its suffix is a valid boundary event: a
    // window starting exactly at that suffix must not take it for the latest boundary.
    let head = molt(1.0, 1, "agent");
    let decoy = "garbage {\"type\": \"psyche_molt\", \"molt_count\": 2}\n";
    let tail = token(3.0, 100, 1, 0);
    let agent = Agent::with_log(&lines(&[head, decoy.to_owned(), tail.clone()]));
    let suffix = decoy.len() - "garbage ".len();
    let mut request = tier_request(Tier::ReverseScan, Some(1));
    request.reverse_scan_bytes = (suffix + tail.len()) as u64;
    let s = current_generation_at(&agent.paths, &request).unwrap();
    assert_eq!(
        (s.tier, s.totals.api_calls, s.totals.input_tokens),
        (Tier::FullScan, 1, 100)
    );
    assert_eq!(
        s.boundary.map(|b| b.molt_count),
        Some(agentlog::event::MoltCount::Valid(1))
    );
}
