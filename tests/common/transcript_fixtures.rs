//! The vendored real transcripts (tests/data/transcripts), copied to temp dirs before use.
// Each test crate uses some of the helpers; a helper that fails fails the test calling it.
#![allow(dead_code, clippy::expect_used)]

use std::path::{Path, PathBuf};

use agentlog::transcript::Format;

/// The directory of the vendored transcripts.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transcripts")
}

/// Every vendored transcript (subagent files included) with its format, in a stable order.
pub fn all() -> Vec<(PathBuf, Format)> {
    let mut out = Vec::new();
    for (dir, format) in [
        ("claude-code", Format::ClaudeCode),
        ("codex", Format::Codex),
        ("pi", Format::Pi),
        ("copilot", Format::Copilot),
        ("gemini", Format::Gemini),
        ("qwen", Format::Qwen),
        ("kimi", Format::Kimi),
    ] {
        let mut stack = vec![data_dir().join(dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixture dir") {
                let path = entry.expect("fixture entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    out.push((path, format));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 24, "the vendored transcripts are missing");
    out
}

/// The vendored older single-JSON Gemini CLI sessions (read as documents), in a stable order.
pub fn gemini_documents() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(data_dir().join("gemini"))
        .expect("fixture dir")
        .map(|e| e.expect("fixture entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    out.sort();
    assert_eq!(
        out.len(),
        4,
        "the vendored Gemini CLI documents are missing"
    );
    out
}

/// A copy of `path` in a fresh temp dir (with the same file name); the dir is returned too.
pub fn copy_to_temp(path: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let to = dir.path().join(path.file_name().expect("file name"));
    std::fs::copy(path, &to).expect("copy fixture");
    (dir, to)
}
