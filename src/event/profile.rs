//! Profiles: which events carry tokens, which mark a generation boundary, and under which keys.
//!
//! A profile is data, not a code fork, so other transcript formats can be indexed by the same
//! engine later. The index records the profile's fingerprint and is rebuilt if it changes.

use serde::{Deserialize, Serialize};

/// The event vocabulary the index understands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// A short name for messages (`"lingtai"`).
    pub name: String,
    /// The `type` of an event that carries token usage (`"llm_response"`); each counts one API
    /// call.
    pub token_event: String,
    /// The `type` of a generation boundary (`"psyche_molt"`, a frozen on-disk key).
    pub boundary_event: String,
    /// Top-level keys of the four token fields, in the order input, output, cached, thinking.
    /// `input_tokens` already includes cached tokens; they are never added twice.
    pub token_fields: [String; 4],
    /// The key of a boundary's generation number (the count *after* the molt).
    pub molt_count_field: String,
    /// The key of who started a boundary (`"agent"` when absent or not a non-empty string).
    pub initiator_field: String,
    /// The keys of a boundary's context size before and after it.
    pub before_tokens_field: String,
    /// See `before_tokens_field`.
    pub after_tokens_field: String,
    /// The `type` of a session header line; only the line at offset 0 can be a header.
    pub header_type: String,
    /// Whether events must carry `seq` 0, 1, 2, ... in file order (session logs): the first
    /// event that does not marks where the log stops being clean ([`FoldState::first_break`]).
    ///
    /// [`FoldState::first_break`]: super::FoldState::first_break
    #[serde(default)]
    pub contiguous_seqs: bool,
}

impl Profile {
    /// The lingtai kernel's vocabulary: `llm_response` and `psyche_molt`.
    pub fn lingtai() -> Profile {
        Profile {
            name: "lingtai".to_owned(),
            token_event: "llm_response".to_owned(),
            boundary_event: "psyche_molt".to_owned(),
            token_fields: [
                "input_tokens".to_owned(),
                "output_tokens".to_owned(),
                "cached_tokens".to_owned(),
                "thinking_tokens".to_owned(),
            ],
            molt_count_field: "molt_count".to_owned(),
            initiator_field: "initiator".to_owned(),
            before_tokens_field: "before_tokens".to_owned(),
            after_tokens_field: "after_tokens".to_owned(),
            header_type: "session".to_owned(),
            contiguous_seqs: false,
        }
    }

    /// The vocabulary of dsh-style session logs: a header line, then events with contiguous
    /// seqs (no token events or boundaries).
    pub fn session() -> Profile {
        Profile {
            name: "session".to_owned(),
            contiguous_seqs: true,
            ..Profile::lingtai()
        }
    }

    /// A checksum of the whole profile, stored in the index so a change forces a rebuild.
    pub fn fingerprint(&self) -> u32 {
        // postcard of a plain struct of strings cannot fail; an empty buffer would still
        // fingerprint deterministically.
        let bytes = postcard::to_allocvec(self).unwrap_or_default();
        crc32fast::hash(&bytes)
    }
}

impl Default for Profile {
    fn default() -> Profile {
        Profile::lingtai()
    }
}
