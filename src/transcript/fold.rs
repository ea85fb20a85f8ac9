//! The fold shared by the readers: what a transcript's lines add up to, built one complete
//! line at a time in file order, and the steps every reader takes (parse a line that may
//! matter, read a token value, mark a boundary, count a message in its generation and bucket).
//!
//! [`Summary`] holds what every answer needs (boundaries, the tally of each generation, the
//! lifetime tally, diagnostics) and is small: it is the index's meta record. What dedup needs
//! to remember of every line ever folded (Claude Code's message keys, pi's entry ids) and the
//! tallies by quarter-hour and model live in [`Dedup`], whose entries a catch-up loads from the
//! index only when a new line touches them ([`Recall`]), so catching up costs O(new lines).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::format::Format;
use super::json::{TokenValue, parse_line};
use super::tally::Tally;
use super::tokens::Usage;

/// What marks a compaction, in each format's own terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundaryKind {
    /// Claude Code: a `system` line with subtype `compact_boundary`.
    CompactBoundary,
    /// Claude Code: an `isCompactSummary` user line with no boundary line before it.
    CompactSummaryWithoutBoundary,
    /// Codex: a `compacted` line (with the `context_compacted` event after it).
    Compacted,
    /// Codex: a `context_compacted` event with no `compacted` line before it.
    ContextCompacted,
    /// pi: a `compaction` entry.
    Compaction,
    /// GitHub Copilot CLI: a `session.compaction_complete` event.
    CompactionComplete,
    /// Gemini CLI: a `$set` of `messages` (the history compressed and rewritten).
    HistoryRewrite,
    /// Qwen Code: a `system` record with subtype `chat_compression`.
    ChatCompression,
    /// Kimi Code: a `usage.record` with `usageScope: "session"` (the compaction call).
    SessionUsageRecord,
}

impl BoundaryKind {
    /// The stable `snake_case` name used in JSON.
    pub fn name(self) -> &'static str {
        match self {
            BoundaryKind::CompactBoundary => "compact_boundary",
            BoundaryKind::CompactSummaryWithoutBoundary => "compact_summary_without_boundary",
            BoundaryKind::Compacted => "compacted",
            BoundaryKind::ContextCompacted => "context_compacted",
            BoundaryKind::Compaction => "compaction",
            BoundaryKind::CompactionComplete => "compaction_complete",
            BoundaryKind::HistoryRewrite => "history_rewrite",
            BoundaryKind::ChatCompression => "chat_compression",
            BoundaryKind::SessionUsageRecord => "session_usage_record",
        }
    }
}

/// A compaction boundary: generation `n` starts at boundary `n - 1`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionBoundary {
    /// Byte offset of the line that marks it.
    pub offset: u64,
    /// 1-based number of that line.
    pub line: u64,
    /// What marked it.
    pub kind: BoundaryKind,
    /// Why it happened, when the format says (`auto`, `manual`).
    pub trigger: Option<String>,
    /// The context size before it, when the format says.
    pub pre_tokens: Option<u64>,
}

/// What was odd about the lines folded: each is counted, and none makes a total silently wrong.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptDiagnostics {
    /// Lines that could carry usage or a boundary and were parsed.
    pub parsed_lines: u64,
    /// Such lines that were not a JSON object (not JSON, torn and terminated, another value,
    /// or a key repeated among the fields read): not counted.
    pub invalid_lines: u64,
    /// Lines longer than the maximum line size: not read.
    pub too_long_lines: u64,
    /// Assistant lines (Claude Code, pi) or `token_count` events (Codex) without a usage
    /// object: nothing counted for them.
    pub missing_usage: u64,
    /// Token fields absent from a usage object: counted as 0.
    pub missing_fields: u64,
    /// Token values truncated by the coercion rule (a float, a plain decimal string).
    pub coerced_values: u64,
    /// Values that are not counts by the coercion rule (null, negative, too large, other
    /// text), costs that are not amounts, `requestId`s that are not strings: counted as 0 or
    /// absent.
    pub invalid_values: u64,
    /// Parts larger than their whole (Codex cached input above input, reasoning above output,
    /// Claude Code's 1-hour cache writes above its cache writes): cut to the whole.
    pub unbalanced_values: u64,
    /// Recorded totals (Codex `total_tokens`, pi `totalTokens`) other than the sum of the
    /// normalised fields: the sum is counted.
    pub total_mismatches: u64,
    /// Timestamps missing or unreadable: their usage is bucketed under an unknown time.
    pub invalid_timestamps: u64,
    /// Claude Code usage lines without a `message.id`: each counted as a message of its own.
    pub messages_without_id: u64,
    /// Lines merged into a message already counted (Claude Code), or entries whose id was
    /// already seen (pi).
    pub duplicate_lines: u64,
    /// Claude Code lines of a message first seen before the latest boundary: the message
    /// stays in its first generation.
    pub replayed_lines: u64,
    /// Boundary lines seen before (same uuid or id): not a new boundary.
    pub replayed_boundaries: u64,
    /// Codex `token_count` events whose `info` is null (rate limits only).
    pub null_info: u64,
    /// Codex cumulative totals that went down: the counter restarted, the new total is counted.
    pub counter_resets: u64,
    /// Codex cumulative fields that went down while the total did not: counted as 0.
    pub counter_decreases: u64,
    /// GitHub Copilot CLI messages and compaction calls of a process that left no
    /// `session.shutdown` (killed, or still running): their output is counted, their input
    /// is not known.
    pub input_unknown: u64,
}

/// State a format carries from one line to the next.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Carry {
    /// The latest boundary may still absorb its companion line (Claude Code: the summary
    /// after a `compact_boundary`; Codex: the `context_compacted` after a `compacted`).
    pub(crate) pairable: bool,
    /// Codex: the last cumulative totals.
    pub(crate) totals: Option<[u64; 5]>,
    /// Codex: the model of the latest `turn_context`; GitHub Copilot CLI: the model of the
    /// latest `session.model_change`.
    pub(crate) model: Option<u32>,
    /// GitHub Copilot CLI: what the running process counted before its `session.shutdown`
    /// (taken back when its shutdown's totals come).
    pub(crate) pending: Vec<Pending>,
}

/// What a process counted provisionally in one generation and bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub(crate) generation: u32,
    pub(crate) bucket: BucketKey,
    pub(crate) tally: Tally,
}

/// What a transcript's complete lines add up to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The format the lines were read as.
    pub format: Format,
    /// Complete lines folded.
    pub lines: u64,
    /// The boundaries, in file order.
    pub boundaries: Vec<CompactionBoundary>,
    /// The tally of each generation: one more than there are boundaries.
    pub generations: Vec<Tally>,
    /// The tally of every generation.
    pub lifetime: Tally,
    /// The part of `lifetime` from Claude Code messages without a `message.id` (never merged,
    /// so never looked up when files are merged).
    pub unkeyed: Tally,
    /// What was odd.
    pub diagnostics: TranscriptDiagnostics,
    /// The context: the prompt (input + cache creation + cache read) of the latest request
    /// (Claude Code: main-chain assistant line; Codex: `last_token_usage`; pi: assistant
    /// message), 0 after a later compaction boundary; `None` before any.
    pub context: Option<u64>,
    /// Model names, by the number buckets use.
    pub models: Vec<String>,
    /// How many keys dedup remembers (rows of the index's key table).
    pub(crate) keys: u64,
    /// How many (quarter-hour, model) buckets hold a tally.
    pub(crate) buckets: u64,
    /// How many Claude Code boundary and summary line uuids dedup remembers (rows of the
    /// index's mark table).
    pub(crate) marks: u64,
    pub(crate) carry: Carry,
}

impl Summary {
    /// The summary of no lines.
    pub fn new(format: Format) -> Summary {
        Summary {
            format,
            lines: 0,
            boundaries: Vec::new(),
            generations: vec![Tally::default()],
            lifetime: Tally::default(),
            unkeyed: Tally::default(),
            diagnostics: TranscriptDiagnostics::default(),
            context: None,
            models: Vec::new(),
            keys: 0,
            buckets: 0,
            marks: 0,
            carry: Carry::default(),
        }
    }

    /// The tally since the latest boundary (the whole transcript if there is none).
    pub fn since_compaction(&self) -> Tally {
        self.generations.last().copied().unwrap_or_default()
    }

    /// Generation number of the lines folded now.
    pub(crate) fn generation(&self) -> u32 {
        u32::try_from(self.boundaries.len()).unwrap_or(u32::MAX)
    }

    /// Whether the shape holds together (a summary read from a damaged index may not).
    pub(crate) fn is_well_formed(&self) -> bool {
        self.generations.len() == self.boundaries.len() + 1
    }

    /// The number of a model name, adding it if new.
    pub(crate) fn model_id(&mut self, name: &str) -> u32 {
        if let Some(i) = self.models.iter().position(|m| m == name) {
            return u32::try_from(i).unwrap_or(UNKNOWN_MODEL);
        }
        if self.models.len() >= MAX_MODELS {
            return UNKNOWN_MODEL;
        }
        self.models.push(name.to_owned());
        u32::try_from(self.models.len() - 1).unwrap_or(UNKNOWN_MODEL)
    }
}

/// The model number of usage without a model, or past the number of model names a summary keeps.
pub const UNKNOWN_MODEL: u32 = u32::MAX;
/// The quarter-hour of usage without a readable timestamp.
pub const UNKNOWN_QUARTER: i64 = i64::MIN;
/// Seconds in a quarter-hour, the unit of usage buckets.
pub(crate) const QUARTER_SECONDS: i64 = 900;
/// How many distinct model names a transcript's buckets tell apart.
const MAX_MODELS: usize = 1024;

/// A bucket: (quarter-hours since the epoch, model number).
pub type BucketKey = (i64, u32);

/// Milliseconds in a quarter-hour.
pub(crate) const QUARTER_MILLIS: i64 = QUARTER_SECONDS * 1000;

/// The first and last time (milliseconds since the epoch) of the usage lines read in one
/// quarter-hour: what makes billing blocks exact to the millisecond while usage is kept by
/// quarter-hour (docs/COST.md, "Billing blocks").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// The earliest time.
    pub first: i64,
    /// The latest time.
    pub last: i64,
}

impl Span {
    /// The span of one time.
    pub fn at(millis: i64) -> Span {
        Span {
            first: millis,
            last: millis,
        }
    }

    /// Widens `self` to hold `other` too.
    pub fn widen(&mut self, other: Span) {
        self.first = self.first.min(other.first);
        self.last = self.last.max(other.last);
    }

    /// Whether both times fall in quarter-hour `quarter`, in order (a span read from a
    /// damaged index or snapshot may not).
    pub(crate) fn is_in(self, quarter: i64) -> bool {
        self.first <= self.last
            && self.first.div_euclid(QUARTER_MILLIS) == quarter
            && self.last.div_euclid(QUARTER_MILLIS) == quarter
    }
}

/// Widens the span of quarter-hour `quarter` in `spans` to hold `span`.
pub(crate) fn widen_span(spans: &mut HashMap<i64, Span>, quarter: i64, span: Span) {
    spans
        .entry(quarter)
        .and_modify(|s| s.widen(span))
        .or_insert(span);
}

/// A Claude Code message: the key it was merged under and its winning line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Message {
    /// The `requestId`s its lines carried (`None` for lines without one).
    pub(crate) requests: Vec<Option<String>>,
    /// The generation of its first line.
    pub(crate) generation: u32,
    /// The winning line's usage.
    pub(crate) usage: Usage,
    /// Whether the winning line is a sidechain line.
    pub(crate) sidechain: bool,
    /// The quarter-hour and model of its first line.
    pub(crate) bucket: BucketKey,
}

/// Whether a format's dedup keys are [`Message`]s (Claude Code's `message.id`, Gemini CLI's
/// record `id`) rather than [`Entry`]s (pi's entry ids, Qwen Code's record `uuid`s).
pub(crate) fn keys_messages(format: Format) -> bool {
    matches!(format, Format::ClaudeCode | Format::Gemini)
}

/// A failure to read back what the index remembers: the index cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read the index's dedup state: {0}")]
pub(crate) struct RecallError(pub(crate) String);

/// Where a catch-up finds what earlier lines left behind.
pub(crate) trait Recall {
    /// The messages filed under a Claude Code `message.id`.
    fn messages(&mut self, id: &str) -> Result<Option<Vec<Message>>, RecallError>;
    /// Whether a pi entry id was seen.
    fn seen(&mut self, id: &str) -> Result<bool, RecallError>;
    /// A bucket's tally.
    fn bucket(&mut self, key: BucketKey) -> Result<Option<Tally>, RecallError>;
    /// Whether a Claude Code boundary or summary line's uuid was seen.
    fn marked(&mut self, uuid: &str) -> Result<bool, RecallError>;
}

/// Recalls nothing: a fold from the first line.
pub(crate) struct Nothing;

impl Recall for Nothing {
    fn messages(&mut self, _: &str) -> Result<Option<Vec<Message>>, RecallError> {
        Ok(None)
    }
    fn seen(&mut self, _: &str) -> Result<bool, RecallError> {
        Ok(false)
    }
    fn bucket(&mut self, _: BucketKey) -> Result<Option<Tally>, RecallError> {
        Ok(None)
    }
    fn marked(&mut self, _: &str) -> Result<bool, RecallError> {
        Ok(false)
    }
}

/// What a pi entry id stands for: what a merge of several files needs to count the entry
/// once (docs/TRANSCRIPTS.md, "Usage over many transcripts").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Entry {
    /// A `compaction` entry: it counts nothing.
    Compaction,
    /// An assistant message with usage: what it counted, and in which bucket.
    Message {
        /// Its tally (one event).
        tally: Tally,
        /// Its quarter-hour and model.
        bucket: BucketKey,
    },
}

/// The dedup state a fold touched: everything for a fold from the first line, only what new
/// lines touched for a catch-up (each entry loaded from the index first).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Dedup {
    /// Claude Code messages by `message.id`.
    pub(crate) messages: HashMap<String, Vec<Message>>,
    /// pi entries by id: for a fold, those it saw first.
    pub(crate) entries: HashMap<String, Entry>,
    /// Bucket tallies.
    pub(crate) buckets: HashMap<BucketKey, Tally>,
    /// Claude Code boundary and summary line uuids: for a fold, those it saw first.
    pub(crate) marks: HashSet<String>,
    /// The span of the usage lines' times in each quarter-hour: for a catch-up, of the new
    /// lines only (widened with the index's when written or answered).
    pub(crate) spans: HashMap<i64, Span>,
    /// Whether `messages` holds some Claude Code ids without their messages (loaded from an
    /// index with the ids alone): a merge then reads the file again for those it shares.
    pub(crate) ids_only: bool,
}

/// Where a line is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At {
    pub(crate) offset: u64,
    /// 1-based line number.
    pub(crate) line: u64,
}

/// The state of a fold: the summary and the dedup entries it touched.
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    pub(crate) summary: Summary,
    pub(crate) dedup: Dedup,
}

impl Fold {
    /// A fold of no lines.
    pub fn new(format: Format) -> Fold {
        Fold::resume(Summary::new(format))
    }

    /// A fold continuing from a summary; dedup entries are recalled as lines need them.
    pub(crate) fn resume(summary: Summary) -> Fold {
        Fold {
            summary,
            dedup: Dedup::default(),
        }
    }

    /// The format folded.
    pub fn format(&self) -> Format {
        self.summary.format
    }

    /// What the lines add up to so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Counts a complete line too long to read.
    pub fn too_long(&mut self) {
        self.summary.lines += 1;
        self.summary.diagnostics.too_long_lines += 1;
    }

    /// The tally of every (quarter-hour, model) bucket this fold touched: all of them for a
    /// fold from the first line.
    pub fn buckets(&self) -> impl Iterator<Item = (BucketKey, &Tally)> {
        self.dedup.buckets.iter().map(|(k, v)| (*k, v))
    }

    /// The line parsed as `T`, if `may_matter` says it can carry usage or a boundary (the
    /// other lines are never parsed) and it is a JSON object; the diagnostics count the lines
    /// parsed and those that were not objects.
    pub(crate) fn parse<'a, T: Deserialize<'a>>(
        &mut self,
        bytes: &'a [u8],
        may_matter: fn(&[u8]) -> bool,
    ) -> Option<T> {
        if !may_matter(bytes) {
            return None;
        }
        self.summary.diagnostics.parsed_lines += 1;
        let line = parse_line(bytes);
        if line.is_none() {
            self.summary.diagnostics.invalid_lines += 1;
        }
        line
    }

    /// Starts a new generation at a boundary marked by the line at `at`; nothing was sent
    /// since, so the context is 0.
    pub(crate) fn boundary(
        &mut self,
        at: At,
        kind: BoundaryKind,
        trigger: Option<&str>,
        pre_tokens: Option<u64>,
    ) {
        self.summary.boundaries.push(CompactionBoundary {
            offset: at.offset,
            line: at.line,
            kind,
            trigger: trigger.map(str::to_owned),
            pre_tokens,
        });
        self.summary.generations.push(Tally::default());
        self.summary.context = Some(0);
    }

    /// The bucket of usage at a timestamp field with a model field, counting a timestamp that
    /// cannot be read.
    pub(crate) fn bucket(&mut self, timestamp: Option<&str>, model: Option<&str>) -> BucketKey {
        (self.quarter(timestamp), self.model(model))
    }

    /// Counts a usage line that has no usage object.
    pub(crate) fn missing_usage(&mut self) {
        self.summary.diagnostics.missing_usage += 1;
    }

    /// A line's usage object, counting a usage line that has none.
    pub(crate) fn usage_object<T>(&mut self, usage: Option<T>) -> Option<T> {
        if usage.is_none() {
            self.missing_usage();
        }
        usage
    }

    /// The usage of a format whose fields are already the normalised ones (input without
    /// what was read from the cache, no reasoning figure), each read by the coercion rule.
    pub(crate) fn usage(
        &mut self,
        [input, output, cache_creation, cache_read]: [TokenValue; 4],
    ) -> Usage {
        Usage {
            input: self.value(input),
            output: self.value(output),
            cache_creation: self.value(cache_creation),
            cache_read: self.value(cache_read),
            ..Usage::default()
        }
    }

    /// Notes a message that has no id to merge it by (never merged, so never looked up when
    /// files are merged): counted apart as well.
    pub(crate) fn unkeyed(&mut self, tally: &Tally) {
        self.summary.diagnostics.messages_without_id += 1;
        self.summary.unkeyed.add(tally);
    }

    /// The messages filed under a message id (Claude Code's `message.id`, Gemini CLI's record
    /// `id`), fetched from what the index remembers the first time the id is met.
    pub(crate) fn messages_of(
        &mut self,
        id: &str,
        recall: &mut dyn Recall,
    ) -> Result<&mut Vec<Message>, RecallError> {
        if !self.dedup.messages.contains_key(id) {
            let known = recall.messages(id)?;
            if known.is_none() {
                self.summary.keys += 1;
            }
            self.dedup
                .messages
                .insert(id.to_owned(), known.unwrap_or_default());
        }
        // Inserted just above if it was missing.
        Ok(self.dedup.messages.entry(id.to_owned()).or_default())
    }

    /// Counts `tally` in generation `generation`, the lifetime and `bucket`.
    pub(crate) fn count(
        &mut self,
        generation: u32,
        bucket: BucketKey,
        tally: &Tally,
        recall: &mut dyn Recall,
    ) -> Result<(), RecallError> {
        self.change(generation, bucket, recall, |t| t.add(tally))
    }

    /// Replaces the tokens `old` counted by `new` (a message's new winning line).
    pub(crate) fn recount(
        &mut self,
        generation: u32,
        bucket: BucketKey,
        (old, new): (&Tally, &Tally),
        recall: &mut dyn Recall,
    ) -> Result<(), RecallError> {
        let (old, new) = (
            Tally {
                messages: 0,
                ..*old
            },
            Tally {
                messages: 0,
                ..*new
            },
        );
        self.change(generation, bucket, recall, |t| {
            t.sub(&old);
            t.add(&new);
        })
    }

    /// Applies `change` to the tally of generation `generation`, the lifetime and `bucket`
    /// (adds a tally, takes back one counted earlier, swaps one for another).
    pub(crate) fn change(
        &mut self,
        generation: u32,
        bucket: BucketKey,
        recall: &mut dyn Recall,
        change: impl Fn(&mut Tally),
    ) -> Result<(), RecallError> {
        if let Some(g) = self.summary.generations.get_mut(generation as usize) {
            change(g);
        }
        change(&mut self.summary.lifetime);
        change(self.bucket_mut(bucket, recall)?);
        Ok(())
    }

    /// Replaces a message counted as `old` in bucket `from` by `new` in bucket `to` (a message's
    /// new winning record, which may name another model or time): still one message.
    pub(crate) fn replace_message(
        &mut self,
        generation: u32,
        (from, old): (BucketKey, &Tally),
        (to, new): (BucketKey, &Tally),
        recall: &mut dyn Recall,
    ) -> Result<(), RecallError> {
        let swap = |t: &mut Tally| {
            t.sub(old);
            t.add(new);
        };
        if let Some(g) = self.summary.generations.get_mut(generation as usize) {
            swap(g);
        }
        swap(&mut self.summary.lifetime);
        self.bucket_mut(from, recall)?.sub(old);
        self.bucket_mut(to, recall)?.add(new);
        Ok(())
    }

    fn bucket_mut(
        &mut self,
        key: BucketKey,
        recall: &mut dyn Recall,
    ) -> Result<&mut Tally, RecallError> {
        if !self.dedup.buckets.contains_key(&key) {
            let known = recall.bucket(key)?;
            if known.is_none() {
                self.summary.buckets += 1;
            }
            self.dedup.buckets.insert(key, known.unwrap_or_default());
        }
        // Inserted just above if it was missing.
        Ok(self.dedup.buckets.entry(key).or_default())
    }

    /// The quarter-hour of a timestamp field, counting one that cannot be read; its time
    /// widens the quarter-hour's [`Span`].
    pub(crate) fn quarter(&mut self, timestamp: Option<&str>) -> i64 {
        if let Some((quarter, millis)) = timestamp.and_then(super::json::quarter_and_millis) {
            self.note_time(quarter, millis);
            return quarter;
        }
        self.summary.diagnostics.invalid_timestamps += 1;
        UNKNOWN_QUARTER
    }

    /// Widens the span of `quarter` to hold `millis` (a time outside it is left out).
    fn note_time(&mut self, quarter: i64, millis: i64) {
        let span = Span::at(millis);
        if span.is_in(quarter) {
            widen_span(&mut self.dedup.spans, quarter, span);
        }
    }

    /// The quarter-hour of a time in epoch milliseconds, counting one that cannot be read.
    pub(crate) fn quarter_of_millis(&mut self, millis: TokenValue) -> i64 {
        if let Some(ms) = millis.known().and_then(|ms| i64::try_from(ms).ok()) {
            let quarter = ms.div_euclid(QUARTER_MILLIS);
            self.note_time(quarter, ms);
            return quarter;
        }
        self.summary.diagnostics.invalid_timestamps += 1;
        UNKNOWN_QUARTER
    }

    /// The number of a model name (or [`UNKNOWN_MODEL`]).
    pub(crate) fn model(&mut self, name: Option<&str>) -> u32 {
        match name.filter(|n| !n.is_empty()) {
            Some(name) => self.summary.model_id(name),
            None => UNKNOWN_MODEL,
        }
    }

    /// Reads a token value by the coercion rule, counting what was odd about it.
    pub(crate) fn value(&mut self, value: TokenValue) -> u64 {
        let d = &mut self.summary.diagnostics;
        match value {
            TokenValue::Exact(_) => {}
            TokenValue::Truncated(_) => d.coerced_values += 1,
            TokenValue::Missing => d.missing_fields += 1,
            TokenValue::Rejected => d.invalid_values += 1,
        }
        value.count()
    }

    /// `part` if it is at most `whole`, else `whole` (counted as unbalanced).
    pub(crate) fn part_of(&mut self, part: u64, whole: u64) -> u64 {
        if part > whole {
            self.summary.diagnostics.unbalanced_values += 1;
            whole
        } else {
            part
        }
    }

    /// Counts a recorded total that is not the normalised total.
    pub(crate) fn check_total(&mut self, recorded: Option<u64>, usage: &Usage) {
        if recorded.is_some_and(|t| t != usage.total()) {
            self.summary.diagnostics.total_mismatches += 1;
        }
    }

    /// Whether an entry id (pi's entry `id`, Qwen Code's record `uuid`) was seen before: a
    /// copy, counted once (as a duplicate line, a replayed boundary when `boundary`). Entries
    /// without an id are never taken for one another.
    pub(crate) fn entry_seen(
        &mut self,
        id: Option<&str>,
        boundary: bool,
        recall: &mut dyn Recall,
    ) -> Result<bool, RecallError> {
        let Some(id) = id else {
            return Ok(false);
        };
        if self.dedup.entries.contains_key(id) || recall.seen(id)? {
            let d = &mut self.summary.diagnostics;
            d.duplicate_lines += 1;
            if boundary {
                d.replayed_boundaries += 1;
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// Remembers a new entry under its id (an entry without one is not remembered).
    pub(crate) fn remember_entry(&mut self, id: Option<&str>, entry: Entry) {
        if let Some(id) = id {
            self.dedup.entries.insert(id.to_owned(), entry);
            self.summary.keys += 1;
        }
    }

    /// Counts the usage of an entry not seen before (pi's assistant message, Qwen Code's
    /// record), in the current generation, and remembers it under its id.
    pub(crate) fn count_entry(
        &mut self,
        id: Option<&str>,
        bucket: BucketKey,
        tally: Tally,
        recall: &mut dyn Recall,
    ) -> Result<(), RecallError> {
        self.context(tally.usage.prompt());
        let generation = self.summary.generation();
        self.remember_entry(id, Entry::Message { tally, bucket });
        self.count(generation, bucket, &tally, recall)
    }

    /// Marks a boundary at an entry (pi's `compaction`, Qwen Code's `chat_compression`) at
    /// `at`, unless its id was seen before (a copy), and remembers it.
    pub(crate) fn entry_boundary(
        &mut self,
        (at, id): (At, Option<&str>),
        kind: BoundaryKind,
        pre_tokens: Option<u64>,
        recall: &mut dyn Recall,
    ) -> Result<(), RecallError> {
        if self.entry_seen(id, true, recall)? {
            return Ok(());
        }
        self.remember_entry(id, Entry::Compaction);
        self.boundary(at, kind, None, pre_tokens);
        Ok(())
    }

    /// Sets the context: the prompt of the latest request.
    pub(crate) fn context(&mut self, prompt: u64) {
        self.summary.context = Some(prompt);
    }
}
