//! A transcript that is one JSON document rather than lines (Gemini CLI's older
//! `session-*.json`): the agent rewrites it whole on every change, so it has no appended tail
//! to catch up on. It is read whole on every open, without an index: its messages are folded
//! as lines by its reader's rules (docs/TRANSCRIPTS.md, "Gemini CLI").

use std::path::Path;

use super::answer::{answer, folded, not_writable};
use super::source::Source;
use super::{OpenOptions, Transcript};
use crate::index::IndexOutcome;
use crate::log::{Coverage, read_exact_at};
use crate::transcript::error::TranscriptError;
use crate::transcript::fold::Fold;
use crate::transcript::format::Format;
use crate::transcript::gemini::document_lines;

/// The largest document read (larger ones are refused, not read into memory).
const MAX_DOCUMENT: u64 = 512 << 20;

/// Whether `path`, read as `format` (or detected), is a document.
pub(super) fn is_document(path: &Path, format: Option<Format>) -> bool {
    matches!(format, None | Some(Format::Gemini)) && crate::transcript::gemini::is_document(path)
}

/// Reads a document whole and answers from a fold of its messages.
pub(super) fn open(path: &Path, options: &OpenOptions) -> Result<Transcript, TranscriptError> {
    let source = Source::document(path, Format::Gemini)?;
    let refuse = |detail: String| TranscriptError::NotADocument {
        path: source.path.clone(),
        detail,
    };
    if source.len > MAX_DOCUMENT {
        return Err(refuse(format!("larger than {MAX_DOCUMENT} bytes")));
    }
    let mut bytes = vec![0; usize::try_from(source.len).unwrap_or(0)];
    if !read_exact_at(&source.file, &mut bytes, 0)
        .map_err(|e| TranscriptError::io("read", &source.path, e))?
    {
        return Err(refuse("it shrank while being read".to_owned()));
    }
    let lines = document_lines(&bytes).map_err(refuse)?;
    let mut fold = Fold::new(Format::Gemini);
    for line in lines {
        // Offsets are the document's start: a message has no place of its own in the file.
        fold.line(0, line);
    }
    let crc = crc32fast::hash(&bytes);
    let coverage = Coverage::measure(&source.file, source.len, crc)
        .map_err(|e| TranscriptError::io("read", &source.path, e))?
        .ok_or_else(|| refuse("it shrank while being read".to_owned()))?;
    let outcome = IndexOutcome::ReadOnly {
        why: not_writable("a single-JSON session is read whole, without an index"),
        tail_bytes: source.len,
        tail_events: fold.summary.lines,
    };
    Ok(answer(
        &source,
        None,
        folded(fold, coverage, options),
        outcome,
    ))
}
