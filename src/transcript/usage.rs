//! Usage reports over many transcripts: every file read through its own index, a message
//! present in several files counted once, the tallies grouped by day, session, project or
//! model. The rules: docs/TRANSCRIPTS.md, "Usage over many transcripts".

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use jiff::civil::Date;

use super::claude::{merge_message, tally_of};
use super::error::TranscriptError;
use super::fold::{BucketKey, Entry, Message, UNKNOWN_QUARTER};
use super::format::Format;
use super::store::{OpenOptions, Transcript, open};
use super::tally::Tally;
use crate::index::IndexOutcome;

/// How a usage report groups its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// By UTC day (`YYYY-MM-DD`; `unknown` for usage without a readable timestamp).
    Day,
    /// By session: a transcript and its subagent transcripts.
    Session,
    /// By project: the directory the session files sit in.
    Project,
    /// By model name (`unknown` for usage without one).
    Model,
}

/// What a usage report reads and how it groups it.
#[derive(Clone, Debug)]
pub struct UsageOptions {
    /// How each transcript is opened (index directory, format); `load_dedup` is set for it.
    pub open: OpenOptions,
    /// How rows are grouped.
    pub by: GroupBy,
    /// Only usage on or after this UTC day.
    pub since: Option<Date>,
    /// Only usage on or before this UTC day.
    pub until: Option<Date>,
    /// How many files are read at once (0: one per core).
    pub threads: usize,
}

impl Default for UsageOptions {
    fn default() -> UsageOptions {
        UsageOptions {
            open: OpenOptions::default(),
            by: GroupBy::Day,
            since: None,
            until: None,
            threads: 0,
        }
    }
}

/// Token counts in names common to the three formats.
///
/// Claude Code's and pi's input excludes cached input; Codex's `input_tokens` includes its
/// `cached_input_tokens` (here `cache_read_tokens`) and its `output_tokens` include its
/// reasoning tokens, as Codex reports them, so `total_tokens` is each format's own total.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Tokens {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Tokens written to the prompt cache (Claude Code cache creation, pi `cacheWrite`).
    pub cache_creation_tokens: u64,
    /// Tokens read from the prompt cache (Claude Code cache read, Codex cached input, pi
    /// `cacheRead`).
    pub cache_read_tokens: u64,
    /// Codex reasoning output tokens (part of its output tokens).
    pub reasoning_output_tokens: u64,
    /// Each format's own total.
    pub total_tokens: u64,
    /// pi's `cost.total` (0 for the others).
    pub cost_total: f64,
    /// Messages (Claude Code, pi) or usage events (Codex) counted.
    pub messages: u64,
}

impl Tokens {
    /// A format's tally in the common names.
    pub fn of(format: Format, tally: &Tally) -> Tokens {
        let [a, b, c, d, total] = tally.tokens;
        let mut out = Tokens {
            total_tokens: total,
            cost_total: tally.cost,
            messages: tally.events,
            ..Tokens::default()
        };
        match format {
            Format::ClaudeCode => {
                (out.input_tokens, out.output_tokens) = (a, b);
                (out.cache_creation_tokens, out.cache_read_tokens) = (c, d);
            }
            Format::Codex => {
                (out.input_tokens, out.cache_read_tokens) = (a, b);
                (out.output_tokens, out.reasoning_output_tokens) = (c, d);
            }
            Format::Pi => {
                (out.input_tokens, out.output_tokens) = (a, b);
                (out.cache_read_tokens, out.cache_creation_tokens) = (c, d);
            }
        }
        out
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Tokens) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_creation_tokens = self
            .cache_creation_tokens
            .saturating_add(other.cache_creation_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.reasoning_output_tokens = self
            .reasoning_output_tokens
            .saturating_add(other.reasoning_output_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        self.cost_total += other.cost_total;
        self.messages = self.messages.saturating_add(other.messages);
    }
}

/// One row of a report.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The group: a day, a session id, a project, or a model name.
    pub key: String,
    /// The project of a session row.
    pub project: Option<String>,
    /// What the group adds up to.
    pub tokens: Tokens,
}

/// A transcript that could not be read, and why: it is left out of the totals.
#[derive(Debug)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub error: TranscriptError,
}

/// A usage report.
#[derive(Debug, Default)]
pub struct Report {
    /// The rows, sorted by key.
    pub rows: Vec<Row>,
    /// The sum of the rows.
    pub totals: Tokens,
    /// Transcripts read, by format.
    pub files: BTreeMap<&'static str, u64>,
    /// What opening each index did, by outcome name (`fresh`, `caught_up`, `created`, ...).
    pub outcomes: BTreeMap<String, u64>,
    /// Messages found in more than one file and counted once.
    pub cross_file_duplicates: u64,
    /// Transcripts that could not be read.
    pub skipped: Vec<Skipped>,
}

/// The places the agents keep their transcripts, those that exist: `~/.claude/projects`,
/// `~/.config/claude/projects` and `<dir>/projects` for each directory of the comma-separated
/// `$CLAUDE_CONFIG_DIR`; `${CODEX_HOME:-~/.codex}/sessions`; `~/.pi/agent/sessions`.
pub fn default_roots() -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let home = var("HOME").map(PathBuf::from);
    let mut roots = Vec::new();
    if let Some(dirs) = var("CLAUDE_CONFIG_DIR") {
        for dir in dirs.to_string_lossy().split(',') {
            let dir = dir.trim();
            if !dir.is_empty() {
                roots.push(Path::new(dir).join("projects"));
            }
        }
    }
    if let Some(home) = &home {
        roots.push(home.join(".claude").join("projects"));
        roots.push(home.join(".config").join("claude").join("projects"));
    }
    match (var("CODEX_HOME"), &home) {
        (Some(codex), _) => roots.push(PathBuf::from(codex).join("sessions")),
        (None, Some(home)) => roots.push(home.join(".codex").join("sessions")),
        (None, None) => {}
    }
    if let Some(home) = &home {
        roots.push(home.join(".pi").join("agent").join("sessions"));
    }
    let mut seen = Vec::new();
    roots.retain(|r| {
        let canonical = std::fs::canonicalize(r).ok();
        let keep = canonical
            .as_ref()
            .is_some_and(|c| c.is_dir() && !seen.contains(c));
        if let (true, Some(c)) = (keep, canonical) {
            seen.push(c);
        }
        keep
    });
    roots
}

/// Every `*.jsonl` file under `paths` (a file is taken as it is), canonical, sorted, each
/// once; symbolic links to directories are not followed. Directories that cannot be listed
/// are reported.
pub fn discover(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Skipped>) {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    for path in paths {
        match std::fs::metadata(path) {
            // Walked from its canonical path, a directory's files are canonical already
            // (symbolic links apart): no path is resolved once per file.
            Ok(m) if m.is_dir() => walk(&canonical(path), &mut files, &mut skipped),
            Ok(_) => files.push(canonical(path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => skipped.push(Skipped {
                path: path.clone(),
                error: TranscriptError::NotFound { path: path.clone() },
            }),
            Err(e) => skipped.push(Skipped {
                path: path.clone(),
                error: TranscriptError::io("read", path, e),
            }),
        }
    }
    files.sort();
    files.dedup();
    (files, skipped)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, skipped: &mut Vec<Skipped>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            skipped.push(Skipped {
                path: dir.to_path_buf(),
                error: TranscriptError::io("list", dir, e),
            });
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let jsonl = path.extension().is_some_and(|e| e == "jsonl");
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, files, skipped),
            Ok(t) if t.is_file() && jsonl => files.push(path),
            Ok(t) if t.is_symlink() && jsonl && path.is_file() => {
                files.push(std::fs::canonicalize(&path).unwrap_or(path));
            }
            _ => {}
        }
    }
}

/// The session and project a transcript belongs to, from its path: Claude Code's
/// `<project>/<session>.jsonl` and `<project>/<session>/subagents/agent-*.jsonl`, pi's
/// `<project>/<file>.jsonl`; a Codex rollout is its own session, in project `codex`.
pub fn session_of(path: &Path, format: Format) -> (String, String) {
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let parent = path.parent();
    if format == Format::Codex {
        return (stem, "codex".to_owned());
    }
    if parent
        .and_then(Path::file_name)
        .is_some_and(|n| n == "subagents")
    {
        let session_dir = parent.and_then(Path::parent);
        return (name(session_dir), name(session_dir.and_then(Path::parent)));
    }
    (stem, name(parent))
}

fn minus(a: &Tally, b: &Tally) -> Tally {
    let mut out = *a;
    out.sub_tokens(b);
    out.events = out.events.saturating_sub(b.events);
    // A float difference can leave a crumb where nothing is counted any more.
    out.cost = if out.events == 0 {
        0.0
    } else {
        (out.cost - b.cost).max(0.0)
    };
    out
}

/// Reads every file (in `threads` threads), each through its index; `progress` is called
/// with the number of files done after each one.
fn read_all(
    files: &[PathBuf],
    options: &UsageOptions,
    progress: &(dyn Fn(usize) + Sync),
) -> Vec<Result<Transcript, TranscriptError>> {
    let open_options = OpenOptions {
        load_ids: true,
        ..options.open.clone()
    };
    let threads = match options.threads {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    }
    .clamp(1, files.len().max(1));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Transcript, TranscriptError>>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(i) else { break };
                    let read = open(path, &open_options);
                    if let Ok(mut slots) = results.lock()
                        && let Some(slot) = slots.get_mut(i)
                    {
                        *slot = Some(read);
                    }
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                }
            });
        }
    });
    let slots = results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    slots
        .into_iter()
        .zip(files)
        .map(|(slot, path)| {
            slot.unwrap_or_else(|| {
                Err(TranscriptError::io(
                    "read",
                    path,
                    std::io::Error::other("the reading thread stopped"),
                ))
            })
        })
        .collect()
}

/// The UTC day of a quarter-hour (`None` for [`UNKNOWN_QUARTER`]).
pub fn day_of(quarter: i64) -> Option<Date> {
    if quarter == UNKNOWN_QUARTER {
        return None;
    }
    let ts = jiff::Timestamp::from_second(quarter.checked_mul(900)?).ok()?;
    Some(jiff::tz::Offset::UTC.to_datetime(ts).date())
}

/// Reads `files` and adds up their usage, each message counted once across files (files
/// in path order: a message's first file owns it). A file that cannot be read is reported
/// in [`Report::skipped`] and left out.
pub fn usage(
    files: &[PathBuf],
    options: &UsageOptions,
    progress: &(dyn Fn(usize) + Sync),
) -> Report {
    let mut merged = read_and_merge(files, options, progress, false);
    let mut rows = Grouper::new(options);
    for (t, file_buckets) in merged.read.iter().zip(&merged.buckets) {
        let (session, project) = session_of(&t.path, t.format);
        for (&(quarter, model), tally) in file_buckets {
            let model_name = || {
                t.summary
                    .models
                    .get(model as usize)
                    .cloned()
                    .unwrap_or_else(|| "unknown".to_owned())
            };
            rows.add((&session, &project), t.format, quarter, model_name, tally);
        }
    }
    rows.finish(&mut merged.report);
    merged.report
}

/// Every file read and merged: the report without its rows, the transcripts read, and each
/// one's buckets after the merge (and before it, when asked).
pub(crate) struct Merged {
    pub(crate) report: Report,
    pub(crate) read: Vec<Transcript>,
    /// Each file's own buckets, before the merge (empty unless asked for).
    pub(crate) own: Vec<HashMap<BucketKey, Tally>>,
    pub(crate) buckets: Vec<HashMap<BucketKey, Tally>>,
}

/// Reads every file through its index and merges the messages files share.
pub(crate) fn read_and_merge(
    files: &[PathBuf],
    options: &UsageOptions,
    progress: &(dyn Fn(usize) + Sync),
    keep_own: bool,
) -> Merged {
    let mut report = Report::default();
    let mut read = Vec::new();
    for (path, result) in files.iter().zip(read_all(files, options, progress)) {
        match result {
            Ok(t) => {
                *report.files.entry(t.format.name()).or_default() += 1;
                *report.outcomes.entry(outcome_name(&t.outcome)).or_default() += 1;
                read.push(t);
            }
            Err(error) => report.skipped.push(Skipped {
                path: path.clone(),
                error,
            }),
        }
    }
    // Each file's buckets already count each of its messages once; only the ids found in
    // more than one file are merged, and their tallies moved to the file that owns them. The
    // first pass read ids alone: the files that share one are read again with their messages.
    let again = OpenOptions {
        load_dedup: true,
        ..options.open.clone()
    };
    for i in sharing_files(&read) {
        if let Some(slot) = read.get_mut(i)
            && let Ok(full) = open(&slot.path, &again)
        {
            *slot = full;
        }
    }
    let mut buckets: Vec<HashMap<BucketKey, Tally>> = read
        .iter_mut()
        .map(|t| {
            t.dedup
                .as_mut()
                .map(|d| std::mem::take(&mut d.buckets))
                .unwrap_or_default()
        })
        .collect();
    let own = if keep_own {
        buckets.clone()
    } else {
        Vec::new()
    };
    report.cross_file_duplicates = merge_shared(&read, &mut buckets);
    Merged {
        report,
        read,
        own,
        buckets,
    }
}

/// Adds tallies up into a report's rows, by the report's grouping and day range.
pub(crate) struct Grouper<'a> {
    options: &'a UsageOptions,
    groups: BTreeMap<String, Row>,
    totals: Tokens,
}

impl<'a> Grouper<'a> {
    pub(crate) fn new(options: &'a UsageOptions) -> Grouper<'a> {
        Grouper {
            options,
            groups: BTreeMap::new(),
            totals: Tokens::default(),
        }
    }

    /// Adds a bucket's tally of a file of `session` in `project` (an empty tally adds no
    /// row); `quarter` is any quarter-hour of the bucket's day.
    pub(crate) fn add(
        &mut self,
        (session, project): (&str, &str),
        format: Format,
        quarter: i64,
        model_name: impl FnOnce() -> String,
        tally: &Tally,
    ) {
        let options = self.options;
        if tally.is_empty() {
            return;
        }
        let day = day_of(quarter);
        let outside = match day {
            Some(d) => options.since.is_some_and(|s| d < s) || options.until.is_some_and(|u| d > u),
            None => options.since.is_some() || options.until.is_some(),
        };
        if outside {
            return;
        }
        let (key, project) = match options.by {
            GroupBy::Day => (
                day.map_or_else(|| "unknown".to_owned(), |d| d.to_string()),
                None,
            ),
            GroupBy::Session => (session.to_owned(), Some(project.to_owned())),
            GroupBy::Project => (project.to_owned(), None),
            GroupBy::Model => (model_name(), None),
        };
        let group_key = match &project {
            Some(p) => format!("{p}\u{0}{key}"),
            None => key.clone(),
        };
        let tokens = Tokens::of(format, tally);
        self.groups
            .entry(group_key)
            .or_insert_with(|| Row {
                key,
                project,
                tokens: Tokens::default(),
            })
            .tokens
            .add(&tokens);
        self.totals.add(&tokens);
    }

    /// Puts the rows and totals in `report`.
    pub(crate) fn finish(self, report: &mut Report) {
        report.rows = self.groups.into_values().collect();
        report.totals = self.totals;
    }
}

/// The Claude Code message ids of each file, by file number.
fn ids_of(read: &[Transcript], i: usize) -> Option<&HashMap<String, Vec<Message>>> {
    read.get(i)
        .filter(|t| t.format == Format::ClaudeCode)
        .and_then(|t| t.dedup.as_ref())
        .map(|d| &d.messages)
}

/// The pi entries of each file, by file number.
fn entries_of(read: &[Transcript], i: usize) -> Option<&HashMap<String, Entry>> {
    read.get(i)
        .filter(|t| t.format == Format::Pi)
        .and_then(|t| t.dedup.as_ref())
        .map(|d| &d.entries)
}

/// The numbers of the files holding a Claude Code message id another file holds too (only
/// these are read again, for their messages: pi entries are loaded whole the first time).
fn sharing_files(read: &[Transcript]) -> Vec<usize> {
    let total: usize = (0..read.len())
        .filter_map(|i| ids_of(read, i))
        .map(HashMap::len)
        .sum();
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(total);
    let mut sharing = vec![false; read.len()];
    for i in 0..read.len() {
        for id in ids_of(read, i).into_iter().flat_map(HashMap::keys) {
            let owner = *first.entry(id.as_str()).or_insert(i);
            if owner != i {
                for j in [owner, i] {
                    if let Some(flag) = sharing.get_mut(j) {
                        *flag = true;
                    }
                }
            }
        }
    }
    (0..read.len())
        .filter(|&i| sharing.get(i) == Some(&true))
        .collect()
}

/// Merges the Claude Code messages whose id is in more than one file: each file's own
/// messages under the id are taken out of its buckets, and the merged messages are put in
/// the buckets of the file that holds them first (their bucket is that file's). Then the pi
/// entries ([`merge_entries`]). Returns how many messages of later files were merged into
/// earlier ones.
fn merge_shared(read: &[Transcript], buckets: &mut [HashMap<BucketKey, Tally>]) -> u64 {
    let messages = |i: usize| ids_of(read, i);
    let total: usize = (0..read.len()).filter_map(messages).map(HashMap::len).sum();
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(total);
    let mut shared: HashMap<&str, Vec<usize>> = HashMap::new();
    for i in 0..read.len() {
        for id in messages(i).into_iter().flat_map(HashMap::keys) {
            match first.entry(id.as_str()) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(i);
                }
                std::collections::hash_map::Entry::Occupied(o) => {
                    let owner = *o.get();
                    shared
                        .entry(id.as_str())
                        .or_insert_with(|| vec![owner])
                        .push(i);
                }
            }
        }
    }
    let mut duplicates = 0;
    for (id, holders) in shared {
        let mut merged: Vec<Message> = Vec::new();
        let mut owners: Vec<usize> = Vec::new();
        for &i in &holders {
            let Some(list) = messages(i).and_then(|m| m.get(id)) else {
                continue;
            };
            for m in list {
                if let Some(b) = buckets.get_mut(i).and_then(|b| b.get_mut(&m.bucket)) {
                    *b = minus(b, &tally_of(&m.usage, 1));
                }
                let before = merged.len();
                merge_message(&mut merged, m);
                if merged.len() > before {
                    owners.push(i);
                } else if owners.iter().any(|&o| o != i) {
                    duplicates += 1;
                }
            }
        }
        for (m, owner) in merged.iter().zip(owners) {
            if let Some(file) = buckets.get_mut(owner) {
                file.entry(m.bucket)
                    .or_default()
                    .add(&tally_of(&m.usage, 1));
            }
        }
    }
    duplicates + merge_entries(read, buckets)
}

/// Counts each pi entry once across files. pi's entry ids are 8 hex digits, unique within a
/// session file but not across files, so a later file's entry is a copy of an earlier file's
/// (a resumed or copied session) when both have the same id, the same usage and the same
/// quarter-hour and model name: it is taken out of the later file's bucket. Compaction entries
/// count nothing and are left alone. Returns how many copies were taken out.
fn merge_entries(read: &[Transcript], buckets: &mut [HashMap<BucketKey, Tally>]) -> u64 {
    type Same<'a> = (&'a str, i64, Option<&'a str>, [u64; 5], u64);
    let total: usize = (0..read.len())
        .filter_map(|i| entries_of(read, i))
        .map(HashMap::len)
        .sum();
    let mut first: HashMap<Same<'_>, usize> = HashMap::with_capacity(total);
    let mut copies = 0;
    for (i, t) in read.iter().enumerate() {
        for (id, entry) in entries_of(read, i).into_iter().flatten() {
            let Entry::Message { tally, bucket } = entry else {
                continue;
            };
            let model = t.summary.models.get(bucket.1 as usize).map(String::as_str);
            let same = (
                id.as_str(),
                bucket.0,
                model,
                tally.tokens,
                tally.cost.to_bits(),
            );
            if *first.entry(same).or_insert(i) == i {
                continue;
            }
            if let Some(b) = buckets.get_mut(i).and_then(|b| b.get_mut(bucket)) {
                *b = minus(b, tally);
                copies += 1;
            }
        }
    }
    copies
}

/// The `snake_case` name of an index outcome.
pub(crate) fn outcome_name(outcome: &IndexOutcome) -> String {
    match outcome {
        IndexOutcome::Fresh => "fresh",
        IndexOutcome::CaughtUp { .. } => "caught_up",
        IndexOutcome::Created { .. } => "created",
        IndexOutcome::Rebuilt { .. } => "rebuilt",
        IndexOutcome::ReadOnly { .. } => "read_only",
    }
    .to_owned()
}
