//! Usage reports over many transcripts: every file read through its own index, a message
//! present in several files counted once, the tallies grouped by day, week, month, session,
//! project, model or billing block, and priced. The rules: docs/TRANSCRIPTS.md, "Usage over
//! many transcripts", and docs/COST.md.

mod args;
mod blocks;
mod files;
mod group;
mod live;
pub(crate) mod merge;
mod run;
mod zone;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

pub use args::{
    UsageArgError, parse_agent, parse_cost_mode, parse_day, parse_group_by, parse_timezone,
};
pub use blocks::{BLOCK_SECONDS, Block, BurnRate, Projection};
pub(crate) use blocks::{Slot, blocks};
pub use files::{
    default_roots, discover, discover_lines, read_by_lines, roots_or_default, session_of,
};
pub(crate) use files::{path_order, sort_paths};
pub(crate) use group::Grouper;
pub use group::{day_in, day_of};
pub use live::{LiveView, live, live_with};
use merge::read_and_merge;
pub(crate) use run::usage_of_files_noting;
pub use run::{usage, usage_of_files};
pub use zone::{system_zone, zone_named};

use super::error::TranscriptError;
use super::format::Format;
use super::opencode;
use super::price::{CostMode, PriceSource, PriceTable, RowCost};
use super::store::OpenOptions;
use super::tally::Tally;

/// Usage read beside the line transcripts (`OpenCode`'s sessions), added to the rows.
pub(crate) type Extra<'a> = &'a [opencode::SessionUsage];

/// How a usage report groups its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroupBy {
    /// By day in the report's zone (`YYYY-MM-DD`; `unknown` for usage without a readable
    /// timestamp).
    #[default]
    Day,
    /// By ISO week in the report's zone, named by its Monday (`YYYY-MM-DD`).
    Week,
    /// By month in the report's zone (`YYYY-MM`).
    Month,
    /// By 5-hour billing block (docs/COST.md, "Billing blocks"), named by its start (RFC 3339).
    Block,
    /// By session: a transcript and its subagent transcripts.
    Session,
    /// By project: the directory the session files sit in.
    Project,
    /// By model name (`unknown` for usage without one).
    Model,
    /// By agent: the [`Format`] name of the transcripts (`claude-code`, `codex`, ...).
    Agent,
}

impl GroupBy {
    /// The name used on the command line and in JSON (`day`, `week`, `month`, `session`,
    /// `project`, `model`, `block`, `agent`): a row's key is under this name.
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Day => "day",
            GroupBy::Week => "week",
            GroupBy::Month => "month",
            GroupBy::Block => "block",
            GroupBy::Session => "session",
            GroupBy::Project => "project",
            GroupBy::Model => "model",
            GroupBy::Agent => "agent",
        }
    }
}

impl GroupBy {
    /// Every grouping.
    pub const ALL: [GroupBy; 8] = [
        GroupBy::Day,
        GroupBy::Week,
        GroupBy::Month,
        GroupBy::Block,
        GroupBy::Session,
        GroupBy::Project,
        GroupBy::Model,
        GroupBy::Agent,
    ];
}

/// A grouping name that is not one of [`GroupBy::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown grouping {0:?} (expected one of: {names})", names = GroupBy::ALL.map(GroupBy::name).join(", "))]
pub struct UnknownGroupBy(pub String);

impl std::str::FromStr for GroupBy {
    type Err = UnknownGroupBy;

    fn from_str(s: &str) -> Result<GroupBy, UnknownGroupBy> {
        GroupBy::ALL
            .into_iter()
            .find(|g| g.name() == s)
            .ok_or_else(|| UnknownGroupBy(s.to_owned()))
    }
}

impl Serialize for GroupBy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// What a usage report reads and how it groups it.
#[derive(Clone, Debug)]
pub struct UsageOptions {
    /// How each transcript is opened (index directory, format); `load_dedup` is set for it.
    pub open: OpenOptions,
    /// How rows are grouped.
    pub by: GroupBy,
    /// Only the usage of these agents (every agent when empty).
    pub agents: Vec<Format>,
    /// Only usage on or after this day (in `timezone`).
    pub since: Option<Date>,
    /// Only usage on or before this day (in `timezone`).
    pub until: Option<Date>,
    /// The zone days, weeks and months are cut in (default: the system's, from `TZ` or
    /// `/etc/localtime`).
    pub timezone: TimeZone,
    /// Which cost rows show.
    pub cost: CostMode,
    /// The prices (default: the embedded snapshot).
    pub prices: Arc<PriceTable>,
    /// The time blocks are judged active at (default: now).
    pub now: Option<Timestamp>,
    /// How many files are read at once (0: one per core).
    pub threads: usize,
    /// Answer from (and keep) the run-level snapshot in the index directory (default); without
    /// it every file's index is opened.
    pub snapshot: bool,
    /// Also split each row by model: [`UsageReport::by_model`] (not for session or block
    /// rows). What a chart stacked by model draws.
    pub split_by_model: bool,
}

impl Default for UsageOptions {
    fn default() -> UsageOptions {
        UsageOptions {
            open: OpenOptions::default(),
            by: GroupBy::Day,
            agents: Vec::new(),
            since: None,
            until: None,
            timezone: system_zone(),
            cost: CostMode::Auto,
            prices: PriceTable::embedded(),
            now: None,
            threads: 0,
            snapshot: true,
            split_by_model: false,
        }
    }
}

/// One row of a usage report: a group and what it adds up to. In JSON the key is under the
/// name of the grouping (`day`, `week`, `month`, `session`, `project`, `model`, `block`,
/// `agent`), with `agent` (the agents whose usage the row sums: one name, or several
/// comma-separated in name order), the tally's fields, the cost's (`cost_usd`, `models`,
/// `unpriced_models`) and a block's beside it.
#[derive(Clone, Debug, PartialEq)]
pub struct UsageRow {
    /// How the report groups.
    pub by: GroupBy,
    /// The group: a day, a week's Monday, a month, a session id, a project, a model name, or a
    /// block's start.
    pub key: String,
    /// The project of a session row.
    pub project: Option<String>,
    /// The agents whose usage the row sums, in name order, each once.
    pub agents: Vec<Format>,
    /// What the group adds up to.
    pub tally: Tally,
    /// What it cost.
    pub cost: RowCost,
    /// A block row's times and pace.
    pub block: Option<Block>,
    /// The end of the last quarter-hour with usage in the row (`null` when unknown).
    pub last_activity: Option<Timestamp>,
}

impl Serialize for UsageRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// The row's key under the grouping's name.
        struct Key<'a>(&'a UsageRow);
        impl Serialize for Key<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(self.0.by.name(), &self.0.key)?;
                map.end()
            }
        }
        #[derive(Serialize)]
        struct Row<'a> {
            #[serde(flatten)]
            key: Key<'a>,
            #[serde(skip_serializing_if = "Option::is_none")]
            project: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            agent: Option<String>,
            #[serde(flatten)]
            tally: &'a Tally,
            #[serde(flatten)]
            cost: &'a RowCost,
            #[serde(flatten, skip_serializing_if = "Option::is_none")]
            block: Option<&'a Block>,
            #[serde(skip_serializing_if = "Option::is_none")]
            last_activity: Option<String>,
        }
        Row {
            key: Key(self),
            project: self.project.as_deref(),
            // An agent row's key is its agent already.
            agent: (self.by != GroupBy::Agent).then(|| self.agent_names()),
            tally: &self.tally,
            cost: &self.cost,
            block: self.block.as_ref(),
            last_activity: match self.block {
                Some(_) => None,
                None => self.last_activity.map(|t| t.to_string()),
            },
        }
        .serialize(serializer)
    }
}

impl UsageRow {
    /// The row's agents by name, comma-separated (`claude-code,kimi`).
    pub fn agent_names(&self) -> String {
        let names: Vec<&str> = self.agents.iter().map(|f| f.name()).collect();
        names.join(",")
    }
}

/// A transcript that could not be read, and why: it is left out of the totals. In JSON,
/// `{path, error}` with the error's message.
#[derive(Debug)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub error: TranscriptError,
}

impl Serialize for Skipped {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("path", &self.path.display().to_string())?;
        map.serialize_entry("error", &self.error.to_string())?;
        map.end()
    }
}

/// A usage report: `agentlog usage --json` prints it as it serializes.
#[derive(Debug, Default, Serialize)]
pub struct UsageReport {
    /// How the rows are grouped.
    pub by: GroupBy,
    /// The cost of the totals: `cost_usd`, `models`, `unpriced_models` beside `totals`.
    #[serde(flatten)]
    pub cost: RowCost,
    /// Which cost the rows show.
    pub cost_mode: CostMode,
    /// Where the prices came from.
    pub pricing: Option<PriceSource>,
    /// Messages found in more than one file and counted once.
    pub cross_file_duplicates: u64,
    /// Sessions read from the archive alone, their original files gone (0 when the archive
    /// is not read).
    pub archive_only_sessions: u64,
    /// Transcripts read, by format.
    pub files: BTreeMap<&'static str, u64>,
    /// What opening each index did, by outcome name (`fresh`, `caught_up`, `created`, ...):
    /// only the indexes this report opened (none when the snapshot answered alone).
    pub index_outcomes: BTreeMap<String, u64>,
    /// The rows, sorted by key (session rows by project, then session).
    pub rows: Vec<UsageRow>,
    /// The first day counted, if limited.
    #[serde(serialize_with = "day")]
    pub since: Option<Date>,
    /// Transcripts and directories that could not be read.
    pub skipped: Vec<Skipped>,
    /// What the run-level snapshot did.
    pub snapshot: SnapshotOutcome,
    /// The time zone days are cut in (its IANA name, or `UTC` / the fixed offset).
    pub timezone: String,
    /// The sum of the rows.
    pub totals: Tally,
    /// The last day counted, if limited.
    #[serde(serialize_with = "day")]
    pub until: Option<Date>,
    /// With [`UsageOptions::split_by_model`]: each row's usage by model, under the row's key
    /// (a day, week, month, project, model or agent), as model rows (`{"model": ...}` with the
    /// row's fields), in model order; the model rows of a key add up to its row. Absent from
    /// JSON when empty.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_model: BTreeMap<String, Vec<UsageRow>>,
}

/// What a usage run did with its snapshot. In JSON, `{outcome, reason}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SnapshotOutcome {
    /// No snapshot was asked for ([`UsageOptions::snapshot`] unset): every index was opened.
    #[default]
    Off,
    /// Every file was as the snapshot saw it: the answer came from it alone.
    Current,
    /// Some files grew, or were added, with keys no other file holds: only their new bytes
    /// were read.
    CaughtUp {
        /// How many files grew or were added.
        files: usize,
    },
    /// There was no usable snapshot, or it could not answer: every file was read and merged,
    /// and the snapshot written again.
    Rebuilt {
        /// Why the snapshot could not answer.
        reason: String,
    },
    /// No snapshot could be kept (no cache directory, or it could not be written).
    Unavailable {
        /// Why.
        reason: String,
    },
}

impl SnapshotOutcome {
    /// The `snake_case` name used in JSON.
    pub fn name(&self) -> &'static str {
        match self {
            SnapshotOutcome::Off => "off",
            SnapshotOutcome::Current => "current",
            SnapshotOutcome::CaughtUp { .. } => "caught_up",
            SnapshotOutcome::Rebuilt { .. } => "rebuilt",
            SnapshotOutcome::Unavailable { .. } => "unavailable",
        }
    }

    /// Why the snapshot was rebuilt or not kept.
    pub fn reason(&self) -> Option<&str> {
        match self {
            SnapshotOutcome::Rebuilt { reason } | SnapshotOutcome::Unavailable { reason } => {
                Some(reason)
            }
            _ => None,
        }
    }
}

impl Serialize for SnapshotOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("outcome", self.name())?;
        map.serialize_entry("reason", &self.reason())?;
        map.end()
    }
}

// The signature serde's `serialize_with` asks for.
#[allow(clippy::ref_option, clippy::trivially_copy_pass_by_ref)]
fn day<S: Serializer>(day: &Option<Date>, serializer: S) -> Result<S::Ok, S::Error> {
    match day {
        Some(d) => serializer.collect_str(d),
        None => serializer.serialize_none(),
    }
}

/// Adds an agent to a name-ordered list of agents, if it is not in it.
pub(crate) fn insert_agent(agents: &mut Vec<Format>, agent: Format) {
    if let Err(at) = agents.binary_search_by_key(&agent.name(), |f| f.name()) {
        agents.insert(at, agent);
    }
}

/// A zone's name: its IANA name, else its fixed offset.
pub(crate) fn zone_name(zone: &TimeZone) -> String {
    zone.iana_name().map_or_else(
        || zone.to_offset(Timestamp::now()).to_string(),
        str::to_owned,
    )
}

/// Reads `files` (canonical, sorted) and adds up their usage, each message counted once across
/// files (in path order: a message's first file owns it).
pub(crate) fn read_files(
    files: &[PathBuf],
    extra: Extra<'_>,
    options: &UsageOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> UsageReport {
    let mut merged = read_and_merge(files, options, progress, false);
    let mut rows = Grouper::new(options);
    rows.add_extra(extra);
    for (t, file_buckets) in merged.read.iter().zip(&merged.buckets) {
        if let Some(d) = &t.dedup {
            rows.add_spans(t.format, &d.spans);
        }
        let (session, project) = session_of(&t.path, t.format);
        for (&(quarter, model), tally) in file_buckets {
            let model_name = t
                .summary
                .models
                .get(model as usize)
                .map_or("unknown", String::as_str);
            rows.add((&session, &project), t.format, (quarter, model_name), tally);
        }
    }
    rows.finish(&mut merged.report);
    merged.report.snapshot = SnapshotOutcome::Off;
    merged.report
}
