//! `agentlog generations AGENT_DIR`: one row per generation, oldest first.

use std::path::PathBuf;

use serde::Serialize;

use agentlog::generation::{Generation, GenerationRequest, generations_at};

use super::table::{render, thousands};
use super::{EXIT_OK, Failure, agent_paths, print_json};

#[derive(clap::Args)]
pub struct Args {
    /// The agent directory (its log is `AGENT_DIR/logs/events.jsonl`).
    agent_dir: PathBuf,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    generation: u64,
    molt_count: Option<u64>,
    boundary_offset: Option<u64>,
    boundary_initiator: &'a str,
    boundary_ts: Option<f64>,
    input_tokens: u128,
    output_tokens: u128,
    cached_tokens: u128,
    thinking_tokens: u128,
    api_calls: u64,
}

fn row(g: &Generation) -> Row<'_> {
    Row {
        generation: g.ordinal,
        molt_count: g.molt_count,
        boundary_offset: g.boundary.as_ref().map(|b| b.offset),
        boundary_initiator: g.initiator(),
        boundary_ts: g
            .boundary
            .as_ref()
            .and_then(|b| b.time)
            .map(agentlog::event::Timestamp::as_seconds),
        input_tokens: g.totals.input_tokens,
        output_tokens: g.totals.output_tokens,
        cached_tokens: g.totals.cached_tokens,
        thinking_tokens: g.totals.thinking_tokens,
        api_calls: g.totals.api_calls,
    }
}

pub fn run(args: &Args) -> Result<u8, Failure> {
    let paths = agent_paths(&args.agent_dir);
    let found = generations_at(&paths, &GenerationRequest::latest())?;
    if args.json {
        let rows: Vec<Row<'_>> = found.generations.iter().map(row).collect();
        print_json(&rows)?;
        return Ok(EXIT_OK);
    }
    let mut rows = vec![
        [
            "gen",
            "molt_count",
            "offset",
            "initiator",
            "api_calls",
            "input",
            "cached",
            "output",
            "thinking",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for g in &found.generations {
        rows.push(vec![
            g.ordinal.to_string(),
            g.molt_count.map_or("-".to_owned(), |n| n.to_string()),
            g.boundary
                .as_ref()
                .map_or("-".to_owned(), |b| b.offset.to_string()),
            g.initiator().to_owned(),
            thousands(g.totals.api_calls),
            thousands(g.totals.input_tokens),
            thousands(g.totals.cached_tokens),
            thousands(g.totals.output_tokens),
            thousands(g.totals.thinking_tokens),
        ]);
    }
    let t = &found.lifetime;
    rows.push(vec![
        "all".to_owned(),
        String::new(),
        String::new(),
        String::new(),
        thousands(t.api_calls),
        thousands(t.input_tokens),
        thousands(t.cached_tokens),
        thousands(t.output_tokens),
        thousands(t.thinking_tokens),
    ]);
    print!("{}", render(&rows));
    for step in &found.stepped_aside {
        eprintln!("agentlog: {} stepped aside: {}", step.tier, step.reason);
    }
    Ok(EXIT_OK)
}
