//! What a format's reader is: the one place that knows a format's lines. The fold, format
//! detection, the default places to look and the export's per-line columns all go through
//! [`Reader`], so a new format is a reader file (and a [`Format`] variant, its
//! [`BoundaryKind`]s, its row in the reader table `readers` and its native names in `native`)
//! plus its tests. This file knows no reader: the table above the readers does.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::fold::{At, BoundaryKind, Fold, Recall, RecallError};
use super::format::{Format, Probe};
use super::json::{Text, TokenValue, parse_line};
use super::native::{Slot, SlotValues};

/// What one line says of itself, for the export (one event row per line).
#[derive(Default)]
pub(crate) struct LineFacts<'a> {
    /// Its top-level `type`.
    pub(crate) kind: Option<Cow<'a, str>>,
    /// Its `timestamp`.
    pub(crate) timestamp: Option<Cow<'a, str>>,
    /// The message key it carries (Claude Code `message.id`, pi entry `id`).
    pub(crate) message_id: Option<Cow<'a, str>>,
    /// Claude Code's `requestId`.
    pub(crate) request_id: Option<Cow<'a, str>>,
    /// The working directory it names.
    pub(crate) cwd: Option<Cow<'a, str>>,
    /// Its own usage figures, in its format's terms.
    pub(crate) figures: SlotValues,
    /// Its recorded cost, in dollars.
    pub(crate) cost: Option<f64>,
}

impl<'a> LineFacts<'a> {
    /// What a line of `kind` written at `timestamp` says, before its other fields.
    pub(crate) fn new(kind: Text<'a>, timestamp: Text<'a>) -> LineFacts<'a> {
        LineFacts {
            kind: kind.into_cow(),
            timestamp: timestamp.into_cow(),
            ..LineFacts::default()
        }
    }

    /// Puts a figure under its slot.
    pub(crate) fn set(&mut self, slot: Slot, value: Option<u64>) {
        if let Some(v) = self.figures.get_mut(slot as usize) {
            *v = value;
        }
    }

    /// The figures of a format whose fields are already the normalised ones, as
    /// [`Fold::usage`] reads them.
    pub(crate) fn usage(&mut self, [input, output, cache_creation, cache_read]: [TokenValue; 4]) {
        self.set(Slot::Input, input.known());
        self.set(Slot::Output, output.known());
        self.set(Slot::CacheCreation, cache_creation.known());
        self.set(Slot::CacheRead, cache_read.known());
    }

    /// The figures of a format whose input includes what was read from the cache and whose
    /// output includes its reasoning (Codex, Qwen Code, Gemini CLI), with its own total.
    pub(crate) fn usage_with_cached_input(
        &mut self,
        [input, cache_read, output, reasoning, total]: [Option<u64>; 5],
    ) {
        self.set(Slot::InputWithCacheRead, input);
        self.set(Slot::CacheRead, cache_read);
        self.set(Slot::Output, output);
        self.set(Slot::Reasoning, reasoning);
        self.set(Slot::Total, total);
    }
}

/// The environment the default places are found from.
pub(crate) struct Env {
    /// `$HOME`.
    pub(crate) home: Option<PathBuf>,
    /// A variable, if set and not empty.
    pub(crate) var: fn(&str) -> Option<std::ffi::OsString>,
}

impl Env {
    /// The directories a root-override variable names: a comma-separated list, as users of
    /// other usage tools already set them (`CLAUDE_CONFIG_DIR`, `GEMINI_DATA_DIR`, ...). Empty
    /// when the variable is unset or names nothing.
    pub(crate) fn dirs(&self, var: &str) -> Vec<PathBuf> {
        (self.var)(var)
            .map(|dirs| {
                dirs.to_string_lossy()
                    .split(',')
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The override variable's directories if it names any, else `$HOME/<home_dir>`; each
    /// joined with `sub` (the agent's sessions directory inside its data directory).
    pub(crate) fn data_dirs(&self, var: &str, home_dir: &str, sub: &str) -> Vec<PathBuf> {
        let mut dirs = self.dirs(var);
        if dirs.is_empty() {
            dirs.extend(self.home.as_ref().map(|h| h.join(home_dir)));
        }
        dirs.into_iter().map(|d| d.join(sub)).collect()
    }
}

/// A line being folded: where it is, the fold, and what the index remembers.
pub(crate) struct Step<'s> {
    pub(crate) fold: &'s mut Fold,
    pub(crate) at: At,
    pub(crate) recall: &'s mut dyn Recall,
}

/// A format's rules: what it is called, how its lines look, and how they count. Each reader
/// file implements this; the fold and everything else call it through [`Reader`].
pub(crate) trait Rules: Sync + 'static {
    /// The format.
    const FORMAT: Format;
    /// The boundary kinds its lines mark.
    const BOUNDARY_KINDS: &'static [BoundaryKind];

    /// The fields of a line the rules read (every one tolerant: see `json`).
    type Line<'a>: Deserialize<'a>;

    /// Whether a line, by the fields that tell the formats apart, shows this format.
    fn shows(probe: &Probe<'_>) -> bool;

    /// Whether a line can carry usage or a boundary (a quick byte search): the other lines
    /// are never parsed.
    fn may_matter(bytes: &[u8]) -> bool;

    /// The directories where the agent keeps its transcripts.
    fn roots(env: &Env) -> Vec<PathBuf>;

    /// The session and project of a transcript, from its path ([`session_in_project`] unless
    /// the format says otherwise).
    fn session(path: &Path) -> (String, String) {
        session_in_project(path)
    }

    /// Whether a `*.jsonl` file is one the agent keeps beside its transcripts that is not one
    /// (discovery leaves it out rather than report it as unreadable).
    fn not_a_transcript(_path: &Path) -> bool {
        false
    }

    /// Folds a parsed line.
    fn fold(step: &mut Step<'_>, line: &Self::Line<'_>) -> Result<(), RecallError>;

    /// What a parsed line says of itself.
    fn facts(line: Self::Line<'_>) -> LineFacts<'_>;
}

/// The session and project of a transcript by the layout most agents use: the file's stem in
/// its directory, and a Claude Code-style `<session>/subagents/agent-*.jsonl` file as part of
/// `<session>`.
pub(crate) fn session_in_project(path: &Path) -> (String, String) {
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let parent = path.parent();
    if parent
        .and_then(Path::file_name)
        .is_some_and(|n| n == "subagents")
    {
        let session_dir = parent.and_then(Path::parent);
        return (name(session_dir), name(session_dir.and_then(Path::parent)));
    }
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    (stem, name(parent))
}

/// A format's reader, as the fold, detection, discovery, the answers and the export call it.
pub(crate) trait Reader: Sync {
    /// The format it reads.
    fn format(&self) -> Format;
    /// [`Rules::shows`].
    fn detect(&self, probe: &Probe<'_>) -> bool;
    /// [`Rules::BOUNDARY_KINDS`].
    fn boundary_kinds(&self) -> &'static [BoundaryKind];
    /// [`Rules::roots`].
    fn roots(&self, env: &Env) -> Vec<PathBuf>;
    /// [`Rules::session`].
    fn session(&self, path: &Path) -> (String, String);
    /// [`Rules::not_a_transcript`].
    fn not_a_transcript(&self, path: &Path) -> bool;
    /// Folds one complete line (without its `\n`) at the step's place.
    fn fold_line(&self, step: Step<'_>, bytes: &[u8]) -> Result<(), RecallError>;
    /// What a line says of itself.
    fn facts<'a>(&self, bytes: &'a [u8]) -> LineFacts<'a>;
}

impl<R: Rules> Reader for R {
    fn format(&self) -> Format {
        R::FORMAT
    }

    fn detect(&self, probe: &Probe<'_>) -> bool {
        R::shows(probe)
    }

    fn boundary_kinds(&self) -> &'static [BoundaryKind] {
        R::BOUNDARY_KINDS
    }

    fn roots(&self, env: &Env) -> Vec<PathBuf> {
        R::roots(env)
    }

    fn session(&self, path: &Path) -> (String, String) {
        R::session(path)
    }

    fn not_a_transcript(&self, path: &Path) -> bool {
        R::not_a_transcript(path)
    }

    fn fold_line(&self, mut step: Step<'_>, bytes: &[u8]) -> Result<(), RecallError> {
        match step.fold.parse::<R::Line<'_>>(bytes, R::may_matter) {
            Some(line) => R::fold(&mut step, &line),
            None => Ok(()),
        }
    }

    fn facts<'a>(&self, bytes: &'a [u8]) -> LineFacts<'a> {
        parse_line::<R::Line<'a>>(bytes).map_or_else(LineFacts::default, R::facts)
    }
}
