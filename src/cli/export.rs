//! `agentlog export SOURCE... --out DIR`: Parquet datasets for DuckDB, Spark and Trino.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use agentlog::export::{
    CompactReport, ExportError, ExportOptions, ExportReport, compact, default_host, export,
};

use super::cache::{CacheArgs, archived_copies};
use super::table::thousands;
use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_NO_LOG, EXIT_OK, Failure, print_json};

#[derive(clap::Args)]
pub struct Args {
    /// Agent directories, session stores, transcript files or directories.
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    /// The dataset directory (events/, generations/, sessions/ beneath it).
    #[arg(long)]
    out: PathBuf,
    /// The host column and the host part of file names (default: this machine's name).
    #[arg(long)]
    host: Option<String>,
    /// Leave the events' JSON text out (the json column is null).
    #[arg(long)]
    no_json_text: bool,
    #[command(flatten)]
    cache: CacheArgs,
    /// Then merge each source's small event parts of a date into one file.
    #[arg(long)]
    compact: bool,
    /// Print what was written as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Crash tests: abort at this file-system step.
    #[cfg(feature = "testing")]
    #[arg(long, hide = true)]
    abort_at_step: Option<u64>,
}

/// Only exports reading this much log get a progress bar.
const PROGRESS_FROM_BYTES: u64 = 64 << 20;

#[derive(Serialize)]
struct Output<'a> {
    #[serde(flatten)]
    export: &'a ExportReport,
    compact: Option<&'a CompactReport>,
    seconds: f64,
}

impl From<ExportError> for Failure {
    fn from(error: ExportError) -> Failure {
        let message = error.to_string();
        match error {
            ExportError::NoSource { path } => {
                Failure::new("no_source", EXIT_NO_LOG, message).with_path(&path)
            }
            ExportError::NotASource { path, .. } => {
                Failure::new("not_a_source", EXIT_BAD_INPUT, message).with_path(&path)
            }
            ExportError::Unsupported { path, .. } => {
                Failure::new("unsupported_source", EXIT_BAD_INPUT, message).with_path(&path)
            }
            ExportError::InvalidHost { .. } => Failure::new("bad_host", EXIT_BAD_INPUT, message),
            ExportError::Locked { .. } => Failure::new("locked", EXIT_FAILURE, message),
            ExportError::Changed { .. } => Failure::new("log_changed", EXIT_FAILURE, message),
            ExportError::Transcript { path, .. } => {
                Failure::new("transcript_unreadable", EXIT_FAILURE, message).with_path(&path)
            }
            ExportError::Log(e) => Failure::from(e),
            _ => Failure::new("io_error", EXIT_FAILURE, message),
        }
    }
}

pub fn run(args: &Args) -> Result<u8, Failure> {
    let started = Instant::now();
    let options = ExportOptions {
        out: args.out.clone(),
        host: args.host.clone().unwrap_or_else(default_host),
        json_text: !args.no_json_text,
        transcript_index_dir: args.cache.index_dir.clone(),
        #[cfg(feature = "testing")]
        abort_at_step: args.abort_at_step,
        #[cfg(feature = "testing")]
        fail_at_step: None,
    };
    let terminal = std::io::stderr().is_terminal();
    let mut bar: Option<ProgressBar> = None;
    let sources = with_archive(args);
    let report = export(&sources, &options, &mut |progress| {
        if !terminal || progress.total < PROGRESS_FROM_BYTES {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::new(progress.total);
            if let Ok(style) = ProgressStyle::with_template(
                "exporting {bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            ) {
                bar.set_style(style);
            }
            bar
        });
        bar.set_position(progress.done);
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = report?;
    let compacted = if args.compact {
        let compact_options = ExportOptions {
            // The crash tests count steps across the export and the compaction.
            #[cfg(feature = "testing")]
            abort_at_step: args.abort_at_step.map(|k| k.saturating_sub(report.steps)),
            ..options
        };
        Some(compact(&sources, &compact_options)?)
    } else {
        None
    };
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        print_json(&Output {
            export: &report,
            compact: compacted.as_ref(),
            seconds,
        })?;
        return Ok(EXIT_OK);
    }
    for source in &report.sources {
        let why = source
            .reason
            .as_deref()
            .map_or_else(String::new, |r| format!(" ({r})"));
        outln!(
            "{} {}: {}{}, {} rows, {} files",
            source.kind,
            source.source_id,
            source.action,
            why,
            thousands(source.rows),
            source.files.len()
        );
    }
    outln!(
        "exported {} rows ({} bytes of log) into {} files, {} bytes of Parquet, in {:.3} s",
        thousands(report.rows),
        thousands(report.log_bytes),
        report.files,
        thousands(report.bytes),
        seconds
    );
    if let Some(c) = &compacted {
        outln!("compacted {} small parts into {} files", c.merged, c.files);
    }
    Ok(EXIT_OK)
}

/// The sources with the archive's copies of the transcripts under them whose files are gone
/// (a source that is gone is replaced by them); the sources alone with --no-archive or when
/// the archive cannot be read.
fn with_archive(args: &Args) -> Vec<PathBuf> {
    if args.cache.no_archive {
        return args.sources.clone();
    }
    let mut out = Vec::new();
    for source in &args.sources {
        let copies = archived_copies(
            std::slice::from_ref(source),
            args.cache.index_dir.as_deref(),
            "read",
        );
        if source.exists() || copies.is_empty() {
            out.push(source.clone());
        }
        out.extend(copies.into_iter().map(|c| c.copy));
    }
    out
}
