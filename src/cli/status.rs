//! `agentlog status AGENT_DIR`: the current generation's totals.

use std::fmt::Write as _;
use std::path::PathBuf;

use agentlog::generation::{
    CurrentGeneration, ExpectedFrom, GenerationRequest, StatusReport, current_generation_at,
    expected_generation,
};

use super::table::thousands;
use super::{EXIT_OK, Failure, TierArg, agent_paths, print_json};

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

pub fn run(args: &Args) -> Result<u8, Failure> {
    let paths = agent_paths(&args.agent_dir);
    let expected = expected_generation(&args.agent_dir, args.molt_count)
        .map_err(agentlog::generation::GenerationError::from)?;
    let mut request = GenerationRequest::latest();
    request.expected_molt_count = expected.map(|(n, _)| n);
    request.trust_unverifiable_boundaries = args.trust_legacy_boundaries;
    request.reverse_scan_bytes = args.reverse_scan_bytes;
    request.index.max_memory_tail = args.max_memory_tail;
    if let Some(tier) = args.tier {
        request.start_tier = tier.into();
    }
    let current = current_generation_at(&paths, &request)?;
    if args.json {
        print_json(&StatusReport::new(&args.agent_dir, &current, expected))?;
    } else {
        out!("{}", human(&current, expected));
    }
    Ok(EXIT_OK)
}

fn human(current: &CurrentGeneration, expected: Option<(u64, ExpectedFrom)>) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let mut row = |label: &str, value: String| {
        let _ = writeln!(out, "{label:<16}{value}");
    };
    let generation = match (current.molt_count, current.verified, expected) {
        (Some(n), true, _) => format!("{n} (verified: the log's latest boundary says {n})"),
        (Some(n), false, Some(_)) => {
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
