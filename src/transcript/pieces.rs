//! A transcript folded as its index folds it across catch-ups, in memory: after each piece the
//! touched dedup entries are encoded as the index stores them, and the next piece resumes from
//! the summary alone, recalling entries through their encoding. Test-only surface (the
//! `testing` feature), for fuzzing and tests: it must equal one fold of the whole.

use std::collections::HashMap;

use super::fold::{BucketKey, Fold, Message, Recall, RecallError, Span, Summary, widen_span};
use super::format::Format;
use super::store::schema::{decode, encode, encode_messages, encode_tally};
use super::tally::Tally;

/// Rows as the index holds them: encoded values by key.
#[derive(Default)]
struct Rows {
    keys: HashMap<String, Vec<u8>>,
    buckets: HashMap<BucketKey, Vec<u8>>,
    marks: HashMap<String, Vec<u8>>,
}

/// A row's value decoded, if there is a row (a `what` row that does not decode is an error).
fn row<T: serde::de::DeserializeOwned>(
    value: Option<&Vec<u8>>,
    what: &str,
) -> Result<Option<T>, RecallError> {
    value
        .map(|v| decode(v).ok_or_else(|| RecallError(format!("a damaged {what} row"))))
        .transpose()
}

impl Recall for Rows {
    fn messages(&mut self, id: &str) -> Result<Option<Vec<Message>>, RecallError> {
        row(self.keys.get(id), "message")
    }

    fn seen(&mut self, id: &str) -> Result<bool, RecallError> {
        Ok(self.keys.contains_key(id))
    }

    fn bucket(&mut self, key: BucketKey) -> Result<Option<Tally>, RecallError> {
        row(self.buckets.get(&key), "bucket")
    }

    fn marked(&mut self, uuid: &str) -> Result<bool, RecallError> {
        Ok(self.marks.contains_key(uuid))
    }
}

/// What [`fold_in_pieces`] ends with.
#[derive(Debug, PartialEq)]
pub struct Pieces {
    /// The summary after the last piece.
    pub summary: Summary,
    /// Every bucket's tally, sorted by key.
    pub buckets: Vec<(BucketKey, Tally)>,
    /// How many key rows were stored.
    pub keys: usize,
    /// Every quarter-hour's span of times, sorted by quarter-hour.
    pub spans: Vec<(i64, Span)>,
}

/// Folds `bytes` in pieces ending at each of `cuts` (any byte positions, sorted or not; a cut
/// inside a line leaves it torn until a later piece completes it), committing between pieces
/// as the index does.
pub fn fold_in_pieces(format: Format, bytes: &[u8], cuts: &[usize]) -> Result<Pieces, String> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(bytes.len())).collect();
    cuts.push(bytes.len());
    cuts.sort_unstable();
    let mut rows = Rows::default();
    let mut summary = Summary::new(format);
    let mut spans = HashMap::new();
    let mut end = 0usize;
    for cut in cuts {
        let mut fold = Fold::resume(encode_round_trip(&summary)?);
        let visible = bytes.get(..cut).unwrap_or_default();
        while let Some(i) = visible
            .get(end..)
            .and_then(|rest| memchr::memchr(b'\n', rest))
        {
            let line = visible.get(end..end + i).unwrap_or_default();
            fold.line_with(end as u64, line, &mut rows)
                .map_err(|e| e.0)?;
            end += i + 1;
        }
        for (id, messages) in &fold.dedup.messages {
            rows.keys.insert(id.clone(), encode_messages(messages));
        }
        for (id, entry) in &fold.dedup.entries {
            rows.keys.insert(id.clone(), encode(entry));
        }
        for (key, tally) in &fold.dedup.buckets {
            rows.buckets.insert(*key, encode_tally(tally));
        }
        for uuid in &fold.dedup.marks {
            rows.marks.insert(uuid.clone(), encode(&()));
        }
        // Each piece notes its own lines' times, widened into what the index holds.
        for (&quarter, &span) in &fold.dedup.spans {
            widen_span(&mut spans, quarter, span);
        }
        summary = fold.summary;
        if rows.keys.len() as u64 != summary.keys
            || rows.buckets.len() as u64 != summary.buckets
            || rows.marks.len() as u64 != summary.marks
        {
            return Err("the row counts disagree with the summary".to_owned());
        }
    }
    let mut buckets = Vec::new();
    for (key, value) in &rows.buckets {
        buckets.push((*key, decode::<Tally>(value).ok_or("a damaged bucket row")?));
    }
    buckets.sort_by_key(|(k, _)| *k);
    Ok(Pieces {
        summary,
        buckets,
        keys: rows.keys.len(),
        spans: sorted(spans),
    })
}

/// The summary as the meta record stores it, read back.
fn encode_round_trip(summary: &Summary) -> Result<Summary, String> {
    decode(&encode(summary)).ok_or_else(|| "the summary does not survive its encoding".to_owned())
}

/// The same, in one fold: what [`fold_in_pieces`] must equal.
pub fn fold_at_once(format: Format, bytes: &[u8]) -> Pieces {
    let fold = super::read::fold_bytes(format, bytes);
    let mut buckets: Vec<(BucketKey, Tally)> = fold.buckets().map(|(k, t)| (k, *t)).collect();
    buckets.sort_by_key(|(k, _)| *k);
    let keys = fold.dedup.messages.len() + fold.dedup.entries.len();
    Pieces {
        summary: fold.summary,
        buckets,
        keys,
        spans: sorted(fold.dedup.spans),
    }
}

fn sorted(spans: HashMap<i64, Span>) -> Vec<(i64, Span)> {
    let mut out: Vec<(i64, Span)> = spans.into_iter().collect();
    out.sort_unstable_by_key(|(q, _)| *q);
    out
}
