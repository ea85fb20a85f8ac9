//! Generations: "how many tokens has this agent used since its last molt?", answered by the
//! index in O(1), or by a bounded reverse scan, or by a full scan, with the same validation in
//! every tier.
//!
//! The answer is labelled with a generation only if the log proves it: the latest boundary (in
//! file order) carries the expected `molt_count`, or there is no boundary and the expected count
//! is 0. Otherwise the caller gets a typed [`GenerationError::MoltMismatch`] saying what was found,
//! never another generation's totals under its label, as the reference implementation's scan
//! tiers give (docs/TOKENS.md, "The labelling rule").

mod manifest;
mod report;
mod scan;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use manifest::{ManifestError, read_manifest_molt_count};
pub use report::{ExpectedFrom, GenerationRow, StatusReport, expected_generation};
pub use scan::{GenerationView, full_scan, reverse_scan};

use crate::event::{Boundary, Diagnostics, FoldState, GenerationStart, MoltCount, Totals};
use crate::index::{Index, IndexError, IndexOptions, IndexOutcome, StatusAnswer, status_answer};
use crate::log::{LogError, LogPaths, open_for_read};

/// The default bound of the reverse scan: the last 8 MiB of the log.
pub const DEFAULT_REVERSE_SCAN_BYTES: u64 = 8 << 20;

/// Who answers a question about generations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// The derived index: O(1) after validation.
    Index,
    /// A bounded read of the log's tail.
    ReverseScan,
    /// A read of the whole log.
    FullScan,
}

impl Tier {
    /// The stable name (`index`, `reverse_scan`, `full_scan`).
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Index => "index",
            Tier::ReverseScan => "reverse_scan",
            Tier::FullScan => "full_scan",
        }
    }

    /// Parses a stable name.
    pub fn parse(name: &str) -> Option<Tier> {
        match name {
            "index" => Some(Tier::Index),
            "reverse_scan" => Some(Tier::ReverseScan),
            "full_scan" => Some(Tier::FullScan),
            _ => None,
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tier that could not answer, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SteppedAside {
    /// The tier.
    pub tier: Tier,
    /// Why it stepped aside.
    pub reason: String,
}

/// What to ask, and how.
#[derive(Clone, Debug)]
pub struct GenerationRequest {
    /// The generation the caller believes is current (from its manifest). `None` asks for the
    /// latest generation as found, which is then reported as unverified.
    pub expected_molt_count: Option<u64>,
    /// Accept a latest boundary that carries no valid `molt_count` (a legacy boundary) as
    /// the expected generation. Off by default: such a boundary proves nothing.
    pub trust_unverifiable_boundaries: bool,
    /// The first tier to try; lower tiers are tried when it cannot answer.
    pub start_tier: Tier,
    /// How many tail bytes the reverse scan reads.
    pub reverse_scan_bytes: u64,
    /// How the log is read and indexed.
    pub index: IndexOptions,
}

impl GenerationRequest {
    /// Asks for generation `molt_count`.
    pub fn expecting(molt_count: u64) -> GenerationRequest {
        GenerationRequest {
            expected_molt_count: Some(molt_count),
            ..GenerationRequest::latest()
        }
    }

    /// Asks for the latest generation as found (unverified).
    pub fn latest() -> GenerationRequest {
        GenerationRequest {
            expected_molt_count: None,
            trust_unverifiable_boundaries: false,
            start_tier: Tier::Index,
            reverse_scan_bytes: DEFAULT_REVERSE_SCAN_BYTES,
            index: IndexOptions::default(),
        }
    }
}

/// The current generation's totals, and who proved them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CurrentGeneration {
    /// The generation these totals belong to: the expected count when verified (or trusted),
    /// else the latest boundary's count as found (`None` if it has none).
    pub molt_count: Option<u64>,
    /// Whether the log proves the label: the latest boundary carries the expected count, or
    /// there is none and 0 was expected.
    pub verified: bool,
    /// Token totals and API calls since the boundary.
    pub totals: Totals,
    /// The boundary that starts the generation; `None` for a log that never molted.
    pub boundary: Option<Boundary>,
    /// Which tier answered.
    pub tier: Tier,
    /// Tiers tried before it, and why they could not answer.
    pub stepped_aside: Vec<SteppedAside>,
    /// What opening the index found and did, when the index was tried.
    pub index_outcome: Option<IndexOutcome>,
    /// Bytes of the log the answering tier read: the two validation windows plus any bytes
    /// caught up for the index, the tail window for the reverse scan, everything for the full
    /// scan.
    pub bytes_read: u64,
    /// Odd lines and values among them.
    pub diagnostics: Diagnostics,
}

impl CurrentGeneration {
    /// `"agent"`, `"system"`, ... for a boundary; `"boot"` when the log never molted.
    pub fn boundary_initiator(&self) -> &str {
        self.boundary
            .as_ref()
            .map_or("boot", |b| b.initiator.as_str())
    }
}

/// Errors of the generation layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenerationError {
    /// There is no log to answer from.
    #[error("no log at {path}")]
    NoLog {
        /// The log path.
        path: PathBuf,
    },
    /// The log does not prove the expected generation: its latest boundary carries another
    /// `molt_count` (`found`), or none that can be verified (`found: None`), or there is no
    /// boundary but a generation above 0 was expected. Typical causes: the manifest was bumped
    /// but the crash came before the boundary was appended; a stale manifest; another agent's
    /// log.
    #[error("molt_count mismatch: expected {expected}, {}", describe_found(*.found, .boundary.as_ref()))]
    MoltMismatch {
        /// The generation asked for.
        expected: u64,
        /// The latest boundary's valid `molt_count`, if it has one.
        found: Option<u64>,
        /// The latest boundary, if any.
        boundary: Option<Boundary>,
        /// The tier that found it.
        tier: Tier,
    },
    /// The agent's `.agent.json` cannot be used.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The log cannot be read.
    #[error(transparent)]
    Log(#[from] LogError),
    /// Reading the log failed part way.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The log path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The index failed in a way no lower tier can step around.
    #[error(transparent)]
    Index(#[from] IndexError),
}

fn describe_found(found: Option<u64>, boundary: Option<&Boundary>) -> String {
    match (found, boundary) {
        (Some(found), _) => format!("the log's latest boundary says {found}"),
        (None, Some(b)) => format!(
            "the log's latest boundary (offset {}) carries no valid molt_count",
            b.offset
        ),
        (None, None) => "the log has no boundary".to_owned(),
    }
}

/// Labels a tier's view with a generation, or refuses: the one rule every tier applies.
pub fn label(
    view: GenerationView,
    request: &GenerationRequest,
    tier: Tier,
) -> Result<CurrentGeneration, GenerationError> {
    let (molt_count, verified) = match (request.expected_molt_count, &view.boundary) {
        (None, None) => (Some(0), false),
        (None, Some(b)) => (b.molt_count.value(), false),
        (Some(0), None) => (Some(0), true),
        (Some(expected), None) => {
            return Err(GenerationError::MoltMismatch {
                expected,
                found: None,
                boundary: None,
                tier,
            });
        }
        (Some(expected), Some(b)) => match b.molt_count {
            MoltCount::Valid(found) if found == expected => (Some(expected), true),
            MoltCount::Missing | MoltCount::Invalid if request.trust_unverifiable_boundaries => {
                (Some(expected), false)
            }
            other => {
                return Err(GenerationError::MoltMismatch {
                    expected,
                    found: other.value(),
                    boundary: Some(b.clone()),
                    tier,
                });
            }
        },
    };
    Ok(CurrentGeneration {
        molt_count,
        verified,
        totals: view.since,
        boundary: view.boundary,
        tier,
        stepped_aside: Vec::new(),
        index_outcome: None,
        bytes_read: view.bytes_read,
        diagnostics: view.diagnostics,
    })
}

/// Answers from the state of an in-process [`Writer`](crate::index::Writer): O(1).
pub fn from_state(
    state: &FoldState,
    request: &GenerationRequest,
) -> Result<CurrentGeneration, GenerationError> {
    label(GenerationView::from_state(state), request, Tier::Index)
}

/// The totals of the expected generation of the agent in `agent_dir`
/// (`agent_dir/logs/events.jsonl`). See [`current_generation_at`].
pub fn current_generation(
    agent_dir: impl AsRef<Path>,
    request: &GenerationRequest,
) -> Result<CurrentGeneration, GenerationError> {
    current_generation_at(&LogPaths::for_agent_dir(agent_dir), request)
}

/// The totals of the expected generation of the log at `paths`: tries the tiers from
/// `request.start_tier` down until one can answer, and labels the answer by the one rule.
pub fn current_generation_at(
    paths: &LogPaths,
    request: &GenerationRequest,
) -> Result<CurrentGeneration, GenerationError> {
    let mut stepped_aside = Vec::new();
    let mut index_outcome = None;
    let mut answer = None;
    if request.start_tier <= Tier::Index {
        if let Some(StatusAnswer { state, bytes_read }) = status_answer(paths, &request.index) {
            // The index's fresh open, without redb: the same checks, the same answer.
            let mut view = GenerationView::from_state(&state);
            view.bytes_read = bytes_read;
            let mut current = label(view, request, Tier::Index)?;
            current.index_outcome = Some(IndexOutcome::Fresh);
            tracing::debug!(tier = %current.tier, api_calls = current.totals.api_calls, "current generation answered from the status file");
            return Ok(current);
        }
        match Index::open(paths, &request.index) {
            Ok(index) => {
                index.publish_status();
                index_outcome = Some(index.outcome().clone());
                let mut view = GenerationView::from_state(index.state());
                view.bytes_read = index.bytes_read();
                answer = Some((Tier::Index, view));
            }
            Err(e) => stepped_aside.push(step_aside(Tier::Index, e, &paths.log)?),
        }
    }
    if answer.is_none() && request.start_tier <= Tier::ReverseScan {
        let log = open_log(&paths.log)?;
        let extractor = request.index.extractor();
        match reverse_scan(
            &log,
            request.reverse_scan_bytes,
            &extractor,
            request.index.max_line,
        ) {
            Ok(Some(view)) => answer = Some((Tier::ReverseScan, view)),
            Ok(None) => stepped_aside.push(SteppedAside {
                tier: Tier::ReverseScan,
                reason: format!(
                    "no boundary in the last {} bytes; a full scan is needed",
                    request.reverse_scan_bytes
                ),
            }),
            Err(e) => stepped_aside.push(SteppedAside {
                tier: Tier::ReverseScan,
                reason: e.to_string(),
            }),
        }
    }
    let (tier, view) = if let Some(found) = answer {
        found
    } else {
        let log = open_log(&paths.log)?;
        let state = full_scan(&log, request.index.extractor(), request.index.max_line).map_err(
            |source| GenerationError::Read {
                path: paths.log.clone(),
                source,
            },
        )?;
        (Tier::FullScan, GenerationView::from_state(&state))
    };
    for step in &stepped_aside {
        tracing::info!(tier = %step.tier, reason = %step.reason, "tier stepped aside");
    }
    let mut current = label(view, request, tier)?;
    current.stepped_aside = stepped_aside;
    current.index_outcome = index_outcome;
    tracing::debug!(tier = %current.tier, api_calls = current.totals.api_calls, "current generation answered");
    Ok(current)
}

fn open_log(path: &Path) -> Result<std::fs::File, GenerationError> {
    open_for_read(path).map_err(|e| match e {
        LogError::NotFound { path } => GenerationError::NoLog { path },
        other => GenerationError::Log(other),
    })
}

/// Turns an index failure into a step-aside, unless no lower tier could do better (the log
/// itself is missing or unreadable).
fn step_aside(tier: Tier, error: IndexError, log: &Path) -> Result<SteppedAside, GenerationError> {
    match error {
        IndexError::Log(LogError::NotFound { .. }) => Err(GenerationError::NoLog {
            path: log.to_path_buf(),
        }),
        IndexError::Log(e) => Err(GenerationError::Log(e)),
        other => Ok(SteppedAside {
            tier,
            reason: other.to_string(),
        }),
    }
}

/// One generation of a log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Generation {
    /// 0 for the part before the first boundary, then 1, 2, ... in file order.
    pub ordinal: u64,
    /// The generation number: 0 for the boot generation, else the boundary's valid
    /// `molt_count` (`None` if it has none).
    pub molt_count: Option<u64>,
    /// The boundary that starts it (`None` for the boot generation).
    pub boundary: Option<Boundary>,
    /// Its token totals and API calls.
    pub totals: Totals,
}

impl Generation {
    /// `"boot"` for the boot generation, else the boundary's initiator.
    pub fn initiator(&self) -> &str {
        self.boundary
            .as_ref()
            .map_or("boot", |b| b.initiator.as_str())
    }
}

/// Every generation of a log, oldest first, and the lifetime totals.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Generations {
    /// One entry per generation; the boot generation (before any boundary) is always first.
    pub generations: Vec<Generation>,
    /// Totals over the whole log (the sum of the generations).
    pub lifetime: Totals,
    /// Which tier answered (index or full scan).
    pub tier: Tier,
    /// Tiers tried before it, and why they could not answer.
    pub stepped_aside: Vec<SteppedAside>,
    /// What opening the index found and did, when the index was tried.
    pub index_outcome: Option<IndexOutcome>,
}

/// Splits the totals at each boundary: O(generations).
pub fn split_generations(starts: &[GenerationStart], lifetime: Totals) -> Vec<Generation> {
    let mut out = Vec::with_capacity(starts.len() + 1);
    let mut previous = Totals::default();
    let mut current: Option<&GenerationStart> = None;
    for start in starts.iter().map(Some).chain(std::iter::once(None)) {
        let end = start.map_or(lifetime, |s| s.totals_before);
        out.push(Generation {
            ordinal: current.map_or(0, |c| c.ordinal),
            molt_count: current.map_or(Some(0), |c| c.boundary.molt_count.value()),
            boundary: current.map(|c| c.boundary.clone()),
            totals: end.since(&previous),
        });
        previous = end;
        current = start;
    }
    out
}

/// Every generation of the log at `paths`, from the index, else a full scan.
pub fn generations_at(
    paths: &LogPaths,
    request: &GenerationRequest,
) -> Result<Generations, GenerationError> {
    let mut stepped_aside = Vec::new();
    if request.start_tier <= Tier::Index {
        match Index::open(paths, &request.index).and_then(|index| {
            let starts = index.boundaries()?;
            Ok((starts, index.state().totals, index.outcome().clone()))
        }) {
            Ok((starts, lifetime, outcome)) => {
                return Ok(Generations {
                    generations: split_generations(&starts, lifetime),
                    lifetime,
                    tier: Tier::Index,
                    stepped_aside,
                    index_outcome: Some(outcome),
                });
            }
            Err(e) => stepped_aside.push(step_aside(Tier::Index, e, &paths.log)?),
        }
    }
    let log = open_log(&paths.log)?;
    let (starts, lifetime) =
        full_scan_boundaries(&log, &request.index).map_err(|source| GenerationError::Read {
            path: paths.log.clone(),
            source,
        })?;
    Ok(Generations {
        generations: split_generations(&starts, lifetime),
        lifetime,
        tier: Tier::FullScan,
        stepped_aside,
        index_outcome: None,
    })
}

/// A full scan that keeps every boundary; returns them and the lifetime totals.
pub fn full_scan_boundaries(
    log: &std::fs::File,
    options: &IndexOptions,
) -> std::io::Result<(Vec<GenerationStart>, Totals)> {
    use crate::event::{EventKind, Folded, Folder};
    use crate::log::Line;
    let mut folder = Folder::new(options.extractor(), FoldState::default());
    let mut starts = Vec::new();
    scan::scan_whole(log, options.max_line, |line| match line {
        Line::TooLong { offset, len } => folder.fold_too_long(offset, len),
        Line::Complete { offset, bytes } => {
            if let Folded::Event(e) = folder.fold_line(offset, bytes)
                && e.kind == EventKind::Boundary
            {
                starts.extend(folder.state().latest.clone());
            }
        }
    })?;
    Ok((starts, folder.state().totals))
}
