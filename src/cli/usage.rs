//! `agentlog usage [PATH...]`: token usage over every transcript found, each message counted
//! once across files, by day, session, project or model.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::OnceLock;

use clap::ValueEnum;
use jiff::civil::Date;

use agentlog::transcript::{GroupBy, OpenOptions, Tally, UsageOptions, UsageReport, usage};

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
        ..UsageOptions::default()
    };
    // A bar on a terminal, for a run that reads many files.
    let bar: OnceLock<Option<indicatif::ProgressBar>> = OnceLock::new();
    let progress = |done: usize, total: usize| {
        let bar = bar.get_or_init(|| {
            (total >= PROGRESS_FILES && std::io::stderr().is_terminal()).then(|| {
                let bar = indicatif::ProgressBar::with_draw_target(
                    Some(total as u64),
                    indicatif::ProgressDrawTarget::stderr(),
                );
                bar.set_message("reading transcripts");
                bar
            })
        });
        if let Some(bar) = bar {
            bar.set_position(done as u64);
        }
    };
    let report = usage(&args.paths, &options, &progress);
    if let Some(Some(bar)) = bar.get() {
        bar.finish_and_clear();
    }
    warn_unarchived(&args.paths);
    if args.json {
        print_json(&report)?;
    } else {
        out!("{}", human(&report));
        for s in &report.skipped {
            eprintln!("agentlog: skipped {}: {}", display(&s.path), s.error);
        }
    }
    Ok(EXIT_OK)
}

/// Warns on stderr about transcripts older than 25 days that the archive does not hold yet
/// (Claude Code deletes them at 30); silent when the archive cannot be read.
fn warn_unarchived(paths: &[PathBuf]) {
    use agentlog::archive::{WARN_AGE, default_archive_dir, unarchived_older_than};
    let roots = if paths.is_empty() {
        agentlog::transcript::default_roots()
    } else {
        paths.to_vec()
    };
    let (files, _) = agentlog::transcript::discover(&roots);
    let Ok(dir) = default_archive_dir() else {
        return;
    };
    if let Ok(old) = unarchived_older_than(&files, &dir, WARN_AGE)
        && !old.is_empty()
    {
        eprintln!(
            "agentlog: {} transcripts older than 25 days are not archived yet (agents delete them; run `agentlog archive`)",
            old.len()
        );
    }
}

/// The table: one line per row, then the totals.
fn human(report: &UsageReport) -> String {
    let by = report.by;
    let mut header = vec![by.name().to_owned()];
    if by == GroupBy::Session {
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
    let cells = |t: &Tally| {
        let u = &t.usage;
        [
            u.input,
            u.output,
            u.cache_creation,
            u.cache_read,
            u.reasoning,
            u.total(),
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
        line.extend(cells(&row.tally));
        rows.push(line);
    }
    let mut total = vec!["total".to_owned()];
    if by == GroupBy::Session {
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
