//! `agentlog generations AGENT_DIR`: one row per generation, oldest first.

use std::path::PathBuf;

use agentlog::generation::{GenerationRequest, GenerationRow, generations_at};

use super::table::{header, render, thousands};
use super::{EXIT_OK, Failure, agent_paths, print_json};

#[derive(clap::Args)]
pub struct Args {
    /// The agent directory (its log is `AGENT_DIR/logs/events.jsonl`).
    agent_dir: PathBuf,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &Args) -> Result<u8, Failure> {
    let paths = agent_paths(&args.agent_dir);
    let found = generations_at(&paths, &GenerationRequest::latest())?;
    if args.json {
        let rows: Vec<GenerationRow> = found.generations.iter().map(GenerationRow::from).collect();
        print_json(&rows)?;
        return Ok(EXIT_OK);
    }
    let mut rows = vec![header(&[
        "gen",
        "molt_count",
        "offset",
        "initiator",
        "api_calls",
        "input",
        "cached",
        "output",
        "thinking",
    ])];
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
    out!("{}", render(&rows));
    for step in &found.stepped_aside {
        eprintln!("agentlog: {} stepped aside: {}", step.tier, step.reason);
    }
    Ok(EXIT_OK)
}
