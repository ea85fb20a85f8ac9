//! Which files a usage report reads: the places the agents keep their transcripts, every
//! `*.jsonl` file under the paths given, and the session and project a file belongs to.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::Skipped;
use crate::transcript::error::TranscriptError;
use crate::transcript::format::Format;
use crate::transcript::gemini::is_session_document;
use crate::transcript::reader::Env;
use crate::transcript::readers::{reader, readers};

/// An environment variable, if set and not empty.
fn var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The places the agents keep their transcripts, those that exist, each once: for Claude
/// Code `<dir>/projects` for each directory of the comma-separated `$CLAUDE_CONFIG_DIR`,
/// `~/.claude/projects` and `~/.config/claude/projects`; for Codex
/// `${CODEX_HOME:-~/.codex}/sessions`; for pi `~/.pi/agent/sessions`; for Gemini CLI
/// `<dir>/tmp` for each directory of `$GEMINI_DATA_DIR`, else `~/.gemini/tmp`; for Qwen Code
/// `<dir>/projects` for each directory of `$QWEN_DATA_DIR`, else `~/.qwen/projects`; for Kimi Code
/// `<dir>/sessions` for each directory of `${KIMI_DATA_DIR:-~/.kimi}` and
/// `~/.kimi-code/sessions`.
pub fn default_roots() -> Vec<PathBuf> {
    let env = Env {
        home: var("HOME").map(PathBuf::from),
        var,
    };
    let mut seen = Vec::new();
    let mut roots: Vec<PathBuf> = readers().iter().flat_map(|r| r.roots(&env)).collect();
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

/// `paths`, or the agents' default places ([`default_roots`]) when none are given.
pub fn roots_or_default(paths: &[PathBuf]) -> Vec<PathBuf> {
    if paths.is_empty() {
        default_roots()
    } else {
        paths.to_vec()
    }
}

/// [`discover`], the files read line by line only: no `OpenCode` database or storage file and
/// no older Gemini CLI session document (search, the export and the viewer read lines).
pub fn discover_lines(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Skipped>) {
    let (files, skipped) = discover(paths);
    let lines = files.into_iter().filter(|f| read_by_lines(f)).collect();
    (lines, skipped)
}

/// Whether a file [`discover`] found is read line by line: not an `OpenCode` database or
/// storage file, not an older Gemini CLI session document.
pub fn read_by_lines(file: &Path) -> bool {
    !crate::transcript::opencode::wanted(file) && !is_session_document(file)
}

/// Every `*.jsonl` file (and Gemini CLI `chats/session-*.json` document, `OpenCode` database or
/// older message file) under `paths` (a file is taken as it is) but those an agent keeps beside
/// its transcripts that are not ones (Kimi's `context*.jsonl`), canonical, sorted, each
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
    sort_paths(&mut files);
    (files, skipped)
}

/// The order transcripts are listed in: [`Path`]'s, component by component (`a/b.jsonl` after
/// `a/b/c.jsonl`, a subagent's file after its session's folder), compared as bytes with the
/// separator taken as the lowest byte. For paths without `.` components or doubled
/// separators, which is what discovery yields, the two orders are one, and this one parses no
/// components: sorting thousands of paths is a large part of a warm run.
pub(crate) fn path_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let rank = |c: u8| if c == b'/' { 0 } else { u16::from(c) + 1 };
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => rank(a[i]).cmp(&rank(b[i])),
        None => a.len().cmp(&b.len()),
    }
}

/// Sorts paths in [`path_order`], each once.
pub(crate) fn sort_paths(paths: &mut Vec<PathBuf>) {
    fn bytes(p: &Path) -> &[u8] {
        p.as_os_str().as_bytes()
    }
    paths.sort_unstable_by(|a, b| path_order(bytes(a), bytes(b)));
    paths.dedup_by(|a, b| bytes(a) == bytes(b));
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
        let wanted = (path.extension().is_some_and(|e| e == "jsonl")
            && !readers().iter().any(|r| r.not_a_transcript(&path)))
            || is_session_document(&path)
            || crate::transcript::opencode::wanted(&path);
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, files, skipped),
            Ok(t) if t.is_file() && wanted => files.push(path),
            Ok(t) if t.is_symlink() && wanted && path.is_file() => {
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
    reader(format).session(path)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use proptest::prelude::*;

    use super::{path_order, sort_paths};

    /// Absolute paths without `.` components or doubled separators, from names that hold the
    /// bytes either side of the separator (`-`, `.`, `0`) so that the separator's rank counts.
    fn canonical() -> impl Strategy<Value = PathBuf> {
        let name = proptest::string::string_regex("[a-c.0-]{1,4}")
            .unwrap_or_else(|e| panic!("the pattern: {e}"))
            .prop_filter("no . or .. component", |n| n != "." && n != "..");
        proptest::collection::vec(name, 1..5).prop_map(|names| {
            let mut path = PathBuf::from("/");
            path.extend(names);
            path
        })
    }

    #[test]
    fn a_subagent_file_sorts_after_its_session_folder() {
        let mut paths = vec![
            PathBuf::from("/p/s.jsonl"),
            PathBuf::from("/p/s/subagents/agent-1.jsonl"),
            PathBuf::from("/p/s.jsonl"),
            PathBuf::from("/p/s-2.jsonl"),
        ];
        sort_paths(&mut paths);
        let want = ["/p/s/subagents/agent-1.jsonl", "/p/s-2.jsonl", "/p/s.jsonl"];
        assert_eq!(paths, want.map(PathBuf::from));
    }

    proptest! {
        /// The byte order is `Path`'s order, and sorting keeps each path once.
        #[test]
        fn byte_order_is_path_order(paths in proptest::collection::vec(canonical(), 0..40)) {
            use std::os::unix::ffi::OsStrExt;
            for a in &paths {
                for b in &paths {
                    let got = path_order(a.as_os_str().as_bytes(), b.as_os_str().as_bytes());
                    prop_assert_eq!(got, a.as_path().cmp(b.as_path()), "{:?} {:?}", a, b);
                }
            }
            let mut sorted = paths.clone();
            sort_paths(&mut sorted);
            let mut naive = paths;
            naive.sort();
            naive.dedup();
            prop_assert_eq!(sorted, naive);
        }
    }
}
