//! seq → event, stored as runs ([`SEQ_RUNS`](super::schema::SEQ_RUNS)): consecutive seqs on
//! consecutive events are one row, so a log whose seqs count up (explicit seqs, or the line
//! ordinals that stand in for them) needs one row however long it grows. The one owner of how runs are formed, written
//! and read.
//!
//! The first event with a seq keeps it; a later event with a seq some run already holds is a
//! duplicate (counted in [`SeqState::duplicates`]) and ends the open run. The state in
//! [`SeqState`] travels with the meta record, so a commit continues the runs exactly as a
//! rebuild would.

use std::ops::Bound;

use redb::{AccessGuard, ReadOnlyTable, ReadableTable, Table};

use super::schema::{SeqRun, SeqState};

/// Maps the seqs of `events` (seq, event ordinal: in file order, continuing `state`) into
/// `table`, updating `state`. The open run is stored too, so the table is complete at every
/// commit.
pub(crate) fn write(
    table: &mut Table<'_, u64, (u64, u64)>,
    events: impl IntoIterator<Item = (u64, u64)>,
    state: &mut SeqState,
) -> Result<(), redb::Error> {
    for (seq, event) in events {
        // A seq above every earlier one cannot be held by a run: the usual case, no lookup.
        let maybe_held = state.max.is_some_and(|max| seq <= max);
        if maybe_held && held(table, state.open, seq)? {
            state.duplicates = state.duplicates.saturating_add(1);
            if let Some(run) = state.open.take() {
                store(table, run)?;
            }
            continue;
        }
        state.max = Some(state.max.map_or(seq, |max| max.max(seq)));
        match &mut state.open {
            Some(run)
                if run.start.checked_add(run.len) == Some(seq)
                    && run.event.checked_add(run.len) == Some(event) =>
            {
                run.len += 1;
            }
            open => {
                if let Some(run) = open.take() {
                    store(table, run)?;
                }
                *open = Some(SeqRun {
                    start: seq,
                    event,
                    len: 1,
                });
            }
        }
    }
    if let Some(run) = state.open {
        store(table, run)?;
    }
    Ok(())
}

fn store(table: &mut Table<'_, u64, (u64, u64)>, run: SeqRun) -> Result<(), redb::Error> {
    table.insert(run.start, (run.event, run.len))?;
    Ok(())
}

/// Whether a run holds `seq`: the open one (whose stored row may be shorter) or a stored one.
fn held(
    table: &Table<'_, u64, (u64, u64)>,
    open: Option<SeqRun>,
    seq: u64,
) -> Result<bool, redb::Error> {
    if open.is_some_and(|run| run.covers(seq)) {
        return Ok(true);
    }
    Ok(match table.range(..=seq)?.next_back() {
        Some(row) => stored(row?).covers(seq),
        None => false,
    })
}

/// The run a stored row holds.
fn stored((start, value): (AccessGuard<'_, u64>, AccessGuard<'_, (u64, u64)>)) -> SeqRun {
    let (event, len) = value.value();
    SeqRun {
        start: start.value(),
        event,
        len,
    }
}

/// The runs holding any seq in `from..=to`, in seq order, each cut to that range. A stored
/// run that is empty or reaches past the largest seq or event ordinal is damage.
pub(crate) fn runs_within(
    table: &ReadOnlyTable<u64, (u64, u64)>,
    from: u64,
    to: u64,
) -> Result<Vec<SeqRun>, redb::Error> {
    let mut out = Vec::new();
    if from > to {
        return Ok(out);
    }
    // The run starting before `from` may reach into the range.
    let before = table.range(..from)?.next_back().transpose()?;
    let starting = table.range((Bound::Included(from), Bound::Included(to)))?;
    for row in before.into_iter().map(Ok).chain(starting) {
        let run = stored(row?);
        // A run holds at least one seq, and its seqs and events stay within u64.
        let last = run.len.checked_sub(1);
        let whole = last.is_some_and(|last| {
            run.start.checked_add(last).is_some() && run.event.checked_add(last).is_some()
        });
        if !whole {
            return Err(redb::Error::Corrupted(format!(
                "the seq run at {} is out of range",
                run.start
            )));
        }
        if let Some(cut) = cut(run, from, to) {
            out.push(cut);
        }
    }
    Ok(out)
}

/// The part of `run` inside `from..=to`, if any.
fn cut(run: SeqRun, from: u64, to: u64) -> Option<SeqRun> {
    let last = run.start.checked_add(run.len.checked_sub(1)?)?;
    let (first, last) = (run.start.max(from), last.min(to));
    if first > last {
        return None;
    }
    Some(SeqRun {
        start: first,
        event: run.event.checked_add(first - run.start)?,
        len: last - first + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_keeps_seqs_and_events_in_step() {
        let run = SeqRun {
            start: 10,
            event: 100,
            len: 5,
        };
        assert_eq!(
            cut(run, 12, 20),
            Some(SeqRun {
                start: 12,
                event: 102,
                len: 3
            })
        );
        assert_eq!(cut(run, 0, 9), None);
        assert_eq!(cut(run, 15, 20), None);
        assert_eq!(cut(run, 0, u64::MAX), Some(run));
        let empty = SeqRun { len: 0, ..run };
        assert_eq!(cut(empty, 0, u64::MAX), None);
        let top = SeqRun {
            start: u64::MAX,
            event: 0,
            len: 1,
        };
        assert_eq!(cut(top, 0, u64::MAX), Some(top));
    }
}
