//! The two scan tiers: a bounded reverse scan of the log's tail and a full forward scan. Both
//! use the same extractor, coercion and fold as the index, so all tiers agree exactly.

use std::fs::File;
use std::io;

use crate::event::{
    Boundary, Diagnostics, EventKind, Extractor, FoldState, Folder, LineMemo, LineProblem, Totals,
};
use crate::log::{Line, LineScanner, bytes_unchanged, read_exact_at};

/// What a tier found about the current generation: the latest boundary in file order and the
/// totals of the token events after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerationView {
    /// The latest boundary, or `None` if the log has none.
    pub boundary: Option<Boundary>,
    /// Totals since the boundary (since the start of the log without one).
    pub since: Totals,
    /// Bytes of the log read to answer.
    pub bytes_read: u64,
    /// Odd lines among those examined.
    pub diagnostics: Diagnostics,
}

impl GenerationView {
    /// The view given by a fold over the whole log.
    pub fn from_state(state: &FoldState) -> GenerationView {
        GenerationView {
            boundary: state.latest.as_ref().map(|start| start.boundary.clone()),
            since: state.since_latest(),
            bytes_read: state.end,
            diagnostics: state.diagnostics.clone(),
        }
    }
}

/// Folds the complete lines of the whole log (as long as it was when the scan started).
///
/// # Errors
///
/// I/O errors, and `shrank` if the log got shorter while it was read (truncated or
/// rewritten under us): an answer from a prefix of the old bytes would be no answer at all.
pub fn full_scan(log: &File, extractor: Extractor, max_line: usize) -> io::Result<FoldState> {
    let mut folder = Folder::new(extractor, FoldState::default());
    scan_whole(log, max_line, |line| match line {
        Line::Complete { offset, bytes } => {
            folder.fold_line(offset, bytes);
        }
        Line::TooLong { offset, len } => folder.fold_too_long(offset, len),
    })?;
    Ok(folder.into_state())
}

/// Calls `each` for every complete line of the log as long as it was at the start, then checks
/// that the log did not shrink meanwhile.
pub(crate) fn scan_whole(
    log: &File,
    max_line: usize,
    mut each: impl FnMut(Line<'_>),
) -> io::Result<()> {
    let limit = log.metadata()?.len();
    let mut scanner = LineScanner::new(log, 0, limit, max_line, 0);
    while let Some(line) = scanner.next_line()? {
        each(line);
    }
    if log.metadata()?.len() < limit {
        return Err(shrank());
    }
    // A log truncated and rewritten in place while it was read (as `>` does) can be as long as
    // before, and the lines read stitched from two versions: the bytes must still be the ones
    // folded (docs/DECISIONS.md, "The scans refuse what a rewrite could stitch").
    let (end, crc) = (scanner.end(), scanner.crc());
    if !bytes_unchanged(log, (0, 0), end, crc)? {
        return Err(rewritten());
    }
    Ok(())
}

/// The error of a scan whose log's bytes changed while it was being read.
fn rewritten() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the log was rewritten while it was being read (its bytes changed); ask again",
    )
}

/// The error of a scan whose log got shorter while it was being read.
pub fn shrank() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the log shrank while it was being read (truncated or rewritten); ask again",
    )
}

/// Reads at most the last `window` bytes of the log and walks its complete lines newest first,
/// summing token events until the latest boundary. `None` if the window holds no boundary and
/// does not reach the start of the log: only a full scan can answer then.
pub fn reverse_scan(
    log: &File,
    window: u64,
    extractor: &Extractor,
    max_line: usize,
) -> io::Result<Option<GenerationView>> {
    let len = log.metadata()?.len();
    let start = len.saturating_sub(window);
    // One byte more than the window tells whether the window starts on a line start.
    let read_from = start.saturating_sub(1);
    let mut buf = vec![0; usize::try_from(len - read_from).unwrap_or(usize::MAX)];
    if !read_exact_at(log, &mut buf, read_from)? {
        // Truncated while we read; whatever is there now is a different question.
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the log shrank during the reverse scan",
        ));
    }
    // The first byte of `buf` is the one before the window (when there is one).
    let window_bytes = if start > 0 { &buf[1..] } else { &buf[..] };
    let starts_on_line = start == 0 || buf.first() == Some(&b'\n');
    // Complete lines end at the last `\n`: anything after it is a torn tail, never read.
    let Some(last_newline) = memchr::memrchr(b'\n', window_bytes) else {
        let mut view = GenerationView::empty();
        view.bytes_read = buf.len() as u64;
        return Ok(whole_log(start, view));
    };
    let mut region = &window_bytes[..last_newline];
    // The first line is partial unless the window starts on a line start.
    let first_line_start = if starts_on_line {
        0
    } else {
        match memchr::memchr(b'\n', region) {
            Some(i) => i + 1,
            None => return Ok(None),
        }
    };
    let mut view = GenerationView::empty();
    view.bytes_read = buf.len() as u64;
    let profile = extractor.profile();
    let mut memo = LineMemo::new();
    loop {
        let line_start = memchr::memrchr(b'\n', region).map_or(0, |i| i + 1);
        if line_start < first_line_start {
            break;
        }
        let line = &region[line_start..];
        let offset = start + line_start as u64;
        if line.len() > max_line {
            view.diagnostics.note_invalid(offset, LineProblem::TooLong);
        } else {
            match extractor.extract_with_memo(&mut memo, line) {
                Err(problem) => view.diagnostics.note_invalid(offset, problem),
                Ok(fields) => match fields.kind(profile, offset == 0) {
                    EventKind::Token => {
                        view.diagnostics.note_tokens(&fields.tokens);
                        view.since.add_event(&fields.tokens);
                    }
                    EventKind::Boundary => {
                        view.boundary = Some(Boundary::from_fields(offset, &fields));
                        return Ok(Some(view));
                    }
                    EventKind::Header | EventKind::Other => {}
                },
            }
        }
        if line_start == 0 {
            break;
        }
        region = &region[..line_start - 1];
    }
    Ok(whole_log(start, view))
}

/// Without a boundary, a window that covers the whole log still answers ("never molted").
fn whole_log(start: u64, view: GenerationView) -> Option<GenerationView> {
    (start == 0).then_some(view)
}

impl GenerationView {
    fn empty() -> GenerationView {
        GenerationView {
            boundary: None,
            since: Totals::default(),
            bytes_read: 0,
            diagnostics: Diagnostics::default(),
        }
    }
}
