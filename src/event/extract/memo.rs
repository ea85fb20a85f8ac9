//! What the fast path remembers of the previous line, so that the next line's byte-identical
//! repeats are stepped over instead of parsed again.
//!
//! Runtimes write the same envelope on every line: lingtai repeats `address`, `agent_name`,
//! `kernel_version`, `kernel_runtime_stamp` and the five-member `kernel_runtime` object (about
//! 235 of a line's 300-560 bytes and half its strings); Claude Code repeats `cwd`, `sessionId`,
//! `version` and `gitBranch`. None of those keys is one the index reads.
//!
//! The memo keeps the previous line's top-level members, each as the span from its start to
//! the start of the next member (so it takes in the comma after it), and whether the index
//! ignores its key. At the start of the line's k-th member, if the previous line's k-th
//! member was ignored, the fast path compares the bytes here with that member and the ignored
//! members after it, and steps over the ones that are equal.
//!
//! Why that is exact: the cursor's walk over a member and its comma depends only on those
//! bytes and on where it starts (the top level of an object, at a member's start), never on
//! what came before. The previous line's walk found those same bytes, from that same place, to
//! be valid members, each followed by a comma, with keys the index ignores (no escapes in
//! them, or the fast path would have given up) and so leaving the fields untouched. Walking them
//! again would end at the same place having changed nothing but the cursor's note of non-ASCII
//! bytes, and that note is not needed for them: only a line the fast path read in full, UTF-8
//! check included, is remembered, and a span of valid UTF-8 that starts and ends at ASCII
//! bytes (as members do) is valid UTF-8 itself.

use std::sync::Arc;

use super::{Key, KeyTable};

/// The previous line's top-level members, for [`Extractor::extract_with_memo`].
///
/// [`Extractor::extract_with_memo`]: super::Extractor::extract_with_memo
#[derive(Clone, Debug, Default)]
pub struct LineMemo {
    /// The key table of the extractor that filled the memo: which keys it ignores is its
    /// profile's to say, so another extractor starts the memo afresh.
    keys: Option<Arc<KeyTable>>,
    /// The last line the fast path read in full, up to the end of its last noted member.
    line: Vec<u8>,
    /// Its top-level members, in order.
    members: Vec<Member>,
    /// The members of the line being read.
    reading: Vec<Member>,
}

/// One top-level member of a remembered line.
#[derive(Clone, Copy, Debug)]
struct Member {
    /// Where the member starts (any whitespace before its key included).
    start: usize,
    /// Where the next member starts: just after the comma and any whitespace after it.
    next: usize,
    /// Whether its key is one the index ignores, so the member may be stepped over.
    ignored: bool,
    /// The last member of the run of ignored members this one starts (itself if it is not
    /// ignored); filled when the line is remembered.
    run_last: usize,
}

/// Members of the remembered line stepped over in the line being read.
pub(super) struct Repeated {
    /// Where the next member starts in the line being read.
    pub next: usize,
    /// How many members were stepped over.
    pub count: usize,
}

impl LineMemo {
    /// A memo that remembers nothing yet.
    pub fn new() -> LineMemo {
        LineMemo::default()
    }

    /// Starts reading a line with the extractor whose key table is `keys`.
    pub(super) fn begin(&mut self, keys: &Arc<KeyTable>) {
        self.reading.clear();
        if !self
            .keys
            .as_ref()
            .is_some_and(|mine| Arc::ptr_eq(mine, keys))
        {
            self.keys = Some(Arc::clone(keys));
            self.members.clear();
            self.line.clear();
        }
    }

    /// Steps over the remembered members that `line` repeats at `at`, where its `ordinal`-th
    /// member starts, and notes them as members of this line.
    #[inline]
    pub(super) fn repeat(&mut self, ordinal: usize, line: &[u8], at: usize) -> Option<Repeated> {
        let first = *self.members.get(ordinal)?;
        if !first.ignored {
            return None;
        }
        // Positions in the remembered line map to this one by one shift.
        let here = |remembered: usize| at + (remembered - first.start);
        let same = |from: usize, to: usize| {
            let theirs = self.line.get(from..to);
            theirs.is_some() && line.get(here(from)..here(to)) == theirs
        };
        let mut last = first.run_last;
        let run_end = self.members.get(last)?.next;
        if !same(first.start, run_end) {
            // Not the whole run: as many whole members as match.
            let mut matched = None;
            for (k, member) in self.members.get(ordinal..last)?.iter().enumerate() {
                if !same(member.start, member.next) {
                    break;
                }
                matched = Some(ordinal + k);
            }
            last = matched?;
        }
        let stepped = self.members.get(ordinal..=last)?;
        let next = here(stepped.last()?.next);
        for member in stepped {
            self.reading.push(Member {
                start: here(member.start),
                next: here(member.next),
                ..*member
            });
        }
        Some(Repeated {
            next,
            count: stepped.len(),
        })
    }

    /// Notes a member of the line being read that the cursor walked: `start..next` (comma
    /// included), under `key`.
    #[inline]
    pub(super) fn walked(&mut self, start: usize, next: usize, key: Key) {
        self.reading.push(Member {
            start,
            next,
            ignored: key == Key::Other,
            run_last: 0,
        });
    }

    /// Remembers `line`, whose members were all noted and which the fast path read in full.
    pub(super) fn remember(&mut self, line: &[u8]) {
        // Only noted members are ever compared, and the last member (often the longest, as a
        // tool result's text) is never noted: it has no comma after it.
        let noted = self.reading.last().map_or(0, |m| m.next);
        self.line.clear();
        self.line
            .extend_from_slice(line.get(..noted).unwrap_or(line));
        std::mem::swap(&mut self.members, &mut self.reading);
        self.reading.clear();
        // Each run of ignored members ends at its last one.
        let mut run_last = None;
        for (i, member) in self.members.iter_mut().enumerate().rev() {
            member.run_last = if member.ignored {
                *run_last.get_or_insert(i)
            } else {
                run_last = None;
                i
            };
        }
    }
}
