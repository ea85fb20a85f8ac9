//! `agentlog index AGENT_DIR`: build or catch up the index.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use agentlog::index::{Index, IndexOptions, IndexOutcome};

use super::table::thousands;
use super::{EXIT_OK, Failure, agent_paths, print_json};

#[derive(clap::Args)]
pub struct Args {
    /// The agent directory (its log is `AGENT_DIR/logs/events.jsonl`).
    agent_dir: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct IndexJson<'a> {
    outcome: &'static str,
    detail: &'a IndexOutcome,
    bytes_indexed: u64,
    events_indexed: u64,
    watermark: u64,
    events: u64,
    generations: u64,
    seconds: f64,
}

/// Only builds this large get a progress bar.
const PROGRESS_FROM_BYTES: u64 = 64 << 20;

pub fn run(args: &Args) -> Result<u8, Failure> {
    let paths = agent_paths(&args.agent_dir);
    let started = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    let terminal = std::io::stderr().is_terminal();
    let mut progress = |done: u64, total: u64| {
        if !terminal || total < PROGRESS_FROM_BYTES {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "indexing {bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            ) {
                bar.set_style(style);
            }
            bar
        });
        bar.set_position(done);
    };
    // Asked to bring the index up to date: commit even a small tail.
    let options = IndexOptions {
        max_memory_tail: 0,
        ..IndexOptions::default()
    };
    let index = Index::open_with_progress(&paths, &options, &mut progress)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let seconds = started.elapsed().as_secs_f64();
    let (bytes, events) = index.outcome().work();
    if args.json {
        print_json(&IndexJson {
            outcome: index.outcome().code(),
            detail: index.outcome(),
            bytes_indexed: bytes,
            events_indexed: events,
            watermark: index.watermark(),
            events: index.state().events,
            generations: index.state().boundaries + 1,
            seconds,
        })?;
    } else {
        outln!(
            "index {}: {} events in {} generations, {} bytes of log covered ({:.3} s)",
            index.outcome(),
            thousands(index.state().events),
            thousands(index.state().boundaries + 1),
            thousands(index.state().end),
            seconds
        );
    }
    Ok(EXIT_OK)
}
