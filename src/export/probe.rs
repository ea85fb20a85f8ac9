//! Which files are transcripts, and the `source_id` each one exports under
//! (`docs/EXPORT.md`, "Transcripts").

use std::fs::File;
use std::path::Path;

use super::error::ExportError;
use crate::transcript::detect_format;

/// How much of a file's start is read to tell whether it is a transcript.
const PROBE_BYTES: u64 = 1 << 20;

/// What a `.jsonl` file is, from its first complete lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A transcript of this format.
    Transcript,
    /// No complete line yet: a transcript with nothing to export so far.
    Empty,
    /// Complete lines, none of which looks like a transcript.
    Other,
}

/// Tells from its first complete lines whether `path` is a transcript.
pub fn probe(path: &Path) -> Result<Probe, ExportError> {
    use std::io::Read;
    let file = File::open(path).map_err(|e| ExportError::io("open", path, e))?;
    let mut head = Vec::new();
    file.take(PROBE_BYTES)
        .read_to_end(&mut head)
        .map_err(|e| ExportError::io("read", path, e))?;
    let lines = head
        .split_inclusive(|&b| b == b'\n')
        .filter_map(|line| line.strip_suffix(b"\n"));
    if memchr::memchr(b'\n', &head).is_none() {
        return Ok(Probe::Empty);
    }
    Ok(match detect_format(lines) {
        Some(_) => Probe::Transcript,
        None => Probe::Other,
    })
}

/// The `source_id` of a transcript: its session id as `agentlog usage` names it (the file's
/// stem; for a GitHub Copilot CLI `<session>/events.jsonl`, its directory's name), and for a
/// Claude Code subagent file (`<session>/subagents/<agent>.jsonl`) the parent session's id and
/// the file's stem, `<session>/<agent>`, so each file is its own source.
pub fn transcript_id(path: &Path) -> String {
    if path.file_name().is_some_and(|n| n == "events.jsonl")
        && let Some(dir) = path.parent().and_then(Path::file_name)
    {
        return dir.to_string_lossy().into_owned();
    }
    let stem = stem(path);
    match subagent_parent(path) {
        Some(parent) => format!("{parent}/{stem}"),
        None => stem,
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}

/// The parent session of a subagent file, by its place in the tree.
pub fn subagent_parent(path: &Path) -> Option<String> {
    let parent = path.parent()?;
    if parent.file_name()? != "subagents" {
        return None;
    }
    let session_dir = parent.parent()?;
    Some(session_dir.file_name()?.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subagent_file_is_named_under_its_session() {
        assert_eq!(
            transcript_id(Path::new("/p/s/subagents/agent-1.jsonl")),
            "s/agent-1"
        );
        assert_eq!(transcript_id(Path::new("/p/proj/abc.jsonl")), "abc");
        assert_eq!(
            transcript_id(Path::new("/h/.copilot/session-state/s1/events.jsonl")),
            "s1"
        );
    }
}
