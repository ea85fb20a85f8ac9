//! `agentlog usage [PATH...]`: token usage over every transcript found, each message counted
//! once across files, by day, session, project or model.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::ValueEnum;
use jiff::civil::Date;
use serde_json::{Map, Value, json};

use agentlog::transcript::{
    GroupBy, OpenOptions, Report, SnapshotOutcome, Tokens, UsageOptions, default_roots, discover,
    usage_with_snapshot,
};

use super::table::{render, thousands};
use super::{EXIT_BAD_INPUT, EXIT_OK, Failure, display, print_json};

/// Files at or above which a first run shows a progress bar (on a terminal).
const PROGRESS_FILES: usize = 20;

/// The arguments of `agentlog usage`.
#[derive(clap::Args)]
pub struct Args {
    /// Transcript files or directories to search for `*.jsonl` (default: the places Claude
    /// Code, Codex and pi keep theirs).
    paths: Vec<PathBuf>,
    /// How rows are grouped.
    #[arg(long, value_enum, default_value = "day")]
    by: ByArg,
    /// Only usage on or after this UTC day (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only usage on or before this UTC day (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Keep index files in DIR instead of the cache directory.
    #[arg(long, value_name = "DIR")]
    index_dir: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `--by` values.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
enum ByArg {
    /// UTC day.
    Day,
    /// Session (a transcript with its subagents).
    Session,
    /// Project directory.
    Project,
    /// Model name.
    Model,
}

impl ByArg {
    fn group(self) -> GroupBy {
        match self {
            ByArg::Day => GroupBy::Day,
            ByArg::Session => GroupBy::Session,
            ByArg::Project => GroupBy::Project,
            ByArg::Model => GroupBy::Model,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ByArg::Day => "day",
            ByArg::Session => "session",
            ByArg::Project => "project",
            ByArg::Model => "model",
        }
    }
}

/// A day argument: `YYYY-MM-DD` or `YYYYMMDD`.
fn parse_day(flag: &str, text: Option<&str>) -> Result<Option<Date>, Failure> {
    let Some(text) = text else { return Ok(None) };
    let spelled = match (text.len(), text.bytes().all(|b| b.is_ascii_digit())) {
        (8, true) => format!(
            "{}-{}-{}",
            text.get(0..4).unwrap_or_default(),
            text.get(4..6).unwrap_or_default(),
            text.get(6..8).unwrap_or_default()
        ),
        _ => text.to_owned(),
    };
    spelled.parse::<Date>().map(Some).map_err(|e| {
        Failure::new(
            "bad_input",
            EXIT_BAD_INPUT,
            format!("{flag} {text:?} is not a day (YYYY-MM-DD or YYYYMMDD): {e}"),
        )
    })
}

/// Runs the command.
pub fn run(args: &Args) -> Result<u8, Failure> {
    let options = UsageOptions {
        open: OpenOptions {
            index_dir: args.index_dir.clone(),
            ..OpenOptions::default()
        },
        by: args.by.group(),
        since: parse_day("--since", args.since.as_deref())?,
        until: parse_day("--until", args.until.as_deref())?,
        threads: 0,
    };
    let roots = if args.paths.is_empty() {
        default_roots()
    } else {
        args.paths.clone()
    };
    let (files, mut skipped) = discover(&roots);
    let bar = (files.len() >= PROGRESS_FILES && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(files.len() as u64),
            indicatif::ProgressDrawTarget::stderr(),
        );
        bar.set_message("reading transcripts");
        bar
    });
    let progress = |done: usize| {
        if let Some(bar) = &bar {
            bar.set_position(done as u64);
        }
    };
    let (mut report, snapshot) = usage_with_snapshot(&roots, &files, &options, &progress);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    skipped.append(&mut report.skipped);
    report.skipped = skipped;
    if args.json {
        print_json(&to_json(&report, args.by, &options, &snapshot))?;
    } else {
        out!("{}", human(&report, args.by));
        for s in &report.skipped {
            eprintln!("agentlog: skipped {}: {}", display(&s.path), s.error);
        }
    }
    Ok(EXIT_OK)
}

fn tokens_json(t: &Tokens) -> Map<String, Value> {
    match serde_json::to_value(t) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// The JSON document: one object per row with its token fields, and the totals.
fn to_json(
    report: &Report,
    by: ByArg,
    options: &UsageOptions,
    snapshot: &SnapshotOutcome,
) -> Value {
    let rows: Vec<Value> = report
        .rows
        .iter()
        .map(|row| {
            let mut object = Map::new();
            object.insert(by.name().to_owned(), row.key.clone().into());
            if let Some(project) = &row.project {
                object.insert("project".to_owned(), project.clone().into());
            }
            object.extend(tokens_json(&row.tokens));
            Value::Object(object)
        })
        .collect();
    let skipped: Vec<Value> = report
        .skipped
        .iter()
        .map(|s| json!({"path": display(&s.path), "error": s.error.to_string()}))
        .collect();
    json!({
        "by": by.name(),
        "timezone": "UTC",
        "since": options.since.map(|d| d.to_string()),
        "until": options.until.map(|d| d.to_string()),
        "rows": rows,
        "totals": tokens_json(&report.totals),
        "files": report.files,
        "index_outcomes": report.outcomes,
        "snapshot": {"outcome": snapshot.name(), "reason": snapshot.reason()},
        "cross_file_duplicates": report.cross_file_duplicates,
        "skipped": skipped,
    })
}

/// The table: one line per row, then the totals.
fn human(report: &Report, by: ByArg) -> String {
    let mut header = vec![by.name().to_owned()];
    if matches!(by, ByArg::Session) {
        header.push("project".to_owned());
    }
    header.extend(
        [
            "input",
            "output",
            "cache_create",
            "cache_read",
            "reasoning",
            "total",
            "messages",
        ]
        .map(str::to_owned),
    );
    let cells = |t: &Tokens| {
        [
            t.input_tokens,
            t.output_tokens,
            t.cache_creation_tokens,
            t.cache_read_tokens,
            t.reasoning_output_tokens,
            t.total_tokens,
            t.messages,
        ]
        .map(thousands)
    };
    let mut rows = vec![header];
    for row in &report.rows {
        let mut line = vec![row.key.clone()];
        if let Some(project) = &row.project {
            line.push(project.clone());
        }
        line.extend(cells(&row.tokens));
        rows.push(line);
    }
    let mut total = vec!["total".to_owned()];
    if matches!(by, ByArg::Session) {
        total.push(String::new());
    }
    total.extend(cells(&report.totals));
    rows.push(total);
    let files: u64 = report.files.values().sum();
    format!(
        "{}\n{files} transcripts, {} messages found in several files counted once (days in UTC)\n",
        render(&rows),
        report.cross_file_duplicates
    )
}
