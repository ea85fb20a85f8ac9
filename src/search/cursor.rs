//! Cursors: where the next page starts, bound to one index, one request and one state of the
//! sessions searched (docs/SEARCH.md, "Pages and cursors").
//!
//! A cursor is base64url (no padding) of the JSON
//! `{"version":1,"instance":..,"scope":..,"fingerprint":..,"generation":..,"offset":..}`. The
//! instance is the index's own id, kept in the index file, so a cursor pages across processes;
//! the fingerprint is the normalized request; the generation is the state of what was searched.

use serde::{Deserialize, Serialize};

use crate::search::error::SearchError;

/// The cursor format version.
const VERSION: u64 = 1;
/// The largest offset a cursor may carry (a JSON safe integer).
const MAX_OFFSET: u64 = (1 << 53) - 1;

/// What a cursor says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cursor {
    /// Always 1.
    pub version: u64,
    /// The id of the index that made it.
    pub instance: String,
    /// `sessions` or `events`.
    pub scope: String,
    /// The normalized request it continues.
    pub fingerprint: String,
    /// The state of the sessions searched when it was made.
    pub generation: String,
    /// How many hits earlier pages held.
    pub offset: u64,
}

impl Cursor {
    /// A cursor for the page starting at `offset`.
    pub fn new(
        instance: &str,
        scope: &str,
        fingerprint: &str,
        generation: &str,
        offset: u64,
    ) -> Self {
        Self {
            version: VERSION,
            instance: instance.into(),
            scope: scope.into(),
            fingerprint: fingerprint.into(),
            generation: generation.into(),
            offset,
        }
    }

    /// The cursor as text.
    pub fn encode(&self) -> String {
        base64url_encode(serde_json::to_string(self).unwrap_or_default().as_bytes())
    }

    /// Decodes `text` and checks it continues this request on this index: anything else is
    /// [`SearchError::InvalidCursor`], a state that moved on is [`SearchError::StaleCursor`].
    /// Returns the offset of the page it points at.
    pub fn check(
        text: &str,
        instance: &str,
        scope: &str,
        fingerprint: &str,
        generation: &str,
    ) -> Result<u64, SearchError> {
        let invalid = |reason: &str| SearchError::InvalidCursor {
            reason: reason.into(),
        };
        let bytes = base64url_decode(text).ok_or_else(|| invalid("it is not base64url"))?;
        let cursor: Cursor = serde_json::from_slice(&bytes)
            .map_err(|_| invalid("it is not a cursor this program made"))?;
        if cursor.version != VERSION {
            return Err(invalid("its version is not 1"));
        }
        if cursor.instance != instance {
            return Err(invalid(
                "it was made by another search index (the index was rebuilt or belongs to another store)",
            ));
        }
        if cursor.scope != scope {
            return Err(invalid("it belongs to the other kind of search"));
        }
        if cursor.fingerprint != fingerprint {
            return Err(invalid(
                "it belongs to another request (query, filters, limit, session or match mode)",
            ));
        }
        if cursor.offset > MAX_OFFSET {
            return Err(invalid("its offset is out of range"));
        }
        if cursor.generation != generation {
            return Err(SearchError::StaleCursor);
        }
        Ok(cursor.offset)
    }
}

/// What the pages of one search are bound to: the index, the kind of search, the normalized
/// request and the state of what it searched.
#[derive(Debug, Clone, Copy)]
pub struct Pages<'a> {
    /// The id of the index.
    pub instance: &'a str,
    /// The kind of search (`sessions`, `events`, `transcripts`).
    pub scope: &'a str,
    /// The normalized request.
    pub fingerprint: &'a str,
    /// The state of what it searched.
    pub generation: &'a str,
    /// The page size.
    pub limit: u64,
}

impl Pages<'_> {
    /// The offset of the page `cursor` points at; 0 without one.
    pub fn offset(&self, cursor: Option<&str>) -> Result<u64, SearchError> {
        cursor.map_or(Ok(0), |text| {
            Cursor::check(
                text,
                self.instance,
                self.scope,
                self.fingerprint,
                self.generation,
            )
        })
    }

    /// The page at `offset` of the `limit + 1` hits fetched from there, and the cursor of the
    /// next page when there is one.
    pub fn page<T>(&self, mut hits: Vec<T>, offset: u64) -> (Vec<T>, Option<String>) {
        let more = hits.len() as u64 > self.limit;
        hits.truncate(usize::try_from(self.limit).unwrap_or(usize::MAX));
        let next = more.then(|| {
            Cursor::new(
                self.instance,
                self.scope,
                self.fingerprint,
                self.generation,
                offset + self.limit,
            )
            .encode()
        });
        (hits, next)
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64url without padding.
pub fn base64url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            let index = (n >> (18 - 6 * i)) & 63;
            out.extend(ALPHABET.get(index as usize).map(|b| char::from(*b)));
        }
    }
    out
}

/// Decodes base64url without padding; `None` for anything else (padding, other characters,
/// an impossible length, non-zero trailing bits).
pub(crate) fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| {
        ALPHABET
            .iter()
            .position(|a| *a == c)
            .and_then(|p| u32::try_from(p).ok())
    };
    let bytes = text.as_bytes();
    if bytes.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= value(*c)? << (18 - 6 * i);
        }
        let produced = chunk.len() - 1;
        // Bits beyond the bytes produced must be zero, so each cursor has one spelling.
        if produced < 3 && n & (0x00FF_FFFF >> (8 * produced)) != 0 {
            return None;
        }
        for i in 0..produced {
            out.push(((n >> (16 - 8 * i)) & 0xFF) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_round_trips_and_refuses_other_spellings() {
        for len in 0u8..20 {
            let bytes: Vec<u8> = (0..len)
                .map(|i| i.wrapping_mul(37).wrapping_add(11))
                .collect();
            let text = base64url_encode(&bytes);
            assert!(!text.contains('='));
            assert_eq!(base64url_decode(&text), Some(bytes));
        }
        assert_eq!(base64url_encode(b"\xfb\xff"), "-_8");
        assert_eq!(base64url_decode("-_9"), None, "non-zero trailing bits");
        assert_eq!(base64url_decode("ab=="), None);
        assert_eq!(base64url_decode("a"), None);
        assert_eq!(base64url_decode("a+b/"), None);
    }

    #[test]
    fn a_cursor_checks_every_binding() {
        let text = Cursor::new("i", "sessions", "f", "g1", 20).encode();
        assert_eq!(
            Cursor::check(&text, "i", "sessions", "f", "g1").unwrap(),
            20
        );
        let code = |r: Result<u64, SearchError>| r.unwrap_err().code();
        // Each binding changed in turn, then a cursor that is not base64url.
        for ((text, instance, scope, fingerprint, generation), want) in [
            ((&*text, "j", "sessions", "f", "g1"), "invalid_cursor"),
            ((&*text, "i", "events", "f", "g1"), "invalid_cursor"),
            ((&*text, "i", "sessions", "x", "g1"), "invalid_cursor"),
            ((&*text, "i", "sessions", "f", "g2"), "stale_cursor"),
            (("!!", "i", "sessions", "f", "g1"), "invalid_cursor"),
        ] {
            let got = code(Cursor::check(
                text,
                instance,
                scope,
                fingerprint,
                generation,
            ));
            assert_eq!(got, want, "{instance} {scope} {fingerprint} {generation}");
        }
        let huge = base64url_encode(
            br#"{"version":1,"instance":"i","scope":"sessions","fingerprint":"f","generation":"g1","offset":1e100}"#,
        );
        assert_eq!(
            code(Cursor::check(&huge, "i", "sessions", "f", "g1")),
            "invalid_cursor"
        );
    }
}
