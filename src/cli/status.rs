//! `agentlog status AGENT_DIR`: the current generation's totals.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use agentlog::event::Diagnostics;
use agentlog::generation::{
    CurrentGeneration, GenerationRequest, SteppedAside, current_generation_at,
    read_manifest_molt_count,
};
use agentlog::index::IndexOutcome;

use super::table::thousands;
use super::{EXIT_OK, Failure, TierArg, agent_paths, display, print_json};

#[derive(clap::Args)]
pub struct Args {
    /// The agent directory (its log is `AGENT_DIR/logs/events.jsonl`).
    agent_dir: PathBuf,
    /// The generation to expect. Default: `molt_count` of `AGENT_DIR/.agent.json`; without
    /// either, the latest generation is reported as found, unverified.
    #[arg(long, value_name = "N")]
    molt_count: Option<u64>,
    /// The first tier to try; a tier that cannot answer steps down to the next.
    #[arg(long, value_enum, value_name = "TIER")]
    tier: Option<TierArg>,
    /// How many tail bytes the reverse scan reads.
    #[arg(long, value_name = "BYTES", default_value_t = agentlog::generation::DEFAULT_REVERSE_SCAN_BYTES)]
    reverse_scan_bytes: u64,
    /// Accept a latest boundary without a valid `molt_count` as the expected generation.
    #[arg(long)]
    trust_legacy_boundaries: bool,
    /// Fold at most this many unindexed bytes in memory instead of committing them to the
    /// index (0: commit any new lines).
    #[arg(long, value_name = "BYTES", default_value_t = agentlog::index::DEFAULT_MAX_MEMORY_TAIL)]
    max_memory_tail: u64,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct StatusJson<'a> {
    agent_dir: String,
    tier: &'static str,
    molt_count: Option<u64>,
    verified: bool,
    expected_molt_count: Option<u64>,
    expected_from: Option<&'static str>,
    input_tokens: u128,
    output_tokens: u128,
    cached_tokens: u128,
    thinking_tokens: u128,
    api_calls: u64,
    boundary_offset: Option<u64>,
    boundary_initiator: &'a str,
    boundary_ts: Option<f64>,
    boundary_molt_count: Option<u64>,
    index_outcome: Option<&'static str>,
    index: Option<&'a IndexOutcome>,
    stepped_aside: &'a [SteppedAside],
    bytes_read: u64,
    diagnostics: &'a Diagnostics,
}

pub fn run(args: &Args) -> Result<u8, Failure> {
    let paths = agent_paths(&args.agent_dir);
    let (expected, from) = match args.molt_count {
        Some(n) => (Some(n), Some("flag")),
        None => match read_manifest_molt_count(&args.agent_dir)
            .map_err(agentlog::generation::GenerationError::from)?
        {
            Some(n) => (Some(n), Some("manifest")),
            None => (None, None),
        },
    };
    let mut request = GenerationRequest::latest();
    request.expected_molt_count = expected;
    request.trust_unverifiable_boundaries = args.trust_legacy_boundaries;
    request.reverse_scan_bytes = args.reverse_scan_bytes;
    request.index.max_memory_tail = args.max_memory_tail;
    if let Some(tier) = args.tier {
        request.start_tier = tier.into();
    }
    let current = current_generation_at(&paths, &request)?;
    if args.json {
        print_json(&to_json(args, &current, expected, from))?;
    } else {
        print!("{}", human(&current, expected, from));
    }
    Ok(EXIT_OK)
}

fn to_json<'a>(
    args: &Args,
    current: &'a CurrentGeneration,
    expected: Option<u64>,
    from: Option<&'static str>,
) -> StatusJson<'a> {
    let boundary = current.boundary.as_ref();
    StatusJson {
        agent_dir: display(&args.agent_dir),
        tier: current.tier.as_str(),
        molt_count: current.molt_count,
        verified: current.verified,
        expected_molt_count: expected,
        expected_from: from,
        input_tokens: current.totals.input_tokens,
        output_tokens: current.totals.output_tokens,
        cached_tokens: current.totals.cached_tokens,
        thinking_tokens: current.totals.thinking_tokens,
        api_calls: current.totals.api_calls,
        boundary_offset: boundary.map(|b| b.offset),
        boundary_initiator: current.boundary_initiator(),
        boundary_ts: boundary
            .and_then(|b| b.time)
            .map(agentlog::event::Timestamp::as_seconds),
        boundary_molt_count: boundary.and_then(|b| b.molt_count.value()),
        index_outcome: current.index_outcome.as_ref().map(IndexOutcome::code),
        index: current.index_outcome.as_ref(),
        stepped_aside: &current.stepped_aside,
        bytes_read: current.bytes_read,
        diagnostics: &current.diagnostics,
    }
}

fn human(current: &CurrentGeneration, expected: Option<u64>, from: Option<&str>) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let mut row = |label: &str, value: String| {
        let _ = writeln!(out, "{label:<16}{value}");
    };
    let generation = match (current.molt_count, current.verified, from) {
        (Some(n), true, _) => format!("{n} (verified: the log's latest boundary says {n})"),
        (Some(n), false, Some(_)) if expected.is_some() => {
            format!("{n} (trusted: the latest boundary carries no molt_count)")
        }
        (Some(n), false, _) => format!("{n} (unverified: no --molt-count and no .agent.json)"),
        (None, _, _) => "unknown (the latest boundary carries no valid molt_count)".to_owned(),
    };
    row("generation", generation);
    let outcome = current
        .index_outcome
        .as_ref()
        .map_or(String::new(), |o| format!(" ({o})"));
    row("tier", format!("{}{outcome}", current.tier));
    for step in &current.stepped_aside {
        row("  stepped aside", format!("{}: {}", step.tier, step.reason));
    }
    row(
        "boundary",
        match &current.boundary {
            None => "none: the agent never molted (boot)".to_owned(),
            Some(b) => format!(
                "offset {}, {}{}",
                thousands(b.offset),
                b.initiator,
                b.time
                    .map_or(String::new(), |t| format!(", {}", t.to_rfc3339()))
            ),
        },
    );
    let t = &current.totals;
    row("api calls", thousands(t.api_calls));
    row(
        "input tokens",
        format!(
            "{} (cached {})",
            thousands(t.input_tokens),
            thousands(t.cached_tokens)
        ),
    );
    row("output tokens", thousands(t.output_tokens));
    row("thinking tokens", thousands(t.thinking_tokens));
    let d = &current.diagnostics;
    if d.invalid_lines > 0 || d.token_values_zeroed > 0 || d.token_values_truncated > 0 {
        row(
            "diagnostics",
            format!(
                "{} invalid lines, {} unusable token values counted as 0, {} truncated",
                d.invalid_lines, d.token_values_zeroed, d.token_values_truncated
            ),
        );
    }
    out
}
