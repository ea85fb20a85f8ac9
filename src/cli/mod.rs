//! Argument handling, output conventions and exit codes.
//!
//! Conventions scripts rely on: with `--json`, stdout carries exactly one JSON document, error
//! objects included (`{"error":"<code>","message":...}`); human messages go to stderr. Exit
//! codes: 0 success, 1 failure, 2 bad input, 3 `molt_count` mismatch, 4 no log.

// `println!` and `print!` panic when stdout is a pipe whose reader went away (`| head`); these
// end the process quietly instead, as other Unix tools do. Defined before the modules use them.
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))
    };
}

mod append;
mod archive;
mod cache;
mod demo;
mod demo_transcripts;
mod export;
mod generations;
mod index;
#[cfg(feature = "mcp")]
mod mcp;
mod pricing;
mod progress;
mod search;
#[cfg(feature = "serve")]
mod serve;
mod sessions;
mod status;
mod statusline;
mod table;
mod transcript;
mod usage;
mod verify;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde::Serialize;

use agentlog::generation::{GenerationError, Tier};
use agentlog::index::IndexError;
use agentlog::log::LogError;

/// Exit status for success.
pub const EXIT_OK: u8 = 0;
/// Exit status for a failure (I/O, index, ...).
pub const EXIT_FAILURE: u8 = 1;
/// Exit status for bad input (a bad event line, a bad manifest).
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit status when the log does not prove the expected generation.
pub const EXIT_MISMATCH: u8 = 3;
/// Exit status when there is no log.
pub const EXIT_NO_LOG: u8 = 4;

#[derive(Parser)]
#[command(
    name = "agentlog",
    version,
    about = "Since-molt token totals and a self-validating index for agent event logs",
    long_about = "agentlog keeps a derived, self-validating index beside an agent's logs/events.jsonl \
                  so that \"tokens used since the last molt\" is answered in O(1), and never from a \
                  stale index. Set AGENTLOG_LOG=info (or debug) to see what the index does on stderr."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Token totals of the current generation (since the last molt).
    Status(status::Args),
    /// One row per generation, oldest first, and lifetime totals.
    Generations(generations::Args),
    /// Build or catch up the index.
    Index(index::Args),
    /// Check the index against the log without changing it.
    Verify(verify::Args),
    /// Append events (one JSON object per stdin line), printing each one's byte offset once
    /// it is acknowledged.
    Append(append::Args),
    /// Write a realistic agent directory, index it, and compare the tiers.
    Demo(demo::Args),
    /// The sessions of a store (ROOT/<session-id>/events.jsonl), newest first.
    Sessions(sessions::SessionsArgs),
    /// The events of a session, with their surface class; filter by type, surface or text.
    Events(sessions::EventsArgs),
    /// One event of a session with a window of neighbours.
    Read(sessions::ReadArgs),
    /// A session's lineage: ancestors, descendants, whether it reaches a root.
    TraceSession(sessions::TraceSessionArgs),
    /// How one event relates to others: replacements, cited sources, citing events.
    TraceEvent(sessions::TraceEventArgs),
    /// Write agent logs and session stores as a Parquet dataset, incrementally.
    Export(export::Args),
    /// Full-text search over a store's sessions (one phrase, case and accents ignored).
    Search(search::SearchArgs),
    /// Any supported agent's transcript (Claude Code, Codex, pi, Gemini CLI, Copilot CLI,
    /// `OpenCode`, Qwen Code, Kimi Code): compaction boundaries and token totals per generation,
    /// since the latest compaction and lifetime, through an index in the cache.
    Transcript(transcript::Args),
    /// Token usage and cost over every supported agent's transcripts found, each message
    /// counted once, by day, week, month, session, project, model, agent or 5-hour block.
    Usage(usage::Args),
    /// One line for Claude Code's statusLine setting, from the JSON it passes on stdin: model,
    /// context size, tokens since the latest compaction, the session's, today's and the active
    /// 5-hour block's totals and costs.
    Statusline(statusline::Args),
    /// The prices `usage` and `statusline` use (`LiteLLM`'s table: the embedded snapshot or
    /// `--pricing FILE`) and where they came from.
    Pricing(pricing::Args),
    /// A Model Context Protocol server on stdio: search, list and read sessions, usage and
    /// status as tools for an agent (`claude mcp add agentlog -- agentlog mcp`).
    #[cfg(feature = "mcp")]
    Mcp(mcp::Args),
    /// A local, read-only web viewer of sessions, search and usage (prints its address with
    /// an access token, then serves until interrupted).
    #[cfg(feature = "serve")]
    Serve(serve::Args),
    /// Keep every transcript line in a compressed, append-only archive in the data directory,
    /// so sessions the agents clean up still answer; list, verify or restore it.
    Archive(archive::Args),
}

/// `--tier` values.
#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum TierArg {
    /// The derived index.
    Index,
    /// A bounded read of the log's tail.
    ReverseScan,
    /// A read of the whole log.
    FullScan,
}

impl From<TierArg> for Tier {
    fn from(arg: TierArg) -> Tier {
        match arg {
            TierArg::Index => Tier::Index,
            TierArg::ReverseScan => Tier::ReverseScan,
            TierArg::FullScan => Tier::FullScan,
        }
    }
}

/// A failure to report: a stable code, an exit status, a message, and extra JSON fields.
pub struct Failure {
    pub code: &'static str,
    pub exit: u8,
    pub message: String,
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Failure {
    pub fn new(code: &'static str, exit: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            exit,
            message: message.into(),
            extra: serde_json::Map::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Failure {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// Adds the path the failure is about, as the `path` field.
    pub fn with_path(self, path: &std::path::Path) -> Failure {
        self.with("path", display(path))
    }
}

impl From<GenerationError> for Failure {
    fn from(error: GenerationError) -> Failure {
        let message = error.to_string();
        match error {
            GenerationError::NoLog { path } => {
                Failure::new("no_log", EXIT_NO_LOG, message).with_path(&path)
            }
            GenerationError::MoltMismatch {
                expected,
                found,
                boundary,
                tier,
            } => Failure::new("molt_mismatch", EXIT_MISMATCH, message)
                .with("expected", expected)
                .with("found", found)
                .with("boundary_offset", boundary.map(|b| b.offset))
                .with("tier", tier.as_str()),
            GenerationError::Manifest(_) => Failure::new("bad_manifest", EXIT_BAD_INPUT, message),
            GenerationError::Log(e) => Failure::from(e),
            GenerationError::Index(e) => Failure::from(e),
            _ => Failure::new("io_error", EXIT_FAILURE, message),
        }
    }
}

impl From<LogError> for Failure {
    fn from(error: LogError) -> Failure {
        let message = error.to_string();
        match error {
            LogError::NotFound { path } => {
                Failure::new("no_log", EXIT_NO_LOG, message).with_path(&path)
            }
            LogError::NotAFile { .. } => Failure::new("not_a_file", EXIT_FAILURE, message),
            LogError::Locked { .. } => Failure::new("locked", EXIT_FAILURE, message),
            LogError::InvalidEvent { .. } => Failure::new("invalid_event", EXIT_BAD_INPUT, message),
            _ => Failure::new("io_error", EXIT_FAILURE, message),
        }
    }
}

impl From<IndexError> for Failure {
    fn from(error: IndexError) -> Failure {
        match error {
            IndexError::Log(e) => Failure::from(e),
            other => Failure::new("index_error", EXIT_FAILURE, other.to_string()),
        }
    }
}

/// Writes to stdout for the `outln!` and `out!` macros: a closed pipe ends the process with exit 0
/// (the reader has what it wanted), any other write error with exit 1 and a message.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(i32::from(EXIT_OK));
        }
        eprintln!("agentlog: writing to stdout failed: {e}");
        std::process::exit(i32::from(EXIT_FAILURE));
    }
}

/// The failure for a write to stdout that failed: as for [`write_stdout`], a closed pipe ends the
/// process with exit 0 (the reader has gone), so it never returns for that error.
pub fn stdout_failure(e: &std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(i32::from(EXIT_OK));
    }
    Failure::new(
        "io_error",
        EXIT_FAILURE,
        format!("writing to stdout failed: {e}"),
    )
}

/// Writes a JSON document on stdout through `write`, buffered, then a newline: for documents
/// written straight out rather than built as a value first.
pub fn stream_json(
    write: impl FnOnce(&mut dyn std::io::Write) -> serde_json::Result<()>,
) -> Result<(), Failure> {
    use std::io::Write as _;
    let stdout = std::io::stdout().lock();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout);
    write(&mut out).map_err(|e| match e.io_error_kind() {
        Some(kind) => stdout_failure(&kind.into()),
        None => Failure::new("internal", EXIT_FAILURE, e.to_string()),
    })?;
    writeln!(out)
        .and_then(|()| out.flush())
        .map_err(|e| stdout_failure(&e))
}

/// Prints a JSON document on stdout.
pub fn print_json<T: Serialize>(value: &T) -> Result<(), Failure> {
    let text = serde_json::to_string(value)
        .map_err(|e| Failure::new("internal", EXIT_FAILURE, e.to_string()))?;
    outln!("{text}");
    Ok(())
}

fn report(failure: &Failure, json: bool) {
    if json {
        let mut object = serde_json::Map::new();
        object.insert("error".to_owned(), failure.code.into());
        object.insert("message".to_owned(), failure.message.clone().into());
        object.extend(failure.extra.clone());
        outln!("{}", serde_json::Value::Object(object));
    }
    eprintln!("agentlog: {}", failure.message);
}

/// Parses the arguments, runs the command, and maps the result to an exit status.
pub fn run() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTLOG_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .init();
    let cli = Cli::parse();
    let (result, json) = match cli.command {
        Command::Status(args) => (status::run(&args), args.json),
        Command::Generations(args) => (generations::run(&args), args.json),
        Command::Index(args) => (index::run(&args), args.json),
        Command::Verify(args) => (verify::run(&args), args.json),
        Command::Append(args) => (append::run(&args), false),
        Command::Demo(args) => (demo::run(&args), false),
        Command::Sessions(args) => (sessions::sessions(&args), args.json),
        Command::Events(args) => (sessions::events(&args), args.json),
        Command::Read(args) => (sessions::read(&args), args.json),
        Command::TraceSession(args) => (sessions::trace_session(&args), args.json),
        Command::TraceEvent(args) => (sessions::trace_event(&args), args.json),
        Command::Export(args) => (export::run(&args), args.json),
        Command::Search(args) => (search::run(&args), args.json),
        Command::Transcript(args) => (transcript::run(&args), args.json),
        Command::Usage(args) => (usage::run(&args), args.json),
        Command::Statusline(args) => (statusline::run(&args), args.json),
        Command::Pricing(args) => (pricing::run(&args), args.json),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => (mcp::run(&args), false),
        #[cfg(feature = "serve")]
        Command::Serve(args) => (serve::run(&args), args.json),
        Command::Archive(args) => (archive::run(&args), args.json),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            report(&failure, json);
            ExitCode::from(failure.exit)
        }
    }
}

/// The agent directory argument shared by the commands.
pub fn agent_paths(dir: &std::path::Path) -> agentlog::log::LogPaths {
    agentlog::log::LogPaths::for_agent_dir(dir)
}

/// A path argument as text for JSON.
pub fn display(path: &std::path::Path) -> String {
    path.display().to_string()
}
