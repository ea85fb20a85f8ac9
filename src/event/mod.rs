//! Reading event lines: fast field extraction, the coercion rule, timestamps, profiles, and the
//! fold that turns lines into the facts the index stores.
//!
//! Nothing here touches files; the `log` layer hands us lines, the `index` layer stores what we
//! compute.

pub(crate) mod coerce;
mod extract;
mod fold;
mod profile;
mod skip;
mod time;

pub use coerce::{MAX_TOKEN_VALUE, TokenValue};
pub use extract::{
    EventFields, EventKind, Extractor, Field, LineMemo, LineProblem, LineValidator, MAX_NESTING,
    MoltCount,
};
pub use fold::{
    Boundary, Diagnostics, FoldState, Folded, FoldedEvent, Folder, GenerationStart,
    INVALID_OFFSETS_KEPT, Totals,
};
pub use profile::Profile;
pub use time::Timestamp;
