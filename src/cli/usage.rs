//! `agentlog usage [PATH...]`: token usage and its cost over every transcript found, each
//! message counted once across files, by day, week, month, session, project, model, agent or
//! billing block, for every agent or those `--agent` names; `--watch` redraws it
//! (`super::watch`).

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::ValueEnum;
use jiff::civil::Date;
use jiff::tz::TimeZone;

use agentlog::archive::{WARN_AGE, default_archive_dir, usage_and_unarchived};
use agentlog::transcript::{
    CostMode, GroupBy, OpenOptions, RowCost, Tally, UsageArgError, UsageOptions, UsageReport,
    UsageRow, parse_agent, parse_day, parse_timezone,
};

use super::cache::{CacheArgs, archive_dir};
use super::progress::FilesBar;
use super::table::{money, render, thousands};
use super::{EXIT_BAD_INPUT, EXIT_OK, Failure, display, print_json};

/// The arguments of `agentlog usage`.
#[derive(clap::Args)]
pub struct Args {
    /// Transcript files or directories to search for `*.jsonl` (and Gemini CLI's
    /// `chats/session-*.json`; default: the places the agents keep theirs).
    paths: Vec<PathBuf>,
    /// How rows are grouped.
    #[arg(long, value_enum, default_value = "day")]
    by: ByArg,
    /// Only this agent's usage (claude-code, codex, pi, kimi, ...); repeat for several.
    #[arg(long = "agent", value_name = "NAME")]
    agents: Vec<String>,
    /// Only usage on or after this day in the report's zone (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only usage on or before this day in the report's zone (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// The time zone days, weeks and months are cut in (IANA name, e.g. Europe/Paris;
    /// default: `TZ`, else the system's /etc/localtime).
    #[arg(long, value_name = "TZ")]
    timezone: Option<String>,
    /// Which cost to show: the recorded one where a format records it, else calculated
    /// (auto); always calculated from the price table; or recorded only.
    #[arg(long, value_enum, default_value = "auto")]
    cost: CostArg,
    /// A price file in `LiteLLM`'s `model_prices_and_context_window.json` format, used instead
    /// of the embedded table.
    #[arg(long, value_name = "FILE")]
    pricing: Option<PathBuf>,
    /// Redraw the active block, today and the latest session every --interval seconds.
    #[arg(long)]
    pub watch: bool,
    /// Seconds between redraws with --watch.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub interval: f64,
    #[command(flatten)]
    cache: CacheArgs,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `--by` values.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
enum ByArg {
    /// Day in the report's zone.
    Day,
    /// ISO week (Monday first) in the report's zone.
    Week,
    /// Month in the report's zone.
    Month,
    /// Session (a transcript with its subagents).
    Session,
    /// Project directory.
    Project,
    /// Model name.
    Model,
    /// 5-hour billing block.
    Block,
    /// Agent (claude-code, codex, pi, kimi, ...).
    Agent,
}

impl ByArg {
    fn group(self) -> GroupBy {
        match self {
            ByArg::Day => GroupBy::Day,
            ByArg::Week => GroupBy::Week,
            ByArg::Month => GroupBy::Month,
            ByArg::Session => GroupBy::Session,
            ByArg::Project => GroupBy::Project,
            ByArg::Model => GroupBy::Model,
            ByArg::Block => GroupBy::Block,
            ByArg::Agent => GroupBy::Agent,
        }
    }
}

/// `--cost` values.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
enum CostArg {
    Auto,
    Calculate,
    Recorded,
}

/// A usage argument that does not parse, as the CLI reports it.
fn bad(flag: &str, e: &UsageArgError) -> Failure {
    Failure::new("bad_input", EXIT_BAD_INPUT, format!("{flag} {e}"))
}

/// A day argument (`YYYY-MM-DD` or `YYYYMMDD`).
fn day(flag: &str, text: Option<&str>) -> Result<Option<Date>, Failure> {
    text.map(|t| parse_day(t).map_err(|e| bad(flag, &e)))
        .transpose()
}

/// The options the arguments ask for.
pub fn options(args: &Args) -> Result<UsageOptions, Failure> {
    Ok(UsageOptions {
        open: OpenOptions {
            index_dir: args.cache.index_dir.clone(),
            ..OpenOptions::default()
        },
        by: args.by.group(),
        agents: args
            .agents
            .iter()
            .map(|name| parse_agent(name).map_err(|e| bad("--agent:", &e)))
            .collect::<Result<_, _>>()?,
        since: day("--since", args.since.as_deref())?,
        until: day("--until", args.until.as_deref())?,
        timezone: parse_timezone(args.timezone.as_deref()).map_err(|e| bad("--timezone", &e))?,
        cost: match args.cost {
            CostArg::Auto => CostMode::Auto,
            CostArg::Calculate => CostMode::Calculate,
            CostArg::Recorded => CostMode::Recorded,
        },
        prices: super::pricing::table(args.pricing.as_ref())?,
        ..UsageOptions::default()
    })
}

/// Runs the command.
pub fn run(args: &Args) -> Result<u8, Failure> {
    let options = options(args)?;
    let archive = archive_dir(args.cache.no_archive);
    if args.watch {
        let archive = archive.as_deref();
        return super::watch::run(&args.paths, &options, archive, args.interval, args.json);
    }
    // A bar on a terminal, for a run that reads many files.
    let bar = FilesBar::new("reading transcripts", true);
    let progress = |done, total| bar.update(done, total);
    // Checked against the default archive even under `--no-archive`: it is about the files.
    let (report, unarchived) = match default_archive_dir() {
        Ok(dir) => {
            let pending = (dir.as_path(), WARN_AGE);
            let (report, old) = usage_and_unarchived(
                &args.paths,
                &options,
                archive.as_deref(),
                pending,
                &progress,
            );
            (report, old.map_or(0, |old| old.len()))
        }
        Err(_) => (
            agentlog::archive::usage(&args.paths, &options, archive.as_deref(), &progress),
            0,
        ),
    };
    bar.finish();
    // Silent when the archive cannot be read.
    if unarchived > 0 {
        eprintln!(
            "agentlog: {unarchived} transcripts older than 25 days are not archived yet (agents delete them; run `agentlog archive`)"
        );
    }
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

/// A row's first cells: the key (a block's start and end in the report's zone), and the
/// project of a session row.
fn key_cells(row: &UsageRow, zone: &TimeZone) -> Vec<String> {
    let mut cells = vec![match &row.block {
        Some(b) => {
            let local = |t: jiff::Timestamp| zone.to_datetime(t).strftime("%F %H:%M");
            let tag = if b.is_gap {
                " (gap)"
            } else if b.is_active {
                " (active)"
            } else {
                ""
            };
            format!("{} - {}{tag}", local(b.start), local(b.end))
        }
        None => row.key.clone(),
    }];
    if let Some(project) = &row.project {
        cells.push(project.clone());
    }
    cells
}

/// The table: one line per row, then the totals.
pub fn human(report: &UsageReport) -> String {
    let by = report.by;
    let zone = agentlog::transcript::zone_named(&report.timezone)
        .unwrap_or_else(|_| agentlog::transcript::system_zone());
    let mut header = vec![by.name().to_owned()];
    if by == GroupBy::Session {
        header.push("project".to_owned());
    }
    // An agent column when the rows hold more than one agent's usage (and are not by agent).
    let mut agents: Vec<&str> = report
        .rows
        .iter()
        .flat_map(|r| r.agents.iter().map(|f| f.name()))
        .collect();
    agents.sort_unstable();
    agents.dedup();
    let agent_column = by != GroupBy::Agent && agents.len() > 1;
    if agent_column {
        header.push("agent".to_owned());
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
            "cost_usd",
        ]
        .map(str::to_owned),
    );
    let cells = |t: &Tally, cost: &RowCost| {
        let u = &t.usage;
        let mut out: Vec<String> = [
            u.input,
            u.output,
            u.cache_creation,
            u.cache_read,
            u.reasoning,
            u.total(),
            t.messages,
        ]
        .map(thousands)
        .to_vec();
        out.push(money(cost));
        out
    };
    let mut rows = vec![header];
    for row in &report.rows {
        let mut line = key_cells(row, &zone);
        if agent_column {
            line.push(row.agent_names());
        }
        line.extend(cells(&row.tally, &row.cost));
        rows.push(line);
    }
    let mut total = vec!["total".to_owned()];
    if by == GroupBy::Session {
        total.push(String::new());
    }
    if agent_column {
        total.push(String::new());
    }
    total.extend(cells(&report.totals, &report.cost));
    rows.push(total);
    let files: u64 = report.files.values().sum();
    let mut out = format!(
        "{}\n{files} transcripts, {} messages found in several files counted once (times in {}, cost {})\n",
        render(&rows),
        report.cross_file_duplicates,
        report.timezone,
        report.cost_mode.name(),
    );
    if !report.cost.unpriced_models.is_empty() {
        let names: Vec<&str> = report
            .cost
            .unpriced_models
            .iter()
            .map(String::as_str)
            .collect();
        let _ = writeln!(
            out,
            "* not priced (no price for): {} (see `agentlog pricing`)",
            names.join(", ")
        );
    }
    for row in &report.rows {
        if let Some(b) = row.block.as_ref().filter(|b| b.is_active)
            && let (Some(rate), Some(p)) = (b.burn_rate, b.projection)
        {
            let usd = |d: Option<f64>| d.map_or_else(|| "-".to_owned(), |d| format!("${d:.2}"));
            let _ = writeln!(
                out,
                "active block: {:.0} tokens/min, {}/h; by its end ({} min): {} tokens, {}",
                rate.tokens_per_minute,
                usd(rate.cost_usd_per_hour),
                p.remaining_minutes,
                thousands(p.total_tokens),
                usd(p.cost_usd)
            );
        }
    }
    out
}
