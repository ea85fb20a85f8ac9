//! `agentlog transcript FILE`: a Claude Code, Codex, pi, Gemini CLI or Qwen Code transcript's
//! compaction boundaries and token tallies (per generation, since the latest compaction,
//! lifetime), read through its index in the cache directory.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use serde_json::Value;

use agentlog::transcript::{
    Format, NativeValue, OpenCodeReport, OpenOptions, ReportError, ReportOptions,
    TranscriptDiagnostics, TranscriptError, TranscriptReport, UsageFigures, read_opencode,
};

use super::cache::{CacheArgs, archive_dir};
use super::table::{header, render, thousands};
use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_NO_LOG, EXIT_OK, Failure, display, stream_json};

#[derive(clap::Args)]
pub struct Args {
    /// The transcript: a Claude Code session file, a Codex rollout, a pi session file, or an
    /// OpenCode database (opencode.db, read with its -wal) or storage directory.
    // clap prints this comment as the argument's help, where backticks would show.
    #[allow(clippy::doc_markdown)]
    file: PathBuf,
    /// Read it as this format instead of detecting it from its first lines.
    #[arg(long, value_parser = format_arg(), default_value = "auto")]
    format: FormatArg,
    /// Also count the session's subagent transcripts (Claude Code), each message once.
    #[arg(long)]
    subagents: bool,
    #[command(flatten)]
    cache: CacheArgs,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `--format`: a format (by its [`Format::name`]), or none for `auto`.
#[derive(Clone, Copy)]
struct FormatArg(Option<Format>);

/// `--format`'s values in the order `--help` lists them, with their help.
const FORMAT_VALUES: [(Option<Format>, &str); 9] = [
    (None, "Detect the format from the first lines"),
    (Some(Format::ClaudeCode), "Claude Code"),
    (Some(Format::Codex), "OpenAI Codex CLI"),
    (Some(Format::Pi), "pi"),
    (Some(Format::Copilot), "GitHub Copilot CLI"),
    (Some(Format::Gemini), "Gemini CLI"),
    (Some(Format::Qwen), "Qwen Code"),
    (
        Some(Format::OpenCode),
        "OpenCode (a database or an older storage directory)",
    ),
    (Some(Format::Kimi), "Kimi Code CLI"),
];

/// The parser of `--format`: one of [`FORMAT_VALUES`] by name.
fn format_arg() -> impl TypedValueParser<Value = FormatArg> {
    let values = FORMAT_VALUES
        .iter()
        .map(|&(format, help)| PossibleValue::new(format.map_or("auto", Format::name)).help(help));
    PossibleValuesParser::new(values).map(|name| FormatArg(name.parse().ok()))
}

impl From<TranscriptError> for Failure {
    fn from(error: TranscriptError) -> Failure {
        let message = error.to_string();
        match error {
            TranscriptError::NotFound { path } => {
                Failure::new("no_transcript", EXIT_NO_LOG, message).with_path(&path)
            }
            TranscriptError::NotAFile { path, .. } => {
                Failure::new("not_a_file", EXIT_FAILURE, message).with_path(&path)
            }
            TranscriptError::Empty { path } => {
                Failure::new("empty_transcript", EXIT_BAD_INPUT, message).with_path(&path)
            }
            TranscriptError::UnknownFormat { path } => {
                Failure::new("unknown_format", EXIT_BAD_INPUT, message).with_path(&path)
            }
            TranscriptError::NotADocument { path, .. } => {
                Failure::new("not_a_document", EXIT_BAD_INPUT, message).with_path(&path)
            }
            TranscriptError::Unreadable { path, .. } => {
                Failure::new("unreadable", EXIT_BAD_INPUT, message).with_path(&path)
            }
            TranscriptError::Io { path, .. } => {
                Failure::new("io_error", EXIT_FAILURE, message).with_path(&path)
            }
            _ => Failure::new("io_error", EXIT_FAILURE, message),
        }
    }
}

impl From<ReportError> for Failure {
    fn from(error: ReportError) -> Failure {
        match error {
            ReportError::Transcript(e) => Failure::from(e),
            ReportError::NoSubagents { path, format } => Failure::new(
                "bad_input",
                EXIT_BAD_INPUT,
                format!(
                    "--subagents applies to Claude Code transcripts; {} is {format}",
                    display(&path)
                ),
            ),
            other => Failure::new("bad_input", EXIT_BAD_INPUT, other.to_string()),
        }
    }
}

pub fn run(args: &Args) -> Result<u8, Failure> {
    let opencode = match args.format.0 {
        Some(f) => f == Format::OpenCode,
        None => is_opencode(&args.file),
    };
    if opencode {
        if args.subagents {
            return Err(Failure::new(
                "bad_input",
                EXIT_BAD_INPUT,
                "--subagents applies to Claude Code transcripts; an OpenCode database answers every session in it".to_owned(),
            ));
        }
        let report = read_opencode(&args.file, args.cache.index_dir.as_deref())?;
        if args.json {
            stream_json(|out| serde_json::to_writer(out, &report))?;
        } else {
            out!("{}", human_opencode(&report));
        }
        return Ok(EXIT_OK);
    }
    let options = ReportOptions {
        open: OpenOptions {
            format: args.format.0,
            index_dir: args.cache.index_dir.clone(),
            ..OpenOptions::default()
        },
        subagents: args.subagents,
    };
    let archive = archive_dir(args.cache.no_archive);
    let report = agentlog::archive::report(&args.file, &options, archive.as_deref())?;
    if args.json {
        // Straight out: the document grows with the number of boundaries.
        stream_json(|out| serde_json::to_writer(out, &report))?;
    } else {
        out!("{}", human(&report));
        let odd = odd_diagnostics(&report.diagnostics);
        if !odd.is_empty() {
            eprintln!("agentlog: diagnostics: {odd}");
        }
    }
    Ok(EXIT_OK)
}

/// The `OpenCode` table: one row per session, in `OpenCode`'s names, then the total.
fn human_opencode(r: &OpenCodeReport) -> String {
    let mut out = format!(
        "opencode    {}{}\n\n",
        display(&r.path),
        if r.wal { " (with its -wal)" } else { "" }
    );
    let mut names = header(&["session", "title"]);
    names.extend(r.total.native.iter().map(|(name, _)| (*name).to_owned()));
    let mut rows = vec![names];
    for s in &r.sessions {
        let mut row = vec![s.session.clone(), s.title.clone().unwrap_or_default()];
        row.extend(cells(&s.usage));
        rows.push(row);
    }
    let mut total = vec!["total".to_owned(), String::new()];
    total.extend(cells(&r.total));
    rows.push(total);
    out.push_str(&render(&rows));
    for (path, why) in &r.skipped {
        let _ = writeln!(out, "skipped     {path}: {why}");
    }
    out
}

/// Whether a path is `OpenCode`'s: a directory (its storage) or an SQLite database.
fn is_opencode(path: &std::path::Path) -> bool {
    use std::io::Read as _;
    if path.is_dir() {
        return true;
    }
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

/// The table: one row per generation, in the format's own names, then lifetime (and with
/// subagents).
pub(super) fn human(r: &TranscriptReport) -> String {
    let mut out = format!(
        "transcript  {} ({})\nindex       {}\n\n",
        display(&r.path),
        r.format,
        r.index
    );
    if let Some(version) = r.from_archive {
        let why = if r.path.exists() {
            "the file is shorter now"
        } else {
            "the file is gone"
        };
        let _ = writeln!(out, "from the archive: version {version} ({why})\n");
    }
    let mut names = header(&["gen", "offset", "line", "kind", "trigger", "pre_tokens"]);
    names.extend(r.lifetime.native.iter().map(|(name, _)| (*name).to_owned()));
    let mut rows = vec![names];
    for (i, g) in r.generations.iter().enumerate() {
        let boundary = i.checked_sub(1).and_then(|b| r.boundaries.get(b));
        let mut row = vec![
            i.to_string(),
            g.offset.to_string(),
            boundary.map_or("-".to_owned(), |b| b.line.to_string()),
            boundary.map_or("-".to_owned(), |b| b.kind.name().to_owned()),
            boundary
                .and_then(|b| b.trigger.clone())
                .unwrap_or_else(|| "-".to_owned()),
            boundary
                .and_then(|b| b.pre_tokens)
                .map_or("-".to_owned(), thousands),
        ];
        row.extend(cells(&g.usage));
        rows.push(row);
    }
    let mut total = |label: &str, figures: &UsageFigures| {
        let mut row = vec![label.to_owned()];
        row.extend(std::iter::repeat_n(String::new(), 5));
        row.extend(cells(figures));
        rows.push(row);
    };
    total("lifetime", &r.lifetime);
    if let Some(with) = &r.lifetime_with_subagents {
        total("+subagents", with);
    }
    out.push_str(&render(&rows));
    let since = &r.since_compaction.tally;
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "\nsince the latest compaction: {} tokens in {} {}\n",
        thousands(since.usage.total()),
        thousands(since.messages),
        if r.format == Format::Codex {
            "usage events"
        } else {
            "messages"
        }
    );
    for sub in r.subagents.iter().flatten() {
        let _ = match (&sub.lifetime, &sub.error) {
            (Some(lifetime), _) => writeln!(
                out,
                "subagent    {} ({} tokens, index {})",
                display(&sub.path),
                thousands(lifetime.tally.usage.total()),
                sub.index_outcome.unwrap_or("-")
            ),
            (None, error) => writeln!(
                out,
                "subagent    {} not read: {}",
                display(&sub.path),
                error.as_deref().unwrap_or("")
            ),
        };
    }
    out
}

fn cells(figures: &UsageFigures) -> Vec<String> {
    figures
        .native
        .iter()
        .map(|(_, value)| match value {
            NativeValue::Count(n) => thousands(*n),
            NativeValue::Dollars(x) => format!("{x:.4}"),
        })
        .collect()
}

/// The diagnostics worth a human's attention, as `name count` pairs.
fn odd_diagnostics(d: &TranscriptDiagnostics) -> String {
    let Ok(Value::Object(map)) = serde_json::to_value(d) else {
        return String::new();
    };
    map.into_iter()
        .filter(|(name, _)| {
            !matches!(
                name.as_str(),
                "parsed_lines" | "duplicate_lines" | "null_info"
            )
        })
        .filter_map(|(name, v)| v.as_u64().filter(|n| *n > 0).map(|n| format!("{name} {n}")))
        .collect::<Vec<_>>()
        .join(", ")
}
