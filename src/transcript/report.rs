//! The answer for one transcript: [`TranscriptReport`], what `agentlog transcript --json`
//! prints and the Python binding returns, built by [`report`] from an opened transcript or by
//! [`read_report`] from a path.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::ser::Serializer;

use super::error::TranscriptError;
use super::fold::{CompactionBoundary, TranscriptDiagnostics};
use super::format::Format;
use super::native::{NativeValue, native};
use super::store::{OpenOptions, Transcript, open};
use super::subagents::{WithSubagents, with_subagents};
use super::tally::Tally;
use crate::index::IndexOutcome;

/// A tally with the same figures in its format's own names: in JSON the tally's fields (the
/// normalised ones, docs/TRANSCRIPTS.md, "Usage fields") and `native`, an object of the
/// format's names (Claude Code `input_tokens`, `cache_read_input_tokens`, ...; Codex
/// `input_tokens` with the cached input in it, `cached_input_tokens`, ...; pi `input`,
/// `cacheRead`, `cost_total`, ...).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UsageFigures {
    /// The tally.
    #[serde(flatten)]
    pub tally: Tally,
    /// The same figures in the format's own names, in its order.
    #[serde(serialize_with = "as_map")]
    pub native: Vec<(&'static str, NativeValue)>,
}

impl UsageFigures {
    /// A tally of a `format` transcript with its native figures.
    pub fn new(format: Format, tally: Tally) -> UsageFigures {
        UsageFigures {
            native: native(format, &tally),
            tally,
        }
    }
}

// The signature serde's `serialize_with` asks for.
#[allow(clippy::ptr_arg)]
fn as_map<S: Serializer>(
    fields: &Vec<(&'static str, NativeValue)>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(fields.iter().map(|(name, value)| (name, value)))
}

fn display<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&path.display())
}

// The signature serde's `serialize_with` asks for.
#[allow(clippy::ref_option)]
fn display_some<S: Serializer>(path: &Option<PathBuf>, serializer: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(p) => display(p, serializer),
        None => serializer.serialize_none(),
    }
}

/// A generation: where it starts and what it adds up to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GenerationReport {
    /// The offset of the boundary that starts it (0 for the first).
    pub offset: u64,
    /// Its usage.
    pub usage: UsageFigures,
}

/// A subagent transcript of a session, as `--subagents` reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubagentReport {
    /// Its path.
    #[serde(serialize_with = "display")]
    pub path: PathBuf,
    /// Its own lifetime, if it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<UsageFigures>,
    /// What opening its index did ([`IndexOutcome::code`]), if it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_outcome: Option<&'static str>,
    /// Why it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a transcript adds up to: `agentlog transcript FILE --json` (docs/TRANSCRIPTS.md, "The
/// answer").
#[derive(Clone, Debug, Serialize)]
pub struct TranscriptReport {
    /// The agent that wrote it: its format's name, as `usage` rows and `--agent` name it.
    pub agent: Format,
    /// The compaction boundaries, in file order.
    pub boundaries: Vec<CompactionBoundary>,
    /// The end of the complete lines the answer covers.
    pub covered_bytes: u64,
    /// What was odd about the lines.
    pub diagnostics: TranscriptDiagnostics,
    /// The format it was read as.
    pub format: Format,
    /// The archived version read, when the file is gone or shorter and the archive answered
    /// (its copy in the cache directory is `index_path`'s transcript); `null` otherwise.
    pub from_archive: Option<u32>,
    /// Each generation: one more than there are boundaries.
    pub generations: Vec<GenerationReport>,
    /// What opening the index found and did.
    pub index: IndexOutcome,
    /// Its short name (`fresh`, `caught_up`, `created`, `rebuilt`, `read_only`).
    pub index_outcome: &'static str,
    /// The index file used, if any.
    #[serde(serialize_with = "display_some")]
    pub index_path: Option<PathBuf>,
    /// The usage of every generation.
    pub lifetime: UsageFigures,
    /// With subagents: the session's lifetime and its subagents', each message once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime_with_subagents: Option<UsageFigures>,
    /// Complete lines read.
    pub lines: u64,
    /// Model names seen.
    pub models: Vec<String>,
    /// The transcript's canonical path.
    #[serde(serialize_with = "display")]
    pub path: PathBuf,
    /// The usage of the last generation.
    pub since_compaction: UsageFigures,
    /// With subagents: each subagent file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagents: Option<Vec<SubagentReport>>,
}

/// The report of an opened transcript, with its subagents' when given.
pub fn report(t: &Transcript, subagents: Option<&WithSubagents>) -> TranscriptReport {
    let (format, s) = (t.format, &t.summary);
    let figures = |tally: Tally| UsageFigures::new(format, tally);
    let generations = s
        .generations
        .iter()
        .enumerate()
        .map(|(i, g)| GenerationReport {
            offset: i
                .checked_sub(1)
                .and_then(|b| s.boundaries.get(b))
                .map_or(0, |b| b.offset),
            usage: figures(*g),
        })
        .collect();
    let files = subagents.map(|found| {
        found
            .subagents
            .iter()
            .map(|sub| match &sub.read {
                Ok(read) => SubagentReport {
                    path: sub.path.clone(),
                    lifetime: Some(figures(read.summary.lifetime)),
                    index_outcome: Some(read.outcome.code()),
                    error: None,
                },
                Err(e) => SubagentReport {
                    path: sub.path.clone(),
                    lifetime: None,
                    index_outcome: None,
                    error: Some(e.to_string()),
                },
            })
            .collect()
    });
    TranscriptReport {
        agent: format,
        boundaries: s.boundaries.clone(),
        covered_bytes: t.coverage.end,
        diagnostics: s.diagnostics.clone(),
        format,
        from_archive: None,
        generations,
        index: t.outcome.clone(),
        index_outcome: t.outcome.code(),
        index_path: t.index.clone(),
        lifetime: figures(s.lifetime),
        lifetime_with_subagents: subagents.map(|found| figures(found.lifetime)),
        lines: s.lines,
        models: s.models.clone(),
        path: t.path.clone(),
        since_compaction: figures(s.since_compaction()),
        subagents: files,
    }
}

/// How [`read_report`] reads a transcript.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// How the transcript is opened.
    pub open: OpenOptions,
    /// Also count its subagent transcripts (Claude Code only).
    pub subagents: bool,
}

/// Why [`read_report`] gives no report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The transcript could not be read.
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    /// Subagents were asked of a transcript whose format has none (only Claude Code's has).
    #[error("subagents apply to Claude Code transcripts; {} is {format}", path.display())]
    NoSubagents {
        /// The transcript.
        path: PathBuf,
        /// Its format.
        format: Format,
    },
}

/// Reads a transcript through its index (with its subagents when asked) and reports it.
pub fn read_report(path: &Path, options: &ReportOptions) -> Result<TranscriptReport, ReportError> {
    if !options.subagents {
        return Ok(report(&open(path, &options.open)?, None));
    }
    let found = with_subagents(path, &options.open)?;
    if found.main.format != Format::ClaudeCode {
        return Err(ReportError::NoSubagents {
            path: found.main.path.clone(),
            format: found.main.format,
        });
    }
    Ok(report(&found.main, Some(&found)))
}
