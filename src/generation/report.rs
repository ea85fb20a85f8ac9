//! The machine-readable reports of the generation layer: the documents `agentlog status --json`
//! and `agentlog generations --json` print, and the Python binding returns. One definition, so
//! the CLI and the binding cannot drift apart.

use std::path::Path;

use serde::Serialize;

use super::{CurrentGeneration, Generation, SteppedAside, read_manifest_molt_count};
use crate::event::Diagnostics;
use crate::index::IndexOutcome;

/// Where the expected generation came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedFrom {
    /// The caller named it (`--molt-count`, `molt_count=`).
    Flag,
    /// The agent's `.agent.json`.
    Manifest,
}

/// The generation to expect for `agent_dir`: `given` if set, else the manifest's `molt_count`,
/// else `None` (the latest generation is then reported as found, unverified).
///
/// # Errors
///
/// The manifest exists but cannot be read or holds no valid `molt_count`.
pub fn expected_generation(
    agent_dir: &Path,
    given: Option<u64>,
) -> Result<Option<(u64, ExpectedFrom)>, super::ManifestError> {
    if let Some(n) = given {
        return Ok(Some((n, ExpectedFrom::Flag)));
    }
    Ok(read_manifest_molt_count(agent_dir)?.map(|n| (n, ExpectedFrom::Manifest)))
}

/// The `agentlog status --json` document: the current generation's totals and how they were
/// proved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatusReport {
    /// The agent directory as given.
    pub agent_dir: String,
    /// The tier that answered (`index`, `reverse_scan`, `full_scan`).
    pub tier: &'static str,
    /// The generation of the totals (see [`CurrentGeneration::molt_count`]).
    pub molt_count: Option<u64>,
    /// Whether the log proves the label.
    pub verified: bool,
    /// The generation asked for, if any.
    pub expected_molt_count: Option<u64>,
    /// Where that came from.
    pub expected_from: Option<ExpectedFrom>,
    /// Sum of `input_tokens` since the boundary (cached tokens included).
    pub input_tokens: u128,
    /// Sum of `output_tokens`.
    pub output_tokens: u128,
    /// Sum of `cached_tokens`.
    pub cached_tokens: u128,
    /// Sum of `thinking_tokens`.
    pub thinking_tokens: u128,
    /// Token events since the boundary.
    pub api_calls: u64,
    /// Byte offset of the boundary line; `None` for a log that never molted.
    pub boundary_offset: Option<u64>,
    /// `"agent"`, `"system"`, ... or `"boot"` without a boundary.
    pub boundary_initiator: String,
    /// The boundary's timestamp in seconds since the epoch, if readable.
    pub boundary_ts: Option<f64>,
    /// The boundary's own valid `molt_count`, if it has one.
    pub boundary_molt_count: Option<u64>,
    /// The stable code of what opening the index did (`fresh`, `caught_up`, ...), when the
    /// index was tried.
    pub index_outcome: Option<&'static str>,
    /// The same outcome with its details.
    pub index: Option<IndexOutcome>,
    /// Tiers that could not answer before the one that did, and why.
    pub stepped_aside: Vec<SteppedAside>,
    /// Bytes of the log the answering tier read.
    pub bytes_read: u64,
    /// Odd lines and values met.
    pub diagnostics: Diagnostics,
}

impl StatusReport {
    /// The report of `current`, answered for `agent_dir` with `expected` asked for.
    pub fn new(
        agent_dir: &Path,
        current: &CurrentGeneration,
        expected: Option<(u64, ExpectedFrom)>,
    ) -> StatusReport {
        let boundary = current.boundary.as_ref();
        StatusReport {
            agent_dir: agent_dir.display().to_string(),
            tier: current.tier.as_str(),
            molt_count: current.molt_count,
            verified: current.verified,
            expected_molt_count: expected.map(|(n, _)| n),
            expected_from: expected.map(|(_, from)| from),
            input_tokens: current.totals.input_tokens,
            output_tokens: current.totals.output_tokens,
            cached_tokens: current.totals.cached_tokens,
            thinking_tokens: current.totals.thinking_tokens,
            api_calls: current.totals.api_calls,
            boundary_offset: boundary.map(|b| b.offset),
            boundary_initiator: current.boundary_initiator().to_owned(),
            boundary_ts: boundary
                .and_then(|b| b.time)
                .map(crate::event::Timestamp::as_seconds),
            boundary_molt_count: boundary.and_then(|b| b.molt_count.value()),
            index_outcome: current.index_outcome.as_ref().map(IndexOutcome::code),
            index: current.index_outcome.clone(),
            stepped_aside: current.stepped_aside.clone(),
            bytes_read: current.bytes_read,
            diagnostics: current.diagnostics.clone(),
        }
    }
}

/// One row of `agentlog generations --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GenerationRow {
    /// 0 for the part before the first boundary, then 1, 2, ... in file order.
    pub generation: u64,
    /// The generation number (see [`Generation::molt_count`]).
    pub molt_count: Option<u64>,
    /// Byte offset of the boundary that starts it (`None` for the boot generation).
    pub boundary_offset: Option<u64>,
    /// `"boot"`, or the boundary's initiator.
    pub boundary_initiator: String,
    /// The boundary's timestamp in seconds since the epoch, if readable.
    pub boundary_ts: Option<f64>,
    /// Sum of `input_tokens`.
    pub input_tokens: u128,
    /// Sum of `output_tokens`.
    pub output_tokens: u128,
    /// Sum of `cached_tokens`.
    pub cached_tokens: u128,
    /// Sum of `thinking_tokens`.
    pub thinking_tokens: u128,
    /// Token events.
    pub api_calls: u64,
}

impl From<&Generation> for GenerationRow {
    fn from(g: &Generation) -> GenerationRow {
        let boundary = g.boundary.as_ref();
        GenerationRow {
            generation: g.ordinal,
            molt_count: g.molt_count,
            boundary_offset: boundary.map(|b| b.offset),
            boundary_initiator: g.initiator().to_owned(),
            boundary_ts: boundary
                .and_then(|b| b.time)
                .map(crate::event::Timestamp::as_seconds),
            input_tokens: g.totals.input_tokens,
            output_tokens: g.totals.output_tokens,
            cached_tokens: g.totals.cached_tokens,
            thinking_tokens: g.totals.thinking_tokens,
            api_calls: g.totals.api_calls,
        }
    }
}
