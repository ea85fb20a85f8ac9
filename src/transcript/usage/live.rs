//! The live view's answer (`agentlog usage --watch`): the active billing block, today, and
//! the latest session, each from the run-level snapshot, so a refresh reads only new bytes.

use std::path::PathBuf;

use jiff::Timestamp;
use serde::Serialize;

use super::{GroupBy, UsageOptions, UsageReport, UsageRow, usage};

/// What the live view shows. In JSON: `block`, `today`, `session` (each a usage row or
/// `null`), `at` (when it was made, RFC 3339).
#[derive(Clone, Debug, Serialize)]
pub struct LiveView {
    /// When it was made.
    pub at: String,
    /// The active billing block, if any.
    pub block: Option<UsageRow>,
    /// Today in the options' zone, if anything was used today.
    pub today: Option<UsageRow>,
    /// The session with the latest activity.
    pub session: Option<UsageRow>,
}

/// The live view of the transcripts under `paths` (as [`usage`] finds them).
pub fn live(paths: &[PathBuf], options: &UsageOptions) -> LiveView {
    live_with(options, &|o| usage(paths, o, &|_, _| {}))
}

/// The live view of what `report` answers for the options it is given (one call per
/// grouping): [`live`] passes [`usage`]; the CLI passes the usage with the archive read too.
pub fn live_with(
    options: &UsageOptions,
    report: &dyn Fn(&UsageOptions) -> UsageReport,
) -> LiveView {
    let now = options.now.unwrap_or_else(Timestamp::now);
    let with = |by: GroupBy| {
        let o = UsageOptions {
            by,
            now: Some(now),
            ..options.clone()
        };
        report(&o).rows
    };
    let today = options.timezone.to_datetime(now).date();
    let block = with(GroupBy::Block)
        .into_iter()
        .find(|r| r.block.as_ref().is_some_and(|b| b.is_active));
    let today = with(GroupBy::Day)
        .into_iter()
        .find(|r| r.key == today.to_string());
    let session = with(GroupBy::Session)
        .into_iter()
        .filter(|r| r.last_activity.is_some())
        .max_by_key(|r| r.last_activity);
    LiveView {
        at: now.to_string(),
        block,
        today,
        session,
    }
}
