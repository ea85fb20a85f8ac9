//! Claude Code subagent transcripts, and a session's lifetime counted together with them.
//!
//! A subagent (a Task tool call, the compaction summarizer) writes a transcript of its own:
//! `<project>/<session>/subagents/agent-<id>.jsonl` since Claude Code 2.1, and
//! `<project>/agent-<id>.jsonl` beside the session file before that, where the files of every
//! session of the project sit together and a file's `sessionId` says whose it is.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::claude::{merge_message, tally_of};
use super::error::TranscriptError;
use super::fold::Message;
use super::format::Format;
use super::json::{Text, parse_line};
use super::store::{OpenOptions, Transcript, open};
use super::tally::Tally;

/// How much of a v2.0 `agent-*.jsonl` is read to find its `sessionId`.
const SESSION_PROBE_BYTES: u64 = 256 << 10;

/// The subagent transcripts of the Claude Code session file `main`, in path order: those in
/// `<dir>/<session>/subagents/`, then the `agent-*.jsonl` files beside `main` whose lines name
/// its session (its file stem) as their `sessionId`.
pub fn subagent_files(main: &Path) -> std::io::Result<Vec<PathBuf>> {
    let (Some(dir), Some(session)) = (main.parent(), main.file_stem()) else {
        return Ok(Vec::new());
    };
    let mut found = agent_files(&dir.join(session).join("subagents"))?;
    let session = session.to_string_lossy();
    let mut beside: Vec<PathBuf> = agent_files(dir)?
        .into_iter()
        .filter(|p| p.as_path() != main && session_of(p).as_deref() == Some(&*session))
        .collect();
    found.append(&mut beside);
    Ok(found)
}

/// The `agent-*.jsonl` files directly in `dir`, sorted (none if `dir` does not exist).
fn agent_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let agent = path
            .file_stem()
            .is_some_and(|n| n.to_string_lossy().starts_with("agent-"));
        if agent && path.extension().is_some_and(|e| e == "jsonl") && path.is_file() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

#[derive(serde::Deserialize, Default)]
#[serde(default, bound(deserialize = "'de: 'a"))]
struct SessionProbe<'a> {
    #[serde(rename = "sessionId")]
    session_id: Text<'a>,
}

/// The first `sessionId` among a file's first lines.
fn session_of(path: &Path) -> Option<String> {
    let mut head = Vec::new();
    File::open(path)
        .ok()?
        .take(SESSION_PROBE_BYTES)
        .read_to_end(&mut head)
        .ok()?;
    head.split(|&b| b == b'\n').find_map(|line| {
        parse_line::<SessionProbe>(line)?
            .session_id
            .non_empty()
            .map(str::to_owned)
    })
}

/// A subagent transcript as read, or why it could not be.
#[derive(Debug)]
pub struct Subagent {
    /// Its path.
    pub path: PathBuf,
    /// Its answer, or the error that kept it out of the total.
    pub read: Result<Transcript, TranscriptError>,
}

/// A Claude Code session with its subagents.
#[derive(Debug)]
pub struct WithSubagents {
    /// The session file's answer.
    pub main: Transcript,
    /// Each subagent file, in [`subagent_files`] order.
    pub subagents: Vec<Subagent>,
    /// The lifetime of the session and every subagent file read, each message counted once
    /// (by the rules of one file, applied across the files: the main file first).
    pub lifetime: Tally,
}

/// Reads a Claude Code session file and its subagent files, each through its own index, and
/// counts their lifetime together. Only an error reading `main` is an error; a subagent file
/// that cannot be read is reported in [`Subagent::read`] and left out. A transcript of
/// another format has no subagents: its lifetime is returned as is.
///
/// The session's own lifetime is already merged within its file; only the ids its subagents
/// hold are merged again, so the session's messages are looked up for those ids alone (a
/// large session with small subagents reads a few keys, not all of them).
pub fn with_subagents(
    main: &Path,
    options: &OpenOptions,
) -> Result<WithSubagents, TranscriptError> {
    let plain = OpenOptions {
        load_dedup: false,
        load_ids: false,
        load_messages: Vec::new(),
        ..options.clone()
    };
    let mut main = open(main, &plain)?;
    if main.format != Format::ClaudeCode {
        let lifetime = main.summary.lifetime;
        return Ok(WithSubagents {
            main,
            subagents: Vec::new(),
            lifetime,
        });
    }
    let sub_options = OpenOptions {
        format: Some(Format::ClaudeCode),
        load_dedup: true,
        ..plain.clone()
    };
    let files = subagent_files(&main.path).map_err(|e| TranscriptError::Io {
        op: "list the subagents of",
        path: main.path.clone(),
        source: e,
    })?;
    let subagents: Vec<Subagent> = files
        .into_iter()
        .map(|path| Subagent {
            read: open(&path, &sub_options),
            path,
        })
        .collect();
    let read: Vec<&Transcript> = subagents
        .iter()
        .filter_map(|s| s.read.as_ref().ok())
        .collect();
    let mut shared: Vec<String> = read
        .iter()
        .filter_map(|t| t.dedup.as_ref())
        .flat_map(|d| d.messages.keys().cloned())
        .collect();
    shared.sort();
    shared.dedup();
    if !shared.is_empty() {
        // The session again, with its messages under the subagents' ids.
        let lookup = OpenOptions {
            format: Some(Format::ClaudeCode),
            load_messages: shared.clone(),
            ..plain
        };
        main = open(&main.path, &lookup)?;
    }
    let mut lifetime = main.summary.lifetime;
    for transcript in &read {
        lifetime.add(&transcript.summary.unkeyed);
    }
    let main_messages = main.dedup.as_ref().map(|d| &d.messages);
    for id in &shared {
        let mut merged: Vec<Message> = Vec::new();
        for message in main_messages.and_then(|m| m.get(id)).into_iter().flatten() {
            // Counted in the session's lifetime: taken out, and counted again merged.
            lifetime.sub(&tally_of(&message.usage));
            merge_message(&mut merged, message);
        }
        for transcript in &read {
            let messages = transcript.dedup.as_ref().and_then(|d| d.messages.get(id));
            for message in messages.into_iter().flatten() {
                merge_message(&mut merged, message);
            }
        }
        for message in &merged {
            lifetime.add(&tally_of(&message.usage));
        }
    }
    Ok(WithSubagents {
        main,
        subagents,
        lifetime,
    })
}
