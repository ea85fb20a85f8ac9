//! `agentlog statusline`: one line for Claude Code's `statusLine` setting, from the JSON it
//! passes on stdin: the model, the context size and its share of the window, the tokens since
//! the latest compaction, the session's and the day's totals.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::json;

use agentlog::transcript::{
    Format, MAX_STATUS_INPUT, OpenOptions, StatusInput, Tally, Transcript, TranscriptError,
    context_tokens, context_window, open, parse_status_input,
};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Failure, print_json};

/// New transcript bytes up to this many are folded in memory instead of written to the index.
const MEMORY_TAIL: u64 = 1 << 20;

/// The arguments of `agentlog statusline`.
#[derive(clap::Args)]
pub struct Args {
    /// Keep index files in DIR instead of the cache directory.
    #[arg(long, value_name = "DIR")]
    index_dir: Option<PathBuf>,
    /// Print the figures as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The figures of the line.
struct Figures {
    format: Option<Format>,
    since: Tally,
    session: u64,
    today: u64,
    today_files: u64,
    context: Option<u64>,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<u8, Failure> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_STATUS_INPUT as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::new("io_error", EXIT_FAILURE, format!("cannot read stdin: {e}")))?;
    let input = parse_status_input(&bytes)
        .map_err(|e| Failure::new("bad_input", EXIT_BAD_INPUT, e.to_string()))?;
    let now = jiff::Timestamp::now().as_second();
    let day_start = now.div_euclid(86_400) * 86_400;
    let options = OpenOptions {
        index_dir: args.index_dir.clone(),
        // Claude Code's own transcripts: read as such even before a line shows the format.
        format: Some(Format::ClaudeCode),
        max_memory_tail: MEMORY_TAIL,
        buckets_from: Some(day_start / 900),
        ..OpenOptions::default()
    };
    let figures = figures(&input, &options, day_start)?;
    let window = context_window(input.model_id.as_deref(), input.model_name.as_deref());
    let model = input
        .model_name
        .clone()
        .or_else(|| input.model_id.clone())
        .unwrap_or_else(|| "?".to_owned());
    if args.json {
        let format = figures.format.unwrap_or(Format::ClaudeCode);
        let share = figures.context.map(|c| percent(c, window));
        print_json(&json!({
            "model": model,
            "session_id": input.session_id,
            "transcript_path": input.transcript_path.display().to_string(),
            "context_tokens": figures.context,
            "context_window": window,
            "context_percent": share,
            "since_compaction": figures.since.to_json(format),
            "session_total_tokens": figures.session,
            "today_total_tokens": figures.today,
            "today_transcripts": figures.today_files,
            "timezone": "UTC",
        }))?;
    } else {
        let context = match figures.context {
            Some(c) => format!("{} ({:.0}%)", short(c), percent(c, window)),
            None => "-".to_owned(),
        };
        outln!(
            "{model} | ctx {context} | since compact {} | session {} | today {}",
            short(figures.since.tokens[4]),
            short(figures.session),
            short(figures.today)
        );
    }
    Ok(EXIT_OK)
}

/// Reads the session's transcript and today's transcripts of its project.
fn figures(input: &StatusInput, options: &OpenOptions, day_start: i64) -> Result<Figures, Failure> {
    let path = &input.transcript_path;
    let main = match open(path, options) {
        Ok(t) => Some(t),
        // A session that has not written its transcript yet: nothing counted so far.
        Err(TranscriptError::NotFound { .. } | TranscriptError::Empty { .. }) => None,
        Err(e) => return Err(Failure::from(e)),
    };
    let from = day_start / 900;
    let today_of = |t: &Transcript| -> u64 {
        t.buckets()
            .unwrap_or_default()
            .iter()
            .filter(|((q, _), _)| *q >= from)
            .map(|(_, tally)| tally.tokens[4])
            .sum()
    };
    let mut today = main.as_ref().map_or(0, today_of);
    let mut today_files = u64::from(main.is_some());
    for other in written_today(path, day_start) {
        if let Ok(t) = open(&other, options) {
            today = today.saturating_add(today_of(&t));
            today_files += 1;
        }
    }
    let context = match &main {
        Some(t) if t.format == Format::ClaudeCode => context_tokens(&t.path, t.coverage.end)
            .map_err(|e| {
                Failure::from(TranscriptError::Io {
                    op: "read",
                    path: t.path.clone(),
                    source: e,
                })
            })?,
        _ => None,
    };
    Ok(Figures {
        format: main.as_ref().map(|t| t.format),
        since: main
            .as_ref()
            .map(Transcript::since_compaction)
            .unwrap_or_default(),
        session: main.as_ref().map_or(0, |t| t.lifetime().tokens[4]),
        today,
        today_files,
        context,
    })
}

/// The other `*.jsonl` files beside `path` (its project's sessions) written since `day_start`
/// (seconds since the epoch): a file last written before today holds no usage of today.
fn written_today(path: &Path, day_start: i64) -> Vec<PathBuf> {
    let Some(dir) = path.parent() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let p = e.path();
            p.extension().is_some_and(|x| x == "jsonl")
                && p.file_name() != path.file_name()
                && e.metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .is_some_and(|t| {
                        jiff::Timestamp::try_from(t).is_ok_and(|t| t.as_second() >= day_start)
                    })
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

#[allow(clippy::cast_precision_loss)]
fn percent(tokens: u64, window: u64) -> f64 {
    // Token counts are far below 2^52: the conversion is exact.
    tokens as f64 * 100.0 / window.max(1) as f64
}

/// 950, 12.3k, 1.2M.
#[allow(clippy::cast_precision_loss)]
fn short(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}
